// The job worker: consumes the jobs topic (JobChunk messages, POST /v1/jobs), and judges each
// series of a job with entire-series detection, the engine and defaults of POST /v1/detect.
//
// The cut rule: a series is never judged in pieces. The engine's answer for a point depends on
// the whole series (one period, one residual scale, the anomaly cap and the event grouping are
// all taken over every point), so a series judged in segments would get other flags at and
// around every cut. Each chunk is staged durably in the job store before its offset is
// committed; when a series' last chunk arrives (a series' chunks share a key, so they arrive in
// order on one partition) the worker reads the staged chunks back, joins them and judges the
// whole series at once. Its results are therefore exactly detectEntireSeries over the same points,
// with, where the series' machine has a single series' baseline with a level model, each flag held
// while the series stays away from the healthy level (flagHeld, as POST /v1/detect holds it).
//
// A multichannel series arrives as one series per channel, each judged as above, and, where its
// machine's baseline has a joint model, a machine-verdict series: every channel's readings point
// by point, judged together against that model (judgeMachineSeries).
//
// Restarts: a chunk re-delivered after a crash replaces its staged copy; a series judged again
// replaces its rows (JobStore.completeSeries), so every point has exactly one result row. A job
// cancelled (DELETE /v1/jobs/{id}) or removed is skipped: its chunks are not staged or judged.
import {
  detectEntireSeries,
  GRANULARITIES,
  flagHeld,
  IMPUTE_MODES,
  SeriesError,
  type DetectOptions,
  type SeriesInput,
} from '@adp/detection';
import { seriesEpisodes } from '@adp/alerts';
import { baselineLevelModel, decodeMachineModel, judgeMachine, levelCarry, levelVerdict, type MachineModel } from '@adp/machine';
import {
  TOPICS,
  loadStreamingCodecs,
  type Bus,
  type BusConsumer,
  type IncomingMessage,
  type JobChunk,
  type StreamingCodecs,
} from '@adp/streaming';
import {
  FINISHED_JOB_STATUSES,
  type JobEpisode,
  type JobMachineVerdict,
  type JobRecord,
  type JobResultRow,
  type JobStore,
  type JudgedSeries,
  type Store,
} from '@adp/store';
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
  /**
   * The machines' baselines: a single series whose machine's baseline has a level model holds its
   * flags while it stays away from the healthy level. Absent: nothing is held.
   */
  readonly baselines?: Pick<Store, 'getBaseline'>;
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

/** A chunk of this batch, decoded, with the bytes it came in (staged as they are). */
interface ReceivedChunk {
  readonly chunk: JobChunk;
  readonly bytes: Buffer;
}

/** Why a series could not be judged: it fails its job. */
interface SeriesFailure {
  readonly code: string;
  readonly message: string;
}

/**
 * A series' episodes by the rule of POST /v1/detect and the stream workers (@adp/alerts
 * seriesEpisodes: open at a flag, closed once a quiet stretch follows the last one), so a job and
 * a detection of the same series answer the same episodes.
 */
export function seriesEpisodesOf(
  seriesIndex: number,
  verdicts: Parameters<typeof seriesEpisodes>[0],
  timestamps: readonly number[] | null,
): JobEpisode[] {
  return seriesEpisodes(verdicts).map((episode) => jobEpisode(seriesIndex, timestamps, episode));
}

/** An episode (a series' or the machine's) as a job stores it: its points' indexes and timestamps. */
function jobEpisode(
  seriesIndex: number,
  timestamps: readonly number[] | null,
  episode: { start: number; end: number; severity: number; direction: JobEpisode['direction']; flaggedPoints: number; closed: boolean },
): JobEpisode {
  const at = (t: number): number | null => (timestamps === null ? null : timestamps[t]!);
  return {
    seriesIndex,
    firstPoint: episode.start,
    lastPoint: episode.end,
    firstTsMs: at(episode.start),
    lastTsMs: at(episode.end),
    peakSeverity: episode.severity,
    direction: episode.direction,
    flaggedPoints: episode.flaggedPoints,
    closed: episode.closed,
  };
}

/** Level models kept: a job of many series of the same machines fits each machine's once. */
const LEVEL_MODELS_KEPT = 256;

/**
 * The machines' level models, as their baselines are when a series is judged: each judged series
 * reads its machine's baseline, and the model fitted for that baseline (its id and update time) is
 * reused while it stays the same. A store failure rejects (the batch is delivered again).
 */
class LevelModels {
  private readonly fitted = new Map<string, { readonly baselineId: string; readonly updatedAtMs: number; readonly model: MachineModel | null }>();

  constructor(private readonly baselines: Pick<Store, 'getBaseline'> | null) {}

  async of(orgId: string, machineId: string): Promise<MachineModel | null> {
    if (this.baselines === null) return null;
    const record = await this.baselines.getBaseline(orgId, machineId);
    if (record === null) return null;
    const key = `${orgId}/${machineId}`;
    const kept = this.fitted.get(key);
    if (kept !== undefined && kept.baselineId === record.baselineId && kept.updatedAtMs === record.updatedAt.getTime()) return kept.model;
    const model = baselineLevelModel(record);
    this.fitted.delete(key);
    if (this.fitted.size >= LEVEL_MODELS_KEPT) this.fitted.delete(this.fitted.keys().next().value!);
    this.fitted.set(key, { baselineId: record.baselineId, updatedAtMs: record.updatedAt.getTime(), model });
    return model;
  }
}

export async function startJobWorker(deps: JobWorkerDeps): Promise<RunningJobWorker> {
  const topic = deps.topic ?? TOPICS.jobs;
  const codecs = deps.codecs ?? loadStreamingCodecs();
  const nowMs = deps.nowMs ?? Date.now;
  const log = deps.logger;
  let judgedCount = 0;
  const levels = new LevelModels(deps.baselines ?? null);
  if (deps.ensureTopics ?? true) await deps.bus.ensureTopics([{ name: topic, partitions: deps.partitions ?? 12 }]);

  /**
   * One batch (one partition's messages, in order). A series whose chunks all arrive in the batch
   * is judged from memory; the chunks of a series whose last chunk is still to come are staged in
   * the job store before the batch is committed, and read back when the last one arrives. A job's
   * record and progress are read once a batch (a job of a thousand series has a large record),
   * so a cancel takes effect from the next batch on; the store itself neither stages nor writes
   * results for a finished job. The judged series of a job are written in one call.
   */
  async function handleBatch(messages: readonly IncomingMessage[]): Promise<void> {
    const records = new Map<string, JobRecord | null>();
    const received = new Map<string, { job: JobRecord; seriesIndex: number; chunks: Map<number, ReceivedChunk> }>();
    const ready: string[] = [];
    for (const message of messages) {
      let chunk: JobChunk;
      try {
        chunk = codecs.jobChunk.decode(message.value);
      } catch (err) {
        // Only the API writes this topic; a message it cannot have written is logged and skipped
        // rather than retried for ever.
        log.error({ err, topic: message.topic, partition: message.partition, offset: message.offset }, 'skipping a jobs message that does not decode');
        continue;
      }
      const { organization: orgId, job_id: jobId, series_index: seriesIndex } = chunk;
      const jobKey = `${orgId}/${jobId}`;
      let job = records.get(jobKey);
      if (job === undefined) {
        job = await deps.jobs.get(orgId, jobId);
        records.set(jobKey, job);
      }
      if (job === null || FINISHED_JOB_STATUSES.includes(job.status)) continue;
      const spec = job.series[seriesIndex];
      if (spec === undefined || chunk.chunk_count !== spec.chunks || chunk.chunk_index >= spec.chunks) {
        log.error({ jobId, seriesIndex, chunkIndex: chunk.chunk_index }, 'skipping a job chunk that does not fit its job');
        continue;
      }
      if (job.status === 'queued') {
        await deps.jobs.transition(orgId, jobId, ['queued'], { status: 'running', startedAtMs: nowMs() });
        job = { ...job, status: 'running' };
        records.set(jobKey, job);
      }
      const seriesKey = `${jobKey}/${seriesIndex}`;
      let entry = received.get(seriesKey);
      if (!entry) received.set(seriesKey, (entry = { job, seriesIndex, chunks: new Map() }));
      entry.chunks.set(chunk.chunk_index, { chunk, bytes: message.value });
      // A series' chunks arrive in order: its last one means the others came before it.
      if (chunk.chunk_index === chunk.chunk_count - 1) ready.push(seriesKey);
    }

    // The complete series, job by job.
    const byJob = new Map<string, string[]>();
    for (const seriesKey of ready) {
      const { job } = received.get(seriesKey)!;
      const jobKey = `${job.orgId}/${job.jobId}`;
      byJob.set(jobKey, [...(byJob.get(jobKey) ?? []), seriesKey]);
    }
    for (const seriesKeys of byJob.values()) {
      const job = received.get(seriesKeys[0]!)!.job;
      // Series judged before (delivered again after a crash between the results and the commit)
      // keep their results; only the job's completion may be to record.
      const before = await deps.jobs.progress(job.orgId, job.jobId);
      const judged: JudgedSeries[] = [];
      let failed = false;
      for (const seriesKey of seriesKeys) {
        const entry = received.get(seriesKey)!;
        received.delete(seriesKey);
        if (failed || before.periods.has(entry.seriesIndex)) continue;
        const outcome = await judgeSeries(job, entry.seriesIndex, entry.chunks);
        if ('code' in outcome) {
          await fail(job, entry.seriesIndex, outcome);
          failed = true;
        } else {
          judged.push(outcome);
        }
      }
      if (judged.length > 0) {
        await deps.jobs.completeSeries(job.orgId, job.jobId, judged);
        judgedCount += judged.length;
      }
      // Read again after the write: other partitions' batches complete the job's other series.
      if (!failed) await finishIfComplete(job, judged.length > 0 ? (await deps.jobs.progress(job.orgId, job.jobId)).seriesDone : before.seriesDone);
    }

    // Series still waiting for chunks of a later batch: staged before this batch is committed.
    for (const { job, seriesIndex, chunks } of received.values()) {
      for (const [chunkIndex, { bytes }] of chunks) await deps.jobs.stageChunk(job.orgId, job.jobId, seriesIndex, chunkIndex, bytes);
    }
  }

  /** Judges one whole series: its chunks of this batch and, where it began earlier, the staged ones. */
  async function judgeSeries(job: JobRecord, seriesIndex: number, inBatch: ReadonlyMap<number, ReceivedChunk>): Promise<JudgedSeries | SeriesFailure> {
    const spec = job.series[seriesIndex]!;
    const staged = inBatch.size === spec.chunks ? new Map<number, Buffer>() : await deps.jobs.stagedChunks(job.orgId, job.jobId, seriesIndex);
    const chunks: JobChunk[] = [];
    for (let index = 0; index < spec.chunks; index++) {
      const here = inBatch.get(index)?.chunk;
      const bytes = here === undefined ? staged.get(index) : undefined;
      // Only if a chunk was lost, which the bus's delivery guarantees rule out: fail loudly.
      if (here === undefined && bytes === undefined) return { code: 'JobChunkMissing', message: `Chunk ${index} of ${spec.chunks} of the series was not received.` };
      chunks.push(here ?? codecs.jobChunk.decode(bytes!));
    }
    const values: number[] = [];
    const timestamps: number[] | null = spec.timestamps ? [] : null;
    for (const chunk of chunks) {
      for (const value of chunk.values) values.push(value);
      if (timestamps !== null && chunk.timestamps !== null) for (const ts of chunk.timestamps) timestamps.push(ts);
    }
    const width = spec.machine?.channels.length ?? 1;
    if (values.length !== spec.points * width || (timestamps !== null && timestamps.length !== spec.points)) {
      return { code: 'JobChunkMissing', message: `The series' chunks hold ${values.length / width} points where ${spec.points} were sent.` };
    }
    if (spec.machine) return judgeMachineSeries(job, seriesIndex, spec.machine, values, timestamps, spec.sensitivity ?? job.options.sensitivity);
    const { input, options } = engineInput(job, values, timestamps, spec.sensitivity);
    let result;
    try {
      result = detectEntireSeries(input, options);
    } catch (error) {
      // The engine is pure: what it refuses once it refuses every time, so the job fails rather
      // than the chunk being delivered again for ever.
      if (error instanceof SeriesError) return { code: error.code === 'InvalidSeries' ? 'InvalidSeries' : 'InvalidArgument', message: error.message };
      log.error({ err: error, jobId: job.jobId, seriesIndex }, 'the engine failed on a job series');
      return { code: DETECTION_FAILURE_CODE, message: 'The detection engine failed on this series.' };
    }
    const notFinite = firstNotFinite(result);
    if (notFinite >= 0) return { code: DETECTION_FAILURE_CODE, message: `The detection engine's answer is not a finite number at point ${notFinite}.` };
    if (spec.machineId !== null && spec.channel === undefined) {
      const level = await levels.of(job.orgId, spec.machineId);
      // Each flag holds while the series stays away from the healthy level (after the anomaly
      // cap, as POST /v1/detect holds it).
      if (level !== null) flagHeld(result, values, result.expectedValues, levelCarry(result.isAnomaly, result.severity, levelVerdict(level, values, options.sensitivity)));
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
    return { seriesIndex, period: result.period, rows, episodes: seriesEpisodesOf(seriesIndex, result, timestamps) };
  }

  /**
   * A multichannel series' machine verdict: its readings against the machine's joint model, as
   * POST /v1/detect judges them. A row's value is the machine's score and its band runs from 0 to
   * the threshold (expected value 0, lower margin 0, upper margin the threshold), so a flagged
   * point is one above its band; the episodes are the model's own (a short dip does not split
   * one), with the channels that drove them.
   */
  function judgeMachineSeries(
    job: JobRecord,
    seriesIndex: number,
    machine: JobMachineVerdict,
    readings: readonly number[],
    timestamps: readonly number[] | null,
    sensitivity: number,
  ): JudgedSeries | SeriesFailure {
    const model = decodeMachineModel(machine.model);
    const width = machine.channels.length;
    if (model === null || model.channels.join('\u0000') !== machine.channels.join('\u0000')) {
      return { code: DETECTION_FAILURE_CODE, message: "The machine verdict's model does not match its channels." };
    }
    const points = readings.length / width;
    const columns = machine.channels.map((_, c) => {
      const column = new Float64Array(points);
      for (let t = 0; t < points; t++) column[t] = readings[t * width + c]!;
      return column;
    });
    let verdict;
    try {
      verdict = judgeMachine(model, columns, sensitivity);
    } catch (error) {
      log.error({ err: error, jobId: job.jobId, seriesIndex }, 'the machine model failed on a job series');
      return { code: DETECTION_FAILURE_CODE, message: 'The machine model failed on this series.' };
    }
    const rows: JobResultRow[] = new Array<JobResultRow>(points);
    for (let t = 0; t < points; t++) {
      const score = verdict.score[t]!;
      if (!Number.isFinite(score)) return { code: DETECTION_FAILURE_CODE, message: `The machine model's score is not a finite number at point ${t}.` };
      rows[t] = {
        seriesIndex,
        pointIndex: t,
        tsMs: timestamps === null ? null : timestamps[t]!,
        value: score,
        expectedValue: 0,
        upperMargin: verdict.threshold,
        lowerMargin: 0,
        isAnomaly: verdict.isAnomaly[t]!,
        isPositiveAnomaly: verdict.isAnomaly[t]!,
        isNegativeAnomaly: false,
        severity: verdict.severity[t]!,
      };
    }
    const episodes: JobEpisode[] = verdict.episodes.map((episode) => {
      let flaggedPoints = 0;
      for (let t = episode.start; t <= episode.end; t++) if (verdict.isAnomaly[t]) flaggedPoints++;
      return {
        ...jobEpisode(seriesIndex, timestamps, { ...episode, direction: 'positive', flaggedPoints }),
        drivers: episode.channels.map(({ channel, share }) => ({ channel, share })),
      };
    });
    // No period: the joint model is not seasonal.
    return { seriesIndex, period: 0, rows, episodes };
  }

  async function finishIfComplete(job: JobRecord, seriesDone: number): Promise<void> {
    if (seriesDone !== job.series.length) return;
    if (await deps.jobs.transition(job.orgId, job.jobId, ['queued', 'running'], { status: 'done', finishedAtMs: nowMs() })) {
      log.info({ jobId: job.jobId, orgId: job.orgId, points: job.pointsTotal }, 'job done');
    }
  }

  async function fail(job: JobRecord, seriesIndex: number, failure: SeriesFailure): Promise<void> {
    const machineId = job.series[seriesIndex]?.machineId ?? null;
    log.warn({ jobId: job.jobId, seriesIndex, ...failure }, 'job failed');
    await deps.jobs.transition(job.orgId, job.jobId, ['queued', 'running'], {
      status: 'failed',
      finishedAtMs: nowMs(),
      failure: { ...failure, seriesIndex, machineId },
    });
  }

  const consumer: BusConsumer = await deps.bus.consumer({ groupId: deps.groupId, topics: [topic] });
  await consumer.run((batch) => handleBatch(batch.messages));
  log.info({ topic, groupId: deps.groupId }, 'job worker started');
  return {
    seriesJudged: () => judgedCount,
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
