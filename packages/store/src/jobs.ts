// Detection jobs (POST /v1/jobs): what the API records when it accepts a job, what the job worker
// stages while a series' chunks arrive, and the per-point results it writes. One port, three
// adapters (memory for tests, DuckDB for the embedded default, ClickHouse for scale-out), all
// passing test/jobs-contract.ts.
import type { JudgedPoint } from '@adp/streaming';

export const JOB_STATUSES = ['queued', 'running', 'done', 'failed', 'cancelled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** Statuses a job leaves no more. */
export const FINISHED_JOB_STATUSES: readonly JobStatus[] = ['done', 'failed', 'cancelled'];

/**
 * How the job's series are judged: the fields of entire-series detection, as the API validated
 * them (the engine's names; strings where the engine has enums, so this package needs no engine).
 */
export interface JobDetectOptions {
  readonly granularity: string;
  readonly customInterval: number;
  readonly imputeMode: string;
  /** Only with imputeMode `fixed`. */
  readonly imputeFixedValue?: number;
  /** Absent: the engine detects the period; 0: not seasonal. */
  readonly period?: number;
  readonly sensitivity: number;
  readonly maxAnomalyRatio: number;
}

/** One series of a job, as submitted. */
export interface JobSeries {
  /** The series' machine, or null for an anonymous series. */
  readonly machineId: string | null;
  readonly points: number;
  /** Chunks the API published for it (JobChunk.chunk_count). */
  readonly chunks: number;
  /** Whether its points carry timestamps. */
  readonly timestamps: boolean;
  /**
   * The sensitivity it is judged with where not the job's: its machine's baseline's, when the
   * request gave none (as POST /v1/detect does).
   */
  readonly sensitivity?: number;
  /** One channel of a multichannel series (its machine's readings of that channel), judged alone. */
  readonly channel?: string;
  /**
   * The machine verdict of a multichannel series: its points' readings of every channel of the
   * machine's joint model, judged together against that model. The chunks' values are the
   * readings point by point (`channels.length` values a point, in this order).
   */
  readonly machine?: JobMachineVerdict;
}

/** What a job's machine-verdict series is judged with. */
export interface JobMachineVerdict {
  /** The model's channels, in its order: the order of each point's readings in the chunks. */
  readonly channels: readonly string[];
  /** The machine's joint model (encodeMachineModel) as its baseline held it when the job was accepted. */
  readonly model: string;
}

/** Why a job failed, and where. */
export interface JobFailure {
  readonly code: string;
  readonly message: string;
  /** The series it failed on, when one did. */
  readonly seriesIndex: number | null;
  readonly machineId: string | null;
}

export interface JobRecord {
  /** `job_` and 32 hex digits. */
  readonly jobId: string;
  readonly orgId: string;
  readonly status: JobStatus;
  /** The Idempotency-Key the client sent, if any: the same key of the same organization is the same job. */
  readonly idempotencyKey: string | null;
  /** SHA-256 of what was submitted (series and options): an idempotency key reused for another body is refused. */
  readonly requestHash: string;
  readonly series: readonly JobSeries[];
  readonly pointsTotal: number;
  readonly options: JobDetectOptions;
  readonly createdAtMs: number;
  /** When a worker first took one of its series. */
  readonly startedAtMs: number | null;
  readonly finishedAtMs: number | null;
  readonly failure: JobFailure | null;
}

/**
 * An episode of one series: for a series judged alone, from a flagged point to the last flag
 * before a quiet stretch (the rule of POST /v1/detect and the stream workers, @adp/alerts
 * seriesEpisodes); for a machine verdict, the joint model's own episode.
 */
export interface JobEpisode {
  readonly seriesIndex: number;
  /** Its first flagged point. */
  readonly firstPoint: number;
  /** Its last flagged point (inclusive). */
  readonly lastPoint: number;
  readonly firstTsMs: number | null;
  readonly lastTsMs: number | null;
  /** The largest severity of its points. */
  readonly peakSeverity: number;
  /** Whether any point of it is above its band (`positive`), below (`negative`), or both. */
  readonly direction: 'positive' | 'negative' | 'both';
  /**
   * Flagged points within it. Absent in episodes stored before episodes spanned quiet points,
   * when every point from first to last was flagged.
   */
  readonly flaggedPoints?: number;
  /**
   * False when the series ended before a quiet stretch followed its last flag. Absent in episodes
   * stored before it was recorded (read as closed).
   */
  readonly closed?: boolean;
  /** A machine verdict's episode: the channels that drove it, each one's share of its score. */
  readonly drivers?: readonly { readonly channel: string; readonly share: number }[];
}

/** One judged point of a job. */
export interface JobResultRow extends JudgedPoint {
  readonly seriesIndex: number;
  readonly pointIndex: number;
  /** Null when the series has no timestamps. */
  readonly tsMs: number | null;
}

/** A judged series: its points' results, its episodes and the period the engine used. */
export interface JudgedSeries {
  readonly seriesIndex: number;
  readonly period: number;
  readonly rows: readonly JobResultRow[];
  readonly episodes: readonly JobEpisode[];
}

/** What the worker has finished of a job. */
export interface JobProgress {
  readonly seriesDone: number;
  readonly pointsDone: number;
  /** The period the engine used, by series index, for the finished series. */
  readonly periods: ReadonlyMap<number, number>;
}

/** The position after which a results page starts: the last row of the previous page. */
export interface JobResultsCursor {
  readonly seriesIndex: number;
  readonly pointIndex: number;
}

/** Changes a worker or the API makes to a job's record. */
export interface JobTransition {
  readonly status: JobStatus;
  readonly startedAtMs?: number;
  readonly finishedAtMs?: number;
  readonly failure?: JobFailure;
}

export interface JobStore {
  /**
   * Records a new job; with an idempotency key that the organization already used, records
   * nothing and answers the existing job (`created: false`).
   */
  create(job: JobRecord): Promise<{ readonly job: JobRecord; readonly created: boolean }>;
  /** The organization's job made with this Idempotency-Key, or null. */
  byIdempotencyKey(orgId: string, idempotencyKey: string): Promise<JobRecord | null>;
  /** The organization's job, or null (another organization's job is null too). */
  get(orgId: string, jobId: string): Promise<JobRecord | null>;
  /** The organization's jobs, newest first; `before` (a job id) pages. */
  list(orgId: string, options: { readonly limit: number; readonly before?: string }): Promise<JobRecord[]>;
  /**
   * Moves a job to `transition.status` if its status is one of `from`; resolves with whether it
   * did. Timestamps and failure given are set; others are kept.
   */
  transition(orgId: string, jobId: string, from: readonly JobStatus[], transition: JobTransition): Promise<boolean>;
  /** Removes a finished job's record, results, staged chunks and progress. Resolves with whether there was one. */
  remove(orgId: string, jobId: string): Promise<boolean>;
  /** Jobs queued or running, and the points of theirs not judged yet (the per-organization caps). */
  activeLoad(orgId: string): Promise<{ readonly jobs: number; readonly pointsPending: number }>;

  /**
   * Keeps one received chunk of a series (the encoded JobChunk) until the series is complete; a
   * replayed chunk replaces itself. Nothing for a finished (done, failed, cancelled) or unknown job.
   */
  stageChunk(orgId: string, jobId: string, seriesIndex: number, chunkIndex: number, message: Buffer): Promise<void>;
  /** The staged chunks of a series, by chunk index. */
  stagedChunks(orgId: string, jobId: string, seriesIndex: number): Promise<Map<number, Buffer>>;
  /**
   * Writes judged series of one job, all or none: each one's rows replace any earlier rows of the
   * same series (exactly one row per point, also when a series is judged again after a restart),
   * its episodes and period are kept, it counts as done, and its staged chunks are dropped.
   * Nothing for a finished (done, failed, cancelled) or unknown job.
   */
  completeSeries(orgId: string, jobId: string, judged: readonly JudgedSeries[]): Promise<void>;
  progress(orgId: string, jobId: string): Promise<JobProgress>;
  /** Results in (series, point) order after `after`, at most `limit`. */
  results(orgId: string, jobId: string, options: { readonly limit: number; readonly after?: JobResultsCursor }): Promise<JobResultRow[]>;
  /** Every episode of the job's finished series, in (series, first point) order. */
  episodes(orgId: string, jobId: string): Promise<JobEpisode[]>;
  /** Resolves when the store's server answers. */
  ping?(): Promise<void>;
  close(): Promise<void>;
}

/** Whether a results row comes after the cursor. */
export function isAfter(row: JobResultsCursor, cursor: JobResultsCursor | undefined): boolean {
  if (cursor === undefined) return true;
  return row.seriesIndex > cursor.seriesIndex || (row.seriesIndex === cursor.seriesIndex && row.pointIndex > cursor.pointIndex);
}
