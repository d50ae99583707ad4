// Detect on a CSV: the file is read and checked in the browser, then sent to the route the mode
// names; the answer becomes a chart, a table of flagged points and two downloads.
import { DEFAULT_SENSITIVITY } from '@adp/domain';
import { apiRequest, describeError } from '../api.js';
import type {
  ChangePointDetectResponse,
  DetectResponse,
  EntireDetectResponse,
  JobBody,
  JobResultRowBody,
  JobResultsResponse,
  MachineVerdictBody,
  MultivariateDetectResponse,
} from '../api-types.js';
import { looksMultivariate, parseMultivariateCsv } from '../multivariate-csv.js';
import { DETECT_LIMITS, JOB_LIMITS, describeProblem, inferGranularity, parseSeriesCsv, type ParsedSeries } from '../csv.js';
import { download, el, errorBox } from '../dom.js';
import { renderResultPanel } from '../result-panel.js';
import { resultsToCsv, resultsToJson, viewFromChangePoints, viewFromDetection, viewFromJobResults, viewFromMachineVerdict, type DetectMode, type ResultView } from '../results.js';

/** The synchronous routes' limit; an entire-series detection of a longer file goes as a job. */
const SYNCHRONOUS_MAX_POINTS = DETECT_LIMITS.maxPoints;
/** How often a job's progress is asked, ms. */
const JOB_POLL_MS = 500;

const MODES: readonly { value: DetectMode; label: string }[] = [
  { value: 'entire', label: 'Entire series (vendor entire/detect)' },
  { value: 'streaming', label: 'Per point with the learned model (POST /v1/detect)' },
  { value: 'changepoint', label: 'Changepoints (vendor changepoint/detect)' },
];

export function renderDetect(main: HTMLElement): void {
  const file = el('input', { type: 'file', name: 'file', accept: '.csv,.txt,text/csv', required: true });
  const mode = el('select', { name: 'mode' }, ...MODES.map((m) => el('option', { value: m.value }, m.label)));
  const sensitivity = el('input', { type: 'number', name: 'sensitivity', min: 0, max: 99, step: 1, value: DEFAULT_SENSITIVITY });
  const machine = el('input', { type: 'text', name: 'machine_id', placeholder: 'optional: use its baseline', disabled: true });
  const button = el('button', { type: 'submit' }, 'Detect');
  const status = el('div', { 'data-testid': 'status' });
  const output = el('div', { 'data-testid': 'detect-results' });
  const downloads = el('p', {});
  // Shown once there are results: an empty card under the form reads as a failure.
  const resultsCard = el('section', { class: 'card', hidden: true }, output, downloads);

  mode.addEventListener('change', () => {
    sensitivity.disabled = mode.value === 'changepoint';
    machine.disabled = mode.value !== 'streaming';
  });

  const form = el(
    'form',
    { class: 'inline', 'data-testid': 'detect-form' },
    el('label', {}, 'CSV file (timestamp,value; one value per line; or timestamp,<channel>,… for a machine)', file),
    el('label', {}, 'Mode', mode),
    el('label', {}, 'Sensitivity (0–99)', sensitivity),
    el('label', {}, 'Machine id', machine),
    button,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void run();
  });

  async function run(): Promise<void> {
    output.replaceChildren();
    downloads.replaceChildren();
    const chosen = file.files?.[0];
    if (!chosen) return;
    const selected = mode.value as DetectMode;
    const text = await chosen.text();
    if (looksMultivariate(text)) {
      await runMachine(chosen.name, text, selected);
      return;
    }
    const parsed = parseSeriesCsv(text, selected === 'entire' ? JOB_LIMITS : DETECT_LIMITS);
    if (!parsed.ok) {
      status.replaceChildren(errorBox(`${chosen.name}: ${describeProblem(parsed.problem)}`));
      return;
    }
    const request = buildRequest(selected, parsed.series, Number(sensitivity.value), machine.value.trim());
    button.disabled = true;
    status.replaceChildren(el('p', { class: 'progress' }, el('progress', {}), `Detecting on ${parsed.series.points.length.toLocaleString('en-US')} points…`));
    try {
      const asJob = selected === 'entire' && parsed.series.points.length > SYNCHRONOUS_MAX_POINTS;
      const { view, unknownMachine } = asJob ? { view: await detectAsJob(request, status), unknownMachine: null } : await detect(selected, parsed.series, request);
      status.replaceChildren();
      if (unknownMachine !== null) {
        // A mistyped id must not pass for the machine's own verdict.
        status.replaceChildren(
          el(
            'p',
            { class: 'notice', 'data-testid': 'no-baseline' },
            `Machine '${unknownMachine}' has no baseline: the series was judged by the generic model. Create one on the Baseline page, or check the id.`,
          ),
        );
      }
      resultsCard.hidden = false;
      const flagged =
        selected === 'changepoint' ? plural(view.changePointIndices.length, 'changepoint') : plural(view.anomalyIndices.length, 'anomaly', 'anomalies');
      renderResultPanel(output, view, `${chosen.name}: ${view.rows.length.toLocaleString('en-US')} points, ${flagged}.`);
      const base = chosen.name.replace(/\.[^.]*$/, '') || 'series';
      const csvButton = el('button', { type: 'button', class: 'secondary', 'data-testid': 'download-csv' }, 'Download CSV');
      const jsonButton = el('button', { type: 'button', class: 'secondary', 'data-testid': 'download-json' }, 'Download JSON');
      csvButton.addEventListener('click', () => download(`${base}-${selected}-results.csv`, resultsToCsv(view), 'text/csv'));
      const described = { mode: selected, file: chosen.name, ...request, series: undefined };
      jsonButton.addEventListener('click', () => download(`${base}-${selected}-results.json`, resultsToJson(view, described), 'application/json'));
      downloads.replaceChildren(csvButton, ' ', jsonButton);
    } catch (error) {
      status.replaceChildren(errorBox(describeError(error)));
    } finally {
      button.disabled = false;
    }
  }

  /**
   * A multichannel file (a header timestamp,<channel>,…): judged per point against the machine's
   * baseline (POST /v1/detect with channels), charted as the machine's score with its episodes.
   */
  async function runMachine(name: string, text: string, selected: DetectMode): Promise<void> {
    const machineId = machine.value.trim();
    if (selected !== 'streaming' || machineId === '') {
      status.replaceChildren(
        errorBox(`${name} has several channels: choose "Per point with the learned model" and give the machine's id, to judge it against the machine's multichannel baseline.`),
      );
      return;
    }
    const parsed = parseMultivariateCsv(text, JOB_LIMITS);
    if (!parsed.ok) {
      status.replaceChildren(errorBox(`${name}: ${describeProblem(parsed.problem)}`));
      return;
    }
    const { granularity, customInterval } = inferGranularity(parsed.series.timestampsMs);
    const request = {
      machine_id: machineId,
      series: parsed.series.points,
      granularity,
      ...(customInterval === 1 ? {} : { customInterval }),
      ...(Number.isInteger(Number(sensitivity.value)) ? { sensitivity: Number(sensitivity.value) } : {}),
    };
    // A file over the synchronous limit goes as a detection job, judged the same way.
    const asJob = parsed.series.points.length > SYNCHRONOUS_MAX_POINTS;
    button.disabled = true;
    status.replaceChildren(el('p', { class: 'progress' }, el('progress', {}), `Detecting on ${parsed.series.points.length.toLocaleString('en-US')} points of ${parsed.series.channels.length} channels…`));
    try {
      const answer = asJob ? { machine: await machineVerdictAsJob(request, status), regimes: [] } : await apiRequest<MultivariateDetectResponse>('POST', '/v1/detect', request);
      if (answer.machine === null || answer.machine === undefined) {
        status.replaceChildren(
          el(
            'p',
            { class: 'notice', 'data-testid': 'no-baseline' },
            `Machine '${machineId}' has no multichannel baseline: each channel was judged alone. Create one on the Baseline page from a CSV of its healthy channels.`,
          ),
        );
        return;
      }
      status.replaceChildren();
      const view = viewFromMachineVerdict(parsed.series.points.map((point) => point.timestamp), answer.machine, answer.regimes);
      resultsCard.hidden = false;
      renderResultPanel(
        output,
        view,
        `${name}: ${view.rows.length.toLocaleString('en-US')} points of ${parsed.series.channels.length} channels, the machine's score against its joint model; ` +
          `${plural(view.anomalyIndices.length, 'point')} over the threshold, ${plural(answer.machine.episodes.length, 'episode')}.`,
      );
      output.append(episodesTable(answer.machine));
    } catch (error) {
      status.replaceChildren(errorBox(describeError(error)));
    } finally {
      button.disabled = false;
    }
  }

  main.replaceChildren(
    el(
      'section',
      { class: 'card' },
      el('h2', {}, 'Detect on a CSV'),
      el(
        'p',
        { class: 'notice' },
        '12 to 8,640 rows; entire-series detection, and a machine\'s multichannel file judged against its baseline, take up to 1,000,000 points as a detection job, with its progress shown. Timestamps (ISO 8601, ascending) set the granularity; without them the points are taken as evenly spaced.',
      ),
      form,
      status,
    ),
    resultsCard,
  );
}

/** The machine's episodes: when, how severe, and the channels that drove each. */
function episodesTable(machine: MachineVerdictBody): HTMLElement {
  return el(
    'table',
    { 'data-testid': 'episodes' },
    el('thead', {}, el('tr', {}, ...['start', 'end', 'severity', 'channels', ''].map((name) => el('th', {}, name)))),
    el(
      'tbody',
      {},
      ...machine.episodes.map((episode) =>
        el(
          'tr',
          { 'data-start': episode.start },
          el('td', {}, episode.start_timestamp ?? String(episode.start)),
          el('td', {}, episode.end_timestamp ?? String(episode.end)),
          el('td', { class: 'num' }, episode.severity.toFixed(2)),
          el('td', {}, episode.channels.map(({ channel, share }) => `${channel} ${Math.round(share * 100)} %`).join(', ')),
          el('td', {}, episode.closed ? '' : 'under way'),
        ),
      ),
    ),
  );
}

function buildRequest(mode: DetectMode, series: ParsedSeries, sensitivity: number, machineId: string): Record<string, unknown> {
  const { granularity, customInterval } = inferGranularity(series.timestampsMs);
  const common = { series: series.points, granularity, ...(customInterval === 1 ? {} : { customInterval }) };
  if (mode === 'changepoint') {
    // The vendor's default window (10) must stay under half the series.
    return { ...common, stableTrendWindow: Math.min(10, Math.floor((series.points.length - 1) / 2)) };
  }
  const withSensitivity = { ...common, ...(Number.isInteger(sensitivity) ? { sensitivity } : {}) };
  return mode === 'streaming' ? { ...withSensitivity, ...(machineId === '' ? {} : { machine_id: machineId }), include_energy: true } : withSensitivity;
}

/** The answer as a view; `unknownMachine`: the machine id the request named but the service has no baseline for. */
async function detect(mode: DetectMode, series: ParsedSeries, request: Record<string, unknown>): Promise<{ view: ResultView; unknownMachine: string | null }> {
  switch (mode) {
    case 'entire':
      return { view: viewFromDetection(series.points, await apiRequest<EntireDetectResponse>('POST', '/anomalydetector/v1.1/timeseries/entire/detect', request)), unknownMachine: null };
    case 'streaming': {
      const answer = await apiRequest<DetectResponse>('POST', '/v1/detect', request);
      const named = typeof request['machine_id'] === 'string' ? request['machine_id'] : null;
      return { view: viewFromDetection(series.points, answer), unknownMachine: named !== null && answer.baseline_id === null ? named : null };
    }
    case 'changepoint':
      return { view: viewFromChangePoints(series.points, await apiRequest<ChangePointDetectResponse>('POST', '/anomalydetector/v1.1/timeseries/changepoint/detect', request)), unknownMachine: null };
  }
}

/**
 * Submits a detection job (POST /v1/jobs) and follows it to its end, its progress shown in
 * `status`; a failed or cancelled job throws with its reason.
 */
async function runJob(request: Record<string, unknown>, status: HTMLElement): Promise<{ job: JobBody; text: HTMLElement }> {
  let job = await apiRequest<JobBody>('POST', '/v1/jobs', request);
  const bar = el('progress', { max: job.points_total, value: 0, 'data-testid': 'job-progress' });
  const text = el('span', {});
  status.replaceChildren(el('p', { class: 'progress' }, bar, text));
  for (;;) {
    bar.value = job.points_done;
    text.textContent = `Job ${job.job_id} ${job.status}: ${job.points_done.toLocaleString('en-US')} of ${job.points_total.toLocaleString('en-US')} points judged`;
    if (job.status === 'done') return { job, text };
    if (job.status === 'failed' || job.status === 'cancelled') {
      throw new Error(`Job ${job.job_id} ${job.status}${job.failure ? `: ${job.failure.message} (${job.failure.code})` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, JOB_POLL_MS));
    job = await apiRequest<JobBody>('GET', `/v1/jobs/${job.job_id}`);
  }
}

/** Every page of a finished job's results (`filter`: a query such as `series_index=3&`), and their episodes. */
async function jobResults(job: JobBody, text: HTMLElement, total: number, filter = ''): Promise<{ rows: JobResultRowBody[]; episodes: JobResultsResponse['episodes'] }> {
  const rows: JobResultRowBody[] = [];
  const episodes = new Map<string, JobResultsResponse['episodes'][number]>();
  let cursor: string | null = null;
  do {
    const page: JobResultsResponse = await apiRequest<JobResultsResponse>(
      'GET',
      `/v1/jobs/${job.job_id}/results?${filter}limit=10000${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
    );
    rows.push(...page.results);
    for (const episode of page.episodes) episodes.set(`${episode.series_index}/${episode.first_point}`, episode);
    cursor = page.next_cursor;
    text.textContent = `Job ${job.job_id} done: reading results, ${rows.length.toLocaleString('en-US')} of ${total.toLocaleString('en-US')}`;
  } while (cursor !== null);
  return { rows, episodes: [...episodes.values()] };
}

/**
 * Entire-series detection of a long file as a detection job: the series is judged on the service
 * as one series, and the results are read page by page once it is done.
 */
async function detectAsJob(request: Record<string, unknown>, status: HTMLElement): Promise<ResultView> {
  const { job, text } = await runJob(request, status);
  return viewFromJobResults((await jobResults(job, text, job.points_total)).rows);
}

/**
 * A long multichannel file as a detection job: its machine-verdict series (the readings judged
 * against the machine's joint model) read back in the shape of POST /v1/detect's `machine`; null
 * when the machine has no multichannel baseline (the job then judged each channel alone).
 */
async function machineVerdictAsJob(request: Record<string, unknown>, status: HTMLElement): Promise<MachineVerdictBody | null> {
  const { job, text } = await runJob(request, status);
  const verdict = job.series.find((series) => series.kind === 'machine');
  if (verdict === undefined) return null;
  const { rows, episodes } = await jobResults(job, text, verdict.points, `series_index=${verdict.series_index}&`);
  const score = rows.map((row) => row.value);
  return {
    model: 'gaussian-drift',
    sensitivity: verdict.sensitivity,
    threshold: rows[0]?.upper_margin ?? 0,
    score,
    is_anomaly: rows.map((row) => row.is_anomaly),
    severity: rows.map((row) => row.severity),
    contributions: {},
    episodes: episodes.map((episode) => {
      let peak = episode.first_point;
      for (let index = episode.first_point; index <= episode.last_point; index++) if ((score[index] ?? 0) > (score[peak] ?? 0)) peak = index;
      return {
        start: episode.first_point,
        end: episode.last_point,
        start_timestamp: episode.first_timestamp,
        end_timestamp: episode.last_timestamp,
        peak,
        peak_score: score[peak] ?? 0,
        severity: episode.peak_severity,
        channels: episode.channels ?? [],
        closed: episode.closed,
      };
    }),
  };
}

function plural(count: number, one: string, many = `${one}s`): string {
  return `${count.toLocaleString('en-US')} ${count === 1 ? one : many}`;
}
