// The wire bodies of the job routes (./schemas.ts) from the job store's records.
import { randomBytes } from 'node:crypto';
import type { JobEpisode, JobProgress, JobRecord, JobResultRow, JobSeries } from '@adp/store';
import { pointVerdictBody } from '../point-verdict.js';
import type { JobBody, JobEpisodeBody, JobResultRowBody } from './schemas.js';

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function jobBody(job: JobRecord, progress: JobProgress, nowMs: number): JobBody {
  const end = job.finishedAtMs ?? nowMs;
  return {
    job_id: job.jobId,
    status: job.status,
    series_count: job.series.length,
    series_done: progress.seriesDone,
    points_total: job.pointsTotal,
    points_done: progress.pointsDone,
    created_at: iso(job.createdAtMs)!,
    started_at: iso(job.startedAtMs),
    finished_at: iso(job.finishedAtMs),
    queued_ms: job.startedAtMs === null ? null : job.startedAtMs - job.createdAtMs,
    running_ms: job.startedAtMs === null ? null : Math.max(0, end - job.startedAtMs),
    failure:
      job.failure === null
        ? null
        : { code: job.failure.code, message: job.failure.message, series_index: job.failure.seriesIndex, machine_id: job.failure.machineId },
    options: { ...job.options },
    series: job.series.map((series, index) => ({
      series_index: index,
      machine_id: series.machineId,
      kind: kindOf(series),
      channel: series.channel ?? null,
      channels: series.machine ? [...series.machine.channels] : null,
      points: series.points,
      sensitivity: series.sensitivity ?? job.options.sensitivity,
      done: progress.periods.has(index),
      // A machine verdict has no period (its model is not seasonal).
      period: series.machine ? null : (progress.periods.get(index) ?? null),
    })),
  };
}

/** What a series of a job is: a series as sent, one channel of a multichannel series, or its machine verdict. */
function kindOf(series: JobSeries | undefined): 'series' | 'channel' | 'machine' {
  return series?.machine ? 'machine' : series?.channel !== undefined ? 'channel' : 'series';
}

/** The fields a multichannel series' rows and episodes add: what they are, and which channel. */
function multichannelFields(series: JobSeries | undefined): { kind?: 'channel' | 'machine'; channel?: string } {
  const kind = kindOf(series);
  if (kind === 'series') return {};
  return kind === 'channel' ? { kind, channel: series!.channel! } : { kind };
}

export function rowBody(row: JobResultRow, job: JobRecord): JobResultRowBody {
  const series = job.series[row.seriesIndex];
  return {
    series_index: row.seriesIndex,
    machine_id: series?.machineId ?? null,
    ...multichannelFields(series),
    point_index: row.pointIndex,
    timestamp: iso(row.tsMs),
    ...pointVerdictBody(row),
  };
}

export function episodeBody(episode: JobEpisode, job: JobRecord): JobEpisodeBody {
  const series = job.series[episode.seriesIndex];
  return {
    series_index: episode.seriesIndex,
    machine_id: series?.machineId ?? null,
    ...multichannelFields(series),
    first_point: episode.firstPoint,
    last_point: episode.lastPoint,
    first_timestamp: iso(episode.firstTsMs),
    last_timestamp: iso(episode.lastTsMs),
    points: episode.lastPoint - episode.firstPoint + 1,
    // Episodes stored before they spanned quiet points were runs of flags, closed.
    flagged_points: episode.flaggedPoints ?? episode.lastPoint - episode.firstPoint + 1,
    peak_severity: episode.peakSeverity,
    direction: episode.direction,
    closed: episode.closed ?? true,
    ...(episode.drivers ? { channels: episode.drivers.map(({ channel, share }) => ({ channel, share })) } : {}),
  };
}

/** A new job id: `job_` and 32 random hex digits. */
export function newJobId(): string {
  return `job_${randomBytes(16).toString('hex')}`;
}

