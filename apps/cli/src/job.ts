// `--server URL --key KEY`: the file goes to the service as a detection job (POST /v1/jobs,
// docs/jobs.md), which judges series of any length up to its JOBS_MAX_POINTS as one series with
// entire-series detection; the CLI shows the job's progress on stderr and writes the results in
// the same JSON lines as local entire mode (each timestamp as the file wrote it).
import type { DetectCommand } from './args.js';
import type { CsvSeries } from './csv.js';
import type { PointRecord } from './detect.js';
import { CliError } from './errors.js';
import type { JobBody, JobResultsResponse } from '@adp/api-types';

/** What the job mode needs from the outside world: HTTP, a clock to wait on, and stderr. */
export interface JobIo {
  readonly fetch: typeof fetch;
  readonly sleep: (ms: number) => Promise<void>;
  readonly writeErr: (text: string) => void;
  /** Redraw the progress bar in place (a terminal) rather than a line per change. */
  readonly progressInPlace: boolean;
}

/** How often the job's status is asked, ms. */
const POLL_MS = 250;
/** Rows a results page asks for (the API's largest page). */
const PAGE_ROWS = 10_000;
const BAR_WIDTH = 30;

/** The parts of the API's job answers (@adp/api-types, from its OpenAPI document) the CLI reads. */
type JobStatusBody = Pick<JobBody, 'job_id' | 'status' | 'points_done' | 'points_total' | 'failure'>;
type ResultsPage = Pick<JobResultsResponse, 'results' | 'next_cursor'>;

export function progressBar(done: number, total: number): string {
  const share = total === 0 ? 1 : done / total;
  const filled = Math.round(share * BAR_WIDTH);
  return `[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}] ${Math.floor(share * 100)}% ${done}/${total} points`;
}

async function call<T>(io: JobIo, url: string, init: RequestInit, what: string): Promise<T> {
  let response: Response;
  try {
    response = await io.fetch(url, init);
  } catch (err) {
    throw new CliError('ServerUnreachable', `${what}: cannot reach ${url}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new CliError('ServerUnreachable', `${what}: ${url} answered ${response.status} without JSON`);
  }
  if (!response.ok) {
    const error = (body as { error?: { code?: string; message?: string } }).error;
    throw new CliError('JobRefused', `${what}: the service answered ${response.status} ${error?.code ?? ''}: ${error?.message ?? text.slice(0, 200)}`);
  }
  return body as T;
}

export async function runJob(series: CsvSeries, command: DetectCommand, io: JobIo): Promise<PointRecord[]> {
  const base = command.server!;
  const headers = { 'x-service-key': command.key!, 'content-type': 'application/json' };
  const body = JSON.stringify({
    series: series.values.map((value, i) => ({ timestamp: new Date(series.timestampsMs[i]!).toISOString(), value })),
    granularity: command.granularity,
    customInterval: command.customInterval,
    sensitivity: command.sensitivity,
    maxAnomalyRatio: command.maxAnomalyRatio,
    imputeMode: command.imputeMode,
    ...(command.imputeFixedValue !== undefined ? { imputeFixedValue: command.imputeFixedValue } : {}),
    ...(command.period !== undefined ? { period: command.period } : {}),
  });
  const job = await call<JobStatusBody>(io, `${base}/v1/jobs`, { method: 'POST', headers, body }, 'submitting the job');
  io.writeErr(`detect: job ${job.job_id} accepted: ${job.points_total} points\n`);

  let status = job;
  let shown = '';
  for (;;) {
    const line = `detect: job ${status.job_id} ${status.status} ${progressBar(status.points_done, status.points_total)}`;
    if (line !== shown) {
      io.writeErr(io.progressInPlace ? `\r${line}` : `${line}\n`);
      shown = line;
    }
    if (status.status === 'done') break;
    if (status.status === 'failed' || status.status === 'cancelled') {
      if (io.progressInPlace) io.writeErr('\n');
      const why = status.failure ? `: ${status.failure.code}: ${status.failure.message}` : '';
      throw new CliError('JobFailed', `job ${status.job_id} ${status.status}${why}`);
    }
    await io.sleep(POLL_MS);
    status = await call<JobStatusBody>(io, `${base}/v1/jobs/${job.job_id}`, { headers }, 'asking the job\'s progress');
  }
  if (io.progressInPlace) io.writeErr('\n');

  const records: PointRecord[] = [];
  let cursor: string | null = null;
  do {
    const url: string = `${base}/v1/jobs/${job.job_id}/results?limit=${PAGE_ROWS}${cursor === null ? '' : `&cursor=${cursor}`}`;
    const page: ResultsPage = await call<ResultsPage>(io, url, { headers }, 'reading the results');
    for (const row of page.results) {
      records.push({
        timestamp: series.timestamps[row.point_index]!,
        value: row.value,
        expectedValue: row.expected_value,
        upperMargin: row.upper_margin,
        lowerMargin: row.lower_margin,
        isAnomaly: row.is_anomaly,
        isPositiveAnomaly: row.is_positive_anomaly,
        isNegativeAnomaly: row.is_negative_anomaly,
        severity: row.severity,
      });
    }
    cursor = page.next_cursor;
  } while (cursor !== null);
  if (records.length !== series.values.length) {
    throw new CliError('ServerUnreachable', `the service returned ${records.length} results for ${series.values.length} points`);
  }
  return records;
}
