// Create a baseline from a CSV of healthy data, univariate (timestamp,value) or multivariate
// (timestamp then one column per channel): POST /v1/baseline fine-tunes the machine's predictor
// (each channel's, for a multivariate machine), which takes seconds, so the page shows the time running.
import { DEFAULT_SENSITIVITY, MACHINE_ID_BODY, MACHINE_ID_MAX_LENGTH, MAX_LABEL_LENGTH } from '@adp/domain';
import { apiRequest, describeError } from '../api.js';
import type { BaselineResponse } from '../api-types.js';
import { BASELINE_LIMITS, describeProblem, inferGranularity, parseSeriesCsv } from '../csv.js';
import { el, errorBox, formatNumber } from '../dom.js';
import { looksMultivariate, parseMultivariateCsv } from '../multivariate-csv.js';

export function renderBaseline(main: HTMLElement): void {
  const machine = el('input', { type: 'text', name: 'machine_id', required: true, pattern: MACHINE_ID_BODY, maxlength: MACHINE_ID_MAX_LENGTH, placeholder: 'pump-18' });
  const label = el('input', { type: 'text', name: 'label', maxlength: MAX_LABEL_LENGTH, placeholder: 'optional' });
  const sensitivity = el('input', { type: 'number', name: 'sensitivity', min: 0, max: 99, step: 1, placeholder: String(DEFAULT_SENSITIVITY) });
  const file = el('input', { type: 'file', name: 'file', accept: '.csv,.txt,text/csv', required: true });
  const button = el('button', { type: 'submit' }, 'Create baseline');
  const status = el('div', { 'data-testid': 'status' });
  const output = el('div', { 'data-testid': 'baseline-result' });

  const form = el(
    'form',
    { class: 'inline', 'data-testid': 'baseline-form' },
    el('label', {}, 'Machine id', machine),
    el('label', {}, 'Label', label),
    el('label', {}, 'Sensitivity', sensitivity),
    el('label', {}, 'CSV of healthy data', file),
    button,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void run();
  });

  async function run(): Promise<void> {
    output.replaceChildren();
    const chosen = file.files?.[0];
    if (!chosen) return;
    const text = await chosen.text();
    const parsed = looksMultivariate(text) ? parseMultivariateCsv(text, BASELINE_LIMITS) : parseSeriesCsv(text, BASELINE_LIMITS);
    if (!parsed.ok) {
      status.replaceChildren(errorBox(`${chosen.name}: ${describeProblem(parsed.problem)}`));
      return;
    }
    const { granularity, customInterval } = inferGranularity(parsed.series.timestampsMs);
    const channels = 'channels' in parsed.series ? parsed.series.channels : null;
    const request = {
      machine_id: machine.value.trim(),
      series: parsed.series.points,
      // The baseline takes no custom interval; other steps are stored as 'none' (the timestamps still go along).
      granularity: customInterval === 1 ? granularity : 'none',
      ...(label.value.trim() === '' ? {} : { label: label.value.trim() }),
      ...(sensitivity.value === '' ? {} : { sensitivity: Number(sensitivity.value) }),
    };
    button.disabled = true;
    const started = performance.now();
    const elapsed = el('span', {}, '0 s');
    status.replaceChildren(
      el('p', { class: 'progress', 'data-testid': 'baseline-progress' }, el('progress', {}), `Learning ${request.machine_id}'s normal behaviour from ${parsed.series.points.length.toLocaleString('en-US')} points${channels === null ? '' : ` of ${channels.length} channels`}… `, elapsed, ' (up to 30 s)'),
    );
    const timer = setInterval(() => {
      elapsed.textContent = `${Math.round((performance.now() - started) / 1000)} s`;
    }, 250);
    try {
      const baseline = await apiRequest<BaselineResponse>('POST', '/v1/baseline', request);
      status.replaceChildren();
      output.replaceChildren(baselineCard(baseline));
    } catch (error) {
      status.replaceChildren(errorBox(describeError(error)));
    } finally {
      clearInterval(timer);
      button.disabled = false;
    }
  }

  main.replaceChildren(
    el(
      'section',
      { class: 'card' },
      el('h2', {}, 'Create a baseline from a CSV'),
      el('p', { class: 'notice' }, '100 to 8,640 rows of healthy data: timestamp,value or one value per line; or, for a multivariate machine, a header timestamp,<channel>,<channel>,… and one column per channel (up to 16). A machine that has a baseline gets its own fine-tuned model; creating it again replaces it.'),
      form,
      status,
    ),
    output,
  );
}

/** A baseline's statistics, as the machine page shows them too. */
export function baselineCard(baseline: BaselineResponse): HTMLElement {
  const stat = (name: string, value: string): HTMLElement => el('div', {}, el('dt', {}, name), el('dd', {}, value));
  return el(
    'section',
    { class: 'card', 'data-testid': 'baseline-stats' },
    el('h2', {}, `Baseline of `, el('a', { href: `#/machines/${encodeURIComponent(baseline.machine_id)}` }, baseline.machine_id), baseline.label ? ` (${baseline.label})` : ''),
    el(
      'dl',
      { class: 'stats' },
      stat('series length', formatNumber(baseline.stats.series_length)),
      stat('windows', formatNumber(baseline.stats.num_windows)),
      stat('energy mean', formatNumber(baseline.stats.energy_mean, 6)),
      stat('energy std', formatNumber(baseline.stats.energy_std, 6)),
      stat('energy p99', formatNumber(baseline.stats.energy_p99, 6)),
      stat('fine-tuning', baseline.finetune_stats.status),
      stat('final loss', formatNumber(baseline.finetune_stats.final_loss, 6)),
      stat('fine-tuning time', `${formatNumber(baseline.finetune_stats.duration_seconds, 2)} s`),
      ...(baseline.channels ? [stat('channels', baseline.channels.map((channel) => channel.channel).join(', '))] : []),
      stat('granularity', baseline.granularity ?? '—'),
      stat('sensitivity', baseline.sensitivity === null ? 'default' : String(baseline.sensitivity)),
      stat('updated', baseline.updated_at),
    ),
  );
}
