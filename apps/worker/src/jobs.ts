// The job worker: consumes the jobs topic (JobChunk messages, POST /v1/jobs), and judges each
// series of a job with entire-series detection, the engine and defaults of POST /v1/detect.
//
// The cut rule: a series is never judged in pieces. The engine's answer for a point depends on
// the whole series (one period, one residual scale, the anomaly cap and the event grouping are
// all taken over every point), so a series judged in segments would get other flags at and
// around every cut. Each chunk is staged durably in the job store before its offset is
// committed; when a series' last chunk arrives (a series' chunks share a key, so they arrive in
// order on one partition) the worker reads the staged chunks back, joins them and judges the
// whole series at once. Its results are therefore exactly detectEntireSeries over the same points.
//
// Restarts: a chunk re-delivered after a crash replaces its staged copy; a series judged again
// replaces its rows (JobStore.completeSeries), so every point has exactly one result row. A job
// cancelled (DELETE /v1/jobs/{id}) or removed is skipped: its chunks are not staged or judged.
import {
  detectEntireSeries,
  GRANULARITIES,
  IMPUTE_MODES,
  SeriesError,
  type DetectOptions,
  type SeriesInput,
} from '@adp/detection';
import {
  FINISHED_JOB_STATUSES,
  TOPICS,
  episodesOf,
  loadStreamingCodecs,
  type Bus,
  type BusConsumer,
  type IncomingMessage,
  type JobChunk,
  type JobRecord,
  type JobResultRow,
  type JobStore,
  type StreamingCodecs,
} from '@adp/streaming';
import type { WorkerLogger } from './worker.js';

export interface JobWorkerDeps {
  readonly bus: Bus;
  readonly jobs: JobStore;
  readonly logger: WorkerLogger;
  /** Default TOPICS.jobs. */
  readonly topic?: string;
  /** Consumer group of the job workers. */
  readonly groupId: string;
  /** Partitions of the jobs topic when the worker creates it. Default 12. */
  readonly partitions?: number;
  /** Create the topic when missing. Default true. */
  readonly ensureTopics?: boolean;
  readonly nowMs?: () => number;
  readonly codecs?: Pick<StreamingCodecs, 'jobChunk'>;
}

export interface RunningJobWorker {
  /** Series judged since start (a series judged again after a restart counts again). */
  readonly seriesJudged: () => number;
  stop(): Promise<void>;
}

/**
 * Why a job failed where the engine threw other than a SeriesError or answered a non-finite number.
 * (A SeriesError fails it with the API's codes, InvalidSeries or InvalidArgument; the API checks
 * the same rules before it accepts a job, so that is rare.)
 */
const DETECTION_FAILURE_CODE = 'DetectionFailed';

/** The first point whose expected value, margins or severity is not finite; -1 when none. */
function firstNotFinite(result: { expectedValues: readonly number[]; upperMargins: readonly number[]; lowerMargins: readonly number[]; severity: readonly number[] }): number {
  for (let i = 0; i < result.expectedValues.length; i++) {
    if (
      !Number.isFinite(result.expectedValues[i]) ||
      !Number.isFinite(result.upperMargins[i]) ||
      !Number.isFinite(result.lowerMargins[i]) ||
      !Number.isFinite(result.severity[i])
    ) {
      return i;
    }
  }
  return -1;
}

export async function startJobWorker(deps: JobWorkerDeps): Promise<RunningJobWorker> {
  const topic = deps.topic ?? TOPICS.jobs;
  const codecs = deps.codecs ?? loadStreamingCodecs();
  const nowMs = deps.nowMs ?? Date.now;
  const log = deps.logger;
  let judged = 0;
  if (deps.ensureTopics ?? true) await deps.bus.ensureTopics([{ name: topic, partitions: deps.partitions ?? 12 }]);

  async function handle(message: IncomingMessage): Promise<void> {
    let chunk: JobChunk;
    try {
      chunk = codecs.jobChunk.decode(message.value);
    } catch (err) {
      // Only the API writes this topic; a message it cannot have written is logged and skipped
      // rather than retried for ever.
      log.error({ err, topic: message.topic, partition: message.partition, offset: message.offset }, 'skipping a jobs message that does not decode');
      return;
    }
    const { organization: orgId, job_id: jobId, series_index: seriesIndex } = chunk;
    const job = await deps.jobs.get(orgId, jobId);
    if (job === null || FINISHED_JOB_STATUSES.includes(job.status)) return;
    const series = job.series[seriesIndex];
    if (series === undefined || chunk.chunk_count !== series.chunks || chunk.chunk_index >= series.chunks) {
      log.error({ jobId, seriesIndex, chunkIndex: chunk.chunk_index }, 'skipping a job chunk that does not fit its job');
      return;
    }
    // A chunk of a series already judged (delivered again after a crash between the results and
    // the commit): its results stand; only the job's completion may still be to record.
    const before = await deps.jobs.progress(orgId, jobId);
    if (before.periods.has(seriesIndex)) {
      await finishIfComplete(job, before.seriesDone);
      return;
    }
    if (job.status === 'queued') await deps.jobs.transition(orgId, jobId, ['queued'], { status: 'running', startedAtMs: nowMs() });
    await deps.jobs.stageChunk(orgId, jobId, seriesIndex, chunk.chunk_index, message.value);
    // A series' chunks arrive in order: its last one means the others are staged.
    if (chunk.chunk_index !== chunk.chunk_count - 1) return;
    await judgeSeries(job, seriesIndex);
  }

  async function judgeSeries(job: JobRecord, seriesIndex: number): Promise<void> {
    const { orgId, jobId } = job;
    const spec = job.series[seriesIndex]!;
    const staged = await deps.jobs.stagedChunks(orgId, jobId, seriesIndex);
    const chunks: JobChunk[] = [];
    for (let index = 0; index < spec.chunks; index++) {
      const bytes = staged.get(index);
      if (bytes === undefined) {
        // Only if a chunk was lost, which the bus's delivery guarantees rule out: fail loudly.
        await fail(job, seriesIndex, `Chunk ${index} of ${spec.chunks} of the series was not received.`, 'JobChunkMissing');
        return;
      }
      chunks.push(codecs.jobChunk.decode(bytes));
    }
    const values: number[] = [];
    const timestamps: number[] | null = spec.timestamps ? [] : null;
    for (const chunk of chunks) {
      for (const value of chunk.values) values.push(value);
      if (timestamps !== null && chunk.timestamps !== null) for (const ts of chunk.timestamps) timestamps.push(ts);
    }
    if (values.length !== spec.points || (timestamps !== null && timestamps.length !== spec.points)) {
      await fail(job, seriesIndex, `The series' chunks hold ${values.length} points where ${spec.points} were sent.`, 'JobChunkMissing');
      return;
    }
    const { input, options } = engineInput(job, values, timestamps, spec.sensitivity);
    let result;
    try {
      result = detectEntireSeries(input, options);
    } catch (error) {
      // The engine is pure: what it refuses once it refuses every time, so the job fails rather
      // than the chunk being delivered again for ever.
      if (error instanceof SeriesError) await fail(job, seriesIndex, error.message, error.code === 'InvalidSeries' ? 'InvalidSeries' : 'InvalidArgument');
      else {
        log.error({ err: error, jobId, seriesIndex }, 'the engine failed on a job series');
        await fail(job, seriesIndex, 'The detection engine failed on this series.', DETECTION_FAILURE_CODE);
      }
      return;
    }
    const notFinite = firstNotFinite(result);
    if (notFinite >= 0) {
      await fail(job, seriesIndex, `The detection engine's answer is not a finite number at point ${notFinite}.`, DETECTION_FAILURE_CODE);
      return;
    }
    const rows: JobResultRow[] = new Array<JobResultRow>(values.length);
    for (let i = 0; i < values.length; i++) {
      rows[i] = {
        seriesIndex,
        pointIndex: i,
        tsMs: timestamps === null ? null : timestamps[i]!,
        value: values[i]!,
        expectedValue: result.expectedValues[i]!,
        upperMargin: result.upperMargins[i]!,
        lowerMargin: result.lowerMargins[i]!,
        isAnomaly: result.isAnomaly[i]!,
        isPositiveAnomaly: result.isPositiveAnomaly[i]!,
        isNegativeAnomaly: result.isNegativeAnomaly[i]!,
        severity: result.severity[i]!,
      };
    }
    // Cancelled while judging: nothing written.
    const current = await deps.jobs.get(orgId, jobId);
    if (current === null || FINISHED_JOB_STATUSES.includes(current.status)) return;
    await deps.jobs.completeSeries(orgId, jobId, { seriesIndex, period: result.period, rows, episodes: episodesOf(seriesIndex, rows) });
    judged += 1;
    await finishIfComplete(job, (await deps.jobs.progress(orgId, jobId)).seriesDone);
  }

  async function finishIfComplete(job: JobRecord, seriesDone: number): Promise<void> {
    if (seriesDone !== job.series.length) return;
    if (await deps.jobs.transition(job.orgId, job.jobId, ['queued', 'running'], { status: 'done', finishedAtMs: nowMs() })) {
      log.info({ jobId: job.jobId, orgId: job.orgId, points: job.pointsTotal }, 'job done');
    }
  }

  async function fail(job: JobRecord, seriesIndex: number, message: string, code: string): Promise<void> {
    const machineId = job.series[seriesIndex]?.machineId ?? null;
    log.warn({ jobId: job.jobId, seriesIndex, code, message }, 'job failed');
    await deps.jobs.transition(job.orgId, job.jobId, ['queued', 'running'], {
      status: 'failed',
      finishedAtMs: nowMs(),
      failure: { code, message, seriesIndex, machineId },
    });
  }

  const consumer: BusConsumer = await deps.bus.consumer({ groupId: deps.groupId, topics: [topic] });
  await consumer.run(async (batch) => {
    // In order: a series' last chunk must find the earlier ones staged.
    for (const message of batch.messages) await handle(message);
  });
  log.info({ topic, groupId: deps.groupId }, 'job worker started');
  return {
    seriesJudged: () => judged,
    async stop() {
      await consumer.close();
    },
  };
}

/** The engine's input and options for a job's series (the API validated the options). */
export function engineInput(
  job: JobRecord,
  values: readonly number[],
  timestamps: readonly number[] | null,
  sensitivity?: number,
): { input: SeriesInput; options: DetectOptions } {
  const { options } = job;
  const granularity = GRANULARITIES.find((g) => g === options.granularity) ?? 'none';
  const imputeMode = IMPUTE_MODES.find((m) => m === options.imputeMode) ?? 'auto';
  const input: SeriesInput = {
    timestampsMs: timestamps,
    values,
    granularity,
    customInterval: options.customInterval,
    imputeMode,
    ...(options.imputeFixedValue !== undefined ? { imputeFixedValue: options.imputeFixedValue } : {}),
  };
  return {
    input,
    options: {
      ...(options.period !== undefined ? { period: options.period } : {}),
      sensitivity: sensitivity ?? options.sensitivity,
      maxAnomalyRatio: options.maxAnomalyRatio,
    },
  };
}
