// The machine list (GET /v1/machines?include=telemetry) and one machine's page: its status, its
// episodes and their alerts, a chart of its stored streaming results over a chosen time range, its
// feedback and its baseline's statistics.
import { ApiError, apiRequest, describeError } from '../api.js';
import type { BaselineResponse, MachineStatusResponse, MachinesResponse, MachineSummary, ResultRowBody, ResultsResponse } from '../api-types.js';
import { readTimestamp } from '../csv.js';
import { append, el, errorBox, formatNumber } from '../dom.js';
import { renderResultPanel } from '../result-panel.js';
import { viewFromResults } from '../results.js';
import { baselineCard } from './baseline.js';
import { machineAlertCards } from './episodes.js';

/** Most results one chart loads (10 pages of the route's largest page); the range narrows it. */
const MAX_RESULTS = 100_000;
const PAGE_SIZE = 10_000;

export async function renderMachines(main: HTMLElement): Promise<void> {
  const card = el('section', { class: 'card' }, el('h2', {}, 'Machines'), el('p', { class: 'notice' }, 'Loading…'));
  main.replaceChildren(card);
  try {
    const { machines } = await apiRequest<MachinesResponse>('GET', '/v1/machines?include=telemetry');
    card.replaceChildren(
      el('h2', {}, 'Machines'),
      machines.length === 0
        ? el('p', { class: 'notice' }, 'No machines yet: create a baseline, or send telemetry (POST /v1/telemetry).')
        : el(
            'table',
            { 'data-testid': 'machines' },
            el('thead', {}, el('tr', {}, ...['machine', 'label', 'baseline', 'windows', 'stored points', 'anomalies', 'last point', 'regimes'].map((name) => el('th', {}, name)))),
            el('tbody', {}, ...machines.map(machineRow)),
          ),
    );
  } catch (error) {
    card.replaceChildren(el('h2', {}, 'Machines'), errorBox(describeError(error)));
  }
}

function machineRow(machine: MachineSummary): HTMLElement {
  const telemetry = machine.telemetry;
  return el(
    'tr',
    { 'data-machine-id': machine.machine_id },
    el('td', {}, el('a', { href: `#/machines/${encodeURIComponent(machine.machine_id)}` }, machine.machine_id)),
    el('td', {}, machine.label ?? ''),
    el('td', {}, machine.baseline_created_at === null ? 'none' : `active since ${machine.baseline_created_at.slice(0, 19).replace('T', ' ')}`),
    el('td', { class: 'num' }, formatNumber(machine.num_windows)),
    el('td', { class: 'num' }, formatNumber(telemetry?.points)),
    el('td', { class: 'num' }, formatNumber(telemetry?.anomalies)),
    el('td', {}, telemetry?.last_point_at ?? '—'),
    el('td', {}, telemetry ? regimeSummary(telemetry.regime_counts) : '—'),
  );
}

function regimeSummary(counts: Readonly<Record<string, number>>): string {
  const present = Object.entries(counts).filter(([, count]) => count > 0);
  return present.length === 0 ? '—' : present.map(([regime, count]) => `${regime} ${count.toLocaleString('en-US')}`).join(', ');
}

export async function renderMachine(main: HTMLElement, machineId: string): Promise<void> {
  const path = encodeURIComponent(machineId);
  const statusCard = el('section', { class: 'card', 'data-testid': 'machine-status' }, el('h2', {}, machineId), el('p', { class: 'notice' }, 'Loading…'));
  const baselineSlot = el('div', {});
  // Date and time pickers, read as UTC (the stored timestamps are); empty: no bound.
  const from = el('input', { type: 'datetime-local', name: 'from', step: 1 });
  const to = el('input', { type: 'datetime-local', name: 'to', step: 1 });
  const load = el('button', { type: 'submit' }, 'Load results');
  const resultsStatus = el('div', {});
  const output = el('div', { 'data-testid': 'machine-results' });
  const resultsNote = el('p', { class: 'notice', 'data-testid': 'results-note' }, 'The per-point results of its telemetry, judged by the workers.');
  const rangeForm = el('form', { class: 'inline' }, el('label', {}, 'From (UTC)', from), el('label', {}, 'To (UTC, exclusive)', to), load);
  rangeForm.addEventListener('submit', (event) => {
    event.preventDefault();
    void loadResults();
  });
  const alertCards = machineAlertCards(machineId);
  main.replaceChildren(
    statusCard,
    alertCards.episodes,
    el('section', { class: 'card' }, el('h2', {}, 'Stored results'), resultsNote, rangeForm, resultsStatus, output),
    alertCards.feedback,
    baselineSlot,
  );

  async function loadResults(): Promise<void> {
    const range: string[] = [];
    for (const [name, input] of [['from', from], ['to', to]] as const) {
      const text = input.value.trim();
      if (text === '') continue;
      const ms = readTimestamp(/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?$/.test(text) ? `${text}Z` : text);
      if (ms === null) {
        resultsStatus.replaceChildren(errorBox(`"${text}" is not a date and time.`));
        return;
      }
      range.push(`${name}=${encodeURIComponent(new Date(ms).toISOString())}`);
    }
    load.disabled = true;
    output.replaceChildren();
    resultsStatus.replaceChildren(el('p', { class: 'progress' }, el('progress', {}), 'Loading results…'));
    try {
      const rows: ResultRowBody[] = [];
      let cursor: string | null = null;
      do {
        const query = [...range, `limit=${PAGE_SIZE}`, ...(cursor === null ? [] : [`cursor=${encodeURIComponent(cursor)}`])].join('&');
        const page: ResultsResponse = await apiRequest<ResultsResponse>('GET', `/v1/machines/${path}/results?${query}`);
        rows.push(...page.results);
        cursor = page.next_cursor;
      } while (cursor !== null && rows.length < MAX_RESULTS);
      resultsStatus.replaceChildren();
      if (cursor !== null) {
        append(resultsStatus, el('p', { class: 'notice' }, `The first ${rows.length.toLocaleString('en-US')} results are shown; narrow the range for later ones.`));
      }
      if (rows.length === 0) {
        output.replaceChildren(el('p', { class: 'notice' }, 'No stored results in this range.'));
        return;
      }
      const view = viewFromResults(rows);
      const last = rows[rows.length - 1];
      const lastAnomaly = view.anomalyIndices.length > 0 ? rows[view.anomalyIndices[view.anomalyIndices.length - 1] ?? 0]?.timestamp : null;
      renderResultPanel(
        output,
        view,
        `${rows.length.toLocaleString('en-US')} points from ${rows[0]?.timestamp} to ${last?.timestamp}, ${view.anomalyIndices.length.toLocaleString('en-US')} ${view.anomalyIndices.length === 1 ? 'anomaly' : 'anomalies'}` +
          `; regime at the last point: ${last?.regime ?? '—'}; last anomaly: ${lastAnomaly ?? 'none'}.`,
        // Feedback on one flagged point: later points like it stop raising this machine's alerts.
        async (row) => {
          const at = Date.parse(row.timestamp ?? '');
          await apiRequest('POST', `/v1/machines/${path}/feedback`, {
            from: new Date(at).toISOString(),
            to: new Date(at + 1).toISOString(),
            label: 'not_anomaly',
          }).catch((error: unknown) => {
            throw new Error(describeError(error));
          });
          await alertCards.reloadFeedback();
          return 'Marked: like points no longer alert.';
        },
      );
    } catch (error) {
      resultsStatus.replaceChildren(errorBox(describeError(error)));
    } finally {
      load.disabled = false;
    }
  }

  try {
    const status = await apiRequest<MachineStatusResponse>('GET', `/v1/status/${path}`);
    statusCard.replaceChildren(el('h2', {}, machineId, status.label ? ` (${status.label})` : ''), statusList(status));
    if (status.channels) {
      // A multi-channel machine: its stored rows are the machine's score against the joint model of
      // its channels; each channel's own rows are on its own page.
      append(
        statusCard,
        el(
          'p',
          { 'data-testid': 'machine-channels' },
          'Channels: ',
          ...status.channels.flatMap((channel, index) => [
            ...(index > 0 ? [', '] : []),
            el('a', { href: `#/machines/${encodeURIComponent(`${machineId}:${channel}`)}` }, channel),
          ]),
          '.',
        ),
      );
      if (status.model_in_use === 'machine-model') {
        resultsNote.replaceChildren(
          "The machine's score per point (its channels' distance from their joint healthy state; the band's top is the threshold), judged by the workers from its telemetry. Anomalies are points over the threshold.",
        );
      }
    }
    if (status.baseline_present) {
      try {
        baselineSlot.replaceChildren(baselineCard(await apiRequest<BaselineResponse>('GET', `/v1/baseline?machine_id=${path}`)));
      } catch (error) {
        if (!(error instanceof ApiError && error.code === 'BaselineNotFound')) baselineSlot.replaceChildren(errorBox(describeError(error)));
      }
    }
  } catch (error) {
    statusCard.replaceChildren(el('h2', {}, machineId), errorBox(describeError(error)));
    return;
  }
  await loadResults();
}

function statusList(status: MachineStatusResponse): HTMLElement {
  const stat = (name: string, value: string): HTMLElement => el('div', {}, el('dt', {}, name), el('dd', {}, value));
  return el(
    'dl',
    { class: 'stats' },
    stat('baseline', status.baseline_present ? 'active' : 'none'),
    stat('model in use', status.model_in_use),
    stat('first seen', status.first_seen_at),
    stat('detections since baseline', formatNumber(status.detections_since)),
    stat('points since baseline', formatNumber(status.points_since)),
    stat('last detection', status.last_detection_at ?? '—'),
    stat('recent regimes', regimeSummary(status.recent.regime_counts)),
    stat('stored points', formatNumber(status.telemetry?.points)),
    stat('stored anomalies', formatNumber(status.telemetry?.anomalies)),
  );
}
