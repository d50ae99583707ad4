// The streaming worker: one consumer of the telemetry topic in a consumer group. For each batch
// (the messages of one partition): decode and check each message (poison goes to the dead-letter
// topic), judge each series' new points with last-point detection over its trailing window, add
// the learned model's energies, z-scores and regimes where the series has a baseline, insert the
// results in one batch, save the windows as checkpoints, and only then let the bus commit the
// offsets (the handler resolves). A baselined series' verdict joins the learned scores (energy
// z-scores plus the baseline's shape scores) into the engine's (learned-verdict.ts). A failure
// anywhere rejects the batch, which the bus delivers again; nothing in memory changes until a
// batch has been stored, so a retry starts from the same state, and replays (points at or before
// a series' last judged timestamp) are skipped.
import { detectChangePointSeries, learnedScores, trailingShapeScorer, type LastResult, type SeriesInput, type ShapeReferenceData, type TrailingShapeScorer } from '@adp/detection';
import { robustNormalisation, WINDOW_POINTS } from '@adp/model';
import { classifyRegimes, echoFreeZScores, zScoresOf } from '@adp/regimes';
import { decodeEpisodeState, encodeEpisodeState, NO_EPISODE, type EpisodeState } from '@adp/alerts';
import type { AlertingStore, Store } from '@adp/store';
import {
  BASELINE_CHANGED_CHANNEL,
  FEEDBACK_CHANGED_CHANNEL,
  inSpan,
  isSeriesOfMachine,
  loadStreamingCodecs,
  streamingMetrics,
  type Bus,
  type BusConsumer,
  type BusProducer,
  type CheckpointStore,
  type IncomingBatch,
  type IncomingMessage,
  type Notifier,
  type OutgoingMessage,
  type ResultRow,
  type ResultStore,
  type StreamingCodecs,
  type Alert,
} from '@adp/streaming';
import { SpanKind } from '@opentelemetry/api';
import { FeedbackCache, raiseAlerts } from './alerting.js';
import { BaselineCache, type SeriesBaseline } from './baselines.js';
import { DEFAULT_LIVE_JUDGES, type DetectionConfig, type WorkerAlertsConfig } from './config.js';
import { batchEnergies, type EnergyRequest, type WorkerModel } from './energies.js';
import {
  appendToWindow,
  cloneWindow,
  decodeWindow,
  emptyWindow,
  encodeWindow,
  judgeHistory,
  windowCapacity,
  type SeriesWindow,
} from './series-window.js';
import { joinLearnedVerdicts } from './learned-verdict.js';
import {
  decodeMachineCheckpoint,
  encodeMachineCheckpoint,
  judgeMachinePoints,
  machineStateSeriesId,
  type ChannelPoint,
  type MachineCheckpoint,
  type MachineModelOf,
} from './machine-verdicts.js';
import { parseTelemetryMessage, type DeadLetterReason } from './telemetry.js';
import { startDetectorPool } from './detect-pool.js';
import { StoreCoalescer } from './store-coalescer.js';
import { judgeNewPoints, LiveJudges, type JudgeModelState, type JudgeResult, type JudgeSettings, type JudgeTask } from './stream-judge.js';
import { ENGINE_VERSION } from './version.js';

/** Structured logging, as pino's Logger provides it. */
export interface WorkerLogger {
  debug(object: object, message: string): void;
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
}

export interface WorkerRuntimeConfig extends DetectionConfig {
  /** Consumer group shared by the replicas. */
  readonly groupId: string;
  readonly telemetryTopic: string;
  readonly deadLetterTopic: string;
  /** Partitions of the telemetry topic when the worker has to create it. */
  readonly telemetryPartitions: number;
  /** Create the telemetry and dead-letter topics when missing. Default true. */
  readonly ensureTopics?: boolean;
  /** Series windows kept in memory (least recently used dropped; they reload from checkpoints). Default 50000. */
  readonly maxSeriesInMemory?: number;
  /**
   * How long a finished batch waits for the batches of other partitions to share its ClickHouse
   * insert and Redis write, ms. Default 5. 0 = only those finished in the same tick.
   */
  readonly storeLingerMs?: number;
  /**
   * Threads that run detection (0: the worker's own thread). The engine is pure CPU; threads
   * let a worker use more cores while its main thread fetches, decodes and writes. Default 0.
   */
  readonly detectionThreads?: number;
  /**
   * Series whose judge stays alive between batches (`LiveJudges`, about 50 KB each at window 720;
   * detection threads keep a share each); 0: none. Default DEFAULT_LIVE_JUDGES (1024).
   */
  readonly liveJudges?: number;
  /** Episodes and their alerts (the alerts topic, the quiet stretch); absent or null: no alerts. */
  readonly alerts?: WorkerAlertsConfig | null;
}

/** What one batch did and where its time went, for logs, the benchmark and tests. */
export interface BatchSummary {
  readonly topic: string;
  readonly partition: number;
  readonly messages: number;
  /** Result rows inserted (one per judged reading). */
  readonly rows: number;
  readonly deadLetters: number;
  /** Readings at or before their series' last judged timestamp (replays), skipped. */
  readonly replays: number;
  readonly series: number;
  /**
   * Milliseconds per phase. decode, detect (in the worker's thread) and regimes are this batch's
   * own work; with detection threads, detect is the wait for them; energy is its own inference
   * run; state and store are wall time, which with several partitions in flight includes the
   * others' work.
   * insertMs and checkpointMs are the write of the round this batch was stored in (shared with
   * the other batches of the round, `storedWith`).
   */
  readonly timings: {
    readonly decodeMs: number;
    readonly stateMs: number;
    readonly detectMs: number;
    /** onnxruntime's time for this batch's energies (in turn with the other batches). */
    readonly energyMs: number;
    /** z-scores, changepoints, regimes and shape scores. */
    readonly regimesMs: number;
    /** From handing the rows over to both writes being done (linger, the round's insert and checkpoints). */
    readonly storeMs: number;
    readonly insertMs: number;
    readonly checkpointMs: number;
    readonly totalMs: number;
  };
  /** Batches written in the same insert as this one (itself included). */
  readonly storedWith: number;
  /** Bus append time of each message to the end of the batch (after the insert and checkpoints), ms. */
  readonly lagMs: readonly number[];
}

export interface WorkerDeps {
  readonly bus: Bus;
  readonly results: ResultStore;
  readonly checkpoints: CheckpointStore;
  readonly notifier: Notifier;
  /** Where baselines are read (the embedded DuckDB store, or the ClickHouse one in scale-out mode). */
  readonly store: Pick<Store, 'getBaseline'> & { readonly alerting?: Pick<AlertingStore, 'listFeedback'> | undefined };
  /** Loads the learned model; called on the first series that has a baseline, once. */
  readonly loadModel: () => Promise<WorkerModel>;
  readonly config: WorkerRuntimeConfig;
  readonly logger?: WorkerLogger;
  /** Default: loaded from schemas/avro/. */
  readonly codecs?: StreamingCodecs;
  /** Clock, epoch ms. */
  readonly now?: () => number;
  /** Called after each stored batch. */
  readonly onBatch?: (summary: BatchSummary) => void;
}

export interface WorkerCounters {
  batches: number;
  messages: number;
  rows: number;
  deadLetters: number;
  replays: number;
  failedBatches: number;
  baselineNotifications: number;
  /** Deleted machines whose series this worker forgot (windows, checkpoints). */
  machineDeletions: number;
  /** Alerts published (episodes opened or closed, regime changes). */
  alerts: number;
}

export interface RunningWorker {
  /** Stops consuming, lets the batch in flight finish and commit, unsubscribes. Leaves the deps open. */
  stop(): Promise<void>;
  /** Counters since start (a snapshot). */
  counters(): Readonly<WorkerCounters>;
}

interface HeldWindow {
  window: SeriesWindow;
  /** The series' episode (alerts), checkpointed beside the window. */
  episode: EpisodeState;
  /** `<topic>:<partition>` the series arrived on. */
  readonly partitionKey: string;
}

interface PendingSeries {
  readonly orgId: string;
  readonly seriesId: string;
  readonly tsMs: number[];
  readonly values: number[];
}

interface Prepared {
  readonly pending: PendingSeries;
  readonly window: SeriesWindow;
  readonly baseline: SeriesBaseline | null;
  readonly newTsMs: number[];
  readonly newValues: number[];
  readonly task: JudgeTask | null;
}

interface Judged {
  readonly pending: PendingSeries;
  readonly window: SeriesWindow;
  readonly baseline: SeriesBaseline | null;
  readonly newTsMs: number[];
  readonly newValues: number[];
  /** One per new point. */
  readonly detections: LastResult[];
  /** The incremental judge's state after the new points (null: nothing was judged). */
  readonly judge: JudgeModelState | null;
  /** How many of the newest values the judge keeps as its history (`JudgeResult.historyLength`). */
  readonly historyLength: number | null;
  energies: Float64Array | null;
  zScores: Float64Array | null;
  /** The new points' z-scores as the regime rules judged them (spikes' echoes out); kept in the window. */
  judgedZScores: number[] | null;
  regimes: ResultRow['regime'][] | null;
  /** The new points' learned scores (z-scores plus the shape scores' excess); null without a baseline. */
  learnedScores: Float64Array | null;
  /** Where the newest point beyond the learned band was after the join, to keep with the window (-1: none). */
  lastLearnedExcessAt: number;
}

const noopLogger: WorkerLogger = { debug() {}, info() {}, warn() {}, error() {} };

const DETAIL_MAX_CHARS = 1000;
/** Longest stretch of detection work in this thread before it yields, ms. */
const SLICE_MS = 50;

/** Points of the window (and the new points after it) inside the model's warm-up: never elevated. */
function warmupPointsOf(window: SeriesWindow): number {
  const historyStart = window.seenPoints - window.values.length;
  return Math.max(0, WINDOW_POINTS - historyStart);
}

function seriesInput(values: readonly number[]): SeriesInput {
  return { timestampsMs: null, values, granularity: 'none', customInterval: 1, imputeMode: 'auto' };
}

/** Starts consuming. Resolves once the worker has joined its group and subscribed to baseline changes. */
export async function startWorker(deps: WorkerDeps): Promise<RunningWorker> {
  const { config } = deps;
  const logger = deps.logger ?? noopLogger;
  const now = deps.now ?? Date.now;
  const codecs = deps.codecs ?? loadStreamingCodecs();
  const capacity = windowCapacity(config.windowPoints);
  const maxSeries = config.maxSeriesInMemory ?? 50_000;
  const baselines = new BaselineCache(deps.store, config.predictorCacheSize, config.baselineRefreshMs, now);
  const alerting = config.alerts ?? null;
  const feedback = new FeedbackCache(deps.store.alerting ?? null, config.predictorCacheSize, config.baselineRefreshMs, now);
  /** A series' episode checkpoint: its own key beside the window's (`<group>.episodes/<org>/<series>`), so machine deletion finds it. */
  const episodeKey = (seriesKey: string): string => `${config.groupId}.episodes/${seriesKey}`;
  const windows = new Map<string, HeldWindow>();
  /**
   * Per shape reference (one per baselined series, as long as its baseline is cached), the
   * scorer that carries the shape join on from the series' previous batch.
   */
  const shapeScorers = new WeakMap<ShapeReferenceData, TrailingShapeScorer>();
  const shapeScorerOf = (reference: ShapeReferenceData): TrailingShapeScorer => {
    let scorer = shapeScorers.get(reference);
    if (scorer === undefined) {
      scorer = trailingShapeScorer(reference);
      shapeScorers.set(reference, scorer);
    }
    return scorer;
  };
  /** Per partition, the offset the next batch should start at; another start means the state may be stale. */
  const nextOffsets = new Map<string, bigint>();
  const counters: WorkerCounters = {
    batches: 0,
    messages: 0,
    rows: 0,
    deadLetters: 0,
    replays: 0,
    failedBatches: 0,
    baselineNotifications: 0,
    machineDeletions: 0,
    alerts: 0,
  };
  /**
   * Deleted machines, numbered: a batch that was under way when one arrived must not put the
   * machine's windows back (in memory or as checkpoints) after the deletion removed them.
   */
  let deletionCount = 0;
  const recentDeletions: { readonly seq: number; readonly orgId: string; readonly machineId: string }[] = [];
  const RECENT_DELETIONS_KEPT = 1024;
  const deletedSince = (seq: number, seriesKey: string): boolean =>
    recentDeletions.some((d) => d.seq > seq && seriesKey.startsWith(`${d.orgId}/`) && isSeriesOfMachine(seriesKey.slice(d.orgId.length + 1), d.machineId));
  const threads = config.detectionThreads ?? 0;
  const liveJudges = config.liveJudges ?? DEFAULT_LIVE_JUDGES;
  const judgeSettings: JudgeSettings = {
    windowPoints: config.windowPoints,
    memoryPoints: config.memoryPoints,
    maxAnomalyRatio: config.maxAnomalyRatio,
    // Each detection thread keeps its share of the live judges.
    liveJudges: threads > 0 ? Math.ceil(liveJudges / threads) : 0,
  };
  let model: Promise<WorkerModel> | undefined;
  let modelTurn: Promise<void> = Promise.resolve();
  const sink = new StoreCoalescer(deps.results, deps.checkpoints, {
    lingerMs: config.storeLingerMs ?? 5,
    maxRows: 50_000,
    aroundInsert: (rows, insert) =>
      inSpan('results.insert', { 'db.system': 'clickhouse', 'db.operation': 'INSERT', 'adp.rows': rows }, insert, undefined, SpanKind.CLIENT),
  });

  function loadModel(): Promise<WorkerModel> {
    model ??= deps.loadModel().catch((error: unknown) => {
      model = undefined; // a failed load is retried with the next batch
      throw error;
    });
    return model;
  }

  if (config.ensureTopics ?? true) {
    await deps.bus.ensureTopics([
      { name: config.telemetryTopic, partitions: config.telemetryPartitions },
      { name: config.deadLetterTopic, partitions: 1 },
      ...(alerting ? [{ name: alerting.topic, partitions: config.telemetryPartitions }] : []),
    ]);
  }

  const unsubscribe = await deps.notifier.subscribe(BASELINE_CHANGED_CHANNEL, (message) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(message);
    } catch {
      logger.warn({ message: message.slice(0, 200) }, 'ignoring a baseline notification that is not JSON');
      return;
    }
    const { orgId, machineId, deleted } = (parsed ?? {}) as { orgId?: unknown; machineId?: unknown; deleted?: unknown };
    if (typeof orgId !== 'string' || typeof machineId !== 'string') {
      logger.warn({ message: message.slice(0, 200) }, 'ignoring a baseline notification without orgId and machineId');
      return;
    }
    counters.baselineNotifications++;
    const dropped = baselines.drop(orgId, machineId);
    logger.info({ orgId, machineId, dropped }, 'baseline changed: cached predictor dropped');
    if (deleted === true) forgetMachine(orgId, machineId);
  });

  const unsubscribeFeedback = await deps.notifier.subscribe(FEEDBACK_CHANGED_CHANNEL, (message) => {
    try {
      const { orgId, machineId } = JSON.parse(message) as { orgId?: unknown; machineId?: unknown };
      if (typeof orgId === 'string' && typeof machineId === 'string') feedback.drop(orgId, machineId);
    } catch {
      logger.warn({ message: message.slice(0, 200) }, 'ignoring a feedback notification that is not JSON');
    }
  });

  /** A deleted machine: its series' windows go, and its checkpoints (the API removed them too; a batch may have saved since). */
  function forgetMachine(orgId: string, machineId: string): void {
    counters.machineDeletions++;
    recentDeletions.push({ seq: ++deletionCount, orgId, machineId });
    if (recentDeletions.length > RECENT_DELETIONS_KEPT) recentDeletions.shift();
    let forgotten = 0;
    for (const key of [...windows.keys()]) {
      if (deletedSince(deletionCount - 1, key)) {
        windows.delete(key);
        forgotten++;
      }
    }
    deps.checkpoints
      .deleteMachine(orgId, machineId)
      .then((checkpoints) => logger.info({ orgId, machineId, windows: forgotten, checkpoints }, 'machine deleted: its series forgotten'))
      .catch((err: unknown) => logger.warn({ err, orgId, machineId }, "machine deleted: could not delete its checkpoints"));
  }

  const detector = threads > 0 ? startDetectorPool(threads) : null;
  const live = detector === null && liveJudges > 0 ? new LiveJudges(liveJudges) : undefined;
  let producer: BusProducer | undefined;
  let consumer: BusConsumer | undefined;
  try {
    producer = await deps.bus.producer();
    consumer = await deps.bus.consumer({ groupId: config.groupId, topics: [config.telemetryTopic] });
  } catch (error) {
    await unsubscribe().catch(() => undefined);
    await unsubscribeFeedback().catch(() => undefined);
    await producer?.close().catch(() => undefined);
    await detector?.close();
    throw error;
  }
  // Sends the dead letters and, with alerts on, the alerts.
  const outbound = producer;

  function deadLetter(message: IncomingMessage, reason: DeadLetterReason, detail: string): OutgoingMessage {
    return {
      key: message.key === null ? null : message.key.toString('utf8'),
      value: codecs.deadLetter.encode({
        original_value: message.value,
        original_key: message.key,
        reason,
        detail: detail.slice(0, DETAIL_MAX_CHARS),
        source_topic: message.topic,
        source_partition: message.partition,
        source_offset: Number(message.offset),
        failed_at: now(),
      }),
      headers: { ...message.headers },
    };
  }

  async function loadWindows(keys: readonly string[], partitionKey: string, episodes: Map<string, EpisodeState>): Promise<Map<string, SeriesWindow>> {
    const out = new Map<string, SeriesWindow>();
    const missing: string[] = [];
    for (const key of keys) {
      const held = windows.get(key);
      if (held) {
        out.set(key, cloneWindow(held.window));
        episodes.set(key, held.episode);
      } else missing.push(key);
    }
    if (missing.length > 0) {
      const stored = await deps.checkpoints.load(
        missing.flatMap((key) => (alerting ? [`${config.groupId}/${key}`, episodeKey(key)] : [`${config.groupId}/${key}`])),
      );
      for (const key of missing) {
        episodes.set(key, alerting ? decodeEpisodeState(stored.get(episodeKey(key))) : NO_EPISODE);
        const bytes = stored.get(`${config.groupId}/${key}`);
        let window = bytes ? decodeWindow(bytes, capacity) : null;
        if (bytes && !window) {
          logger.warn({ series: key, partition: partitionKey }, 'unreadable checkpoint ignored; the series starts afresh');
        }
        window ??= emptyWindow();
        out.set(key, window);
      }
    }
    return out;
  }

  /** Drops replays and builds the detection task of series `key` (null: nothing new). */
  function prepare(key: string, pending: PendingSeries, window: SeriesWindow, baseline: SeriesBaseline | null): Prepared {
    // Replays and out-of-order points: anything at or before the newest judged timestamp.
    const newTsMs: number[] = [];
    const newValues: number[] = [];
    let newest = window.lastJudgedTsMs;
    for (let i = 0; i < pending.tsMs.length; i++) {
      const ts = pending.tsMs[i]!;
      if (ts <= newest) continue;
      newest = ts;
      newTsMs.push(ts);
      newValues.push(pending.values[i]!);
    }
    const task: JudgeTask | null =
      newValues.length === 0
        ? null
        : {
            context: judgeHistory(window),
            newValues,
            seenPoints: window.seenPoints,
            sensitivity: baseline?.sensitivity ?? config.sensitivity,
            judge: window.judge,
            series: key,
          };
    return { pending, window, baseline, newTsMs, newValues, task };
  }

  /** Energies, z-scores and regimes of the series with a baseline; how long inference and regimes took, ms. */
  async function addEnergies(judged: readonly Judged[]): Promise<{ inferenceMs: number; regimesMs: number }> {
    const withBaseline = judged.filter((j) => j.baseline !== null && j.newValues.length > 0);
    if (withBaseline.length === 0) return { inferenceMs: 0, regimesMs: 0 };
    const current = await loadModel();
    const requests: EnergyRequest[] = withBaseline.map((j) => ({
      context: j.window.values,
      newValues: j.newValues,
      weights: j.baseline!.weights,
      normalisation: j.baseline!.normalisation ?? robustNormalisation(j.window.values.concat(j.newValues)),
      historyIndex: j.window.seenPoints,
    }));
    // One batch's inference at a time: onnxruntime's threads are few (and the cores are shared),
    // so concurrent runs only interleave; in turn, each batch's time is its own.
    const turn = modelTurn;
    let release!: () => void;
    modelTurn = new Promise<void>((resolve) => (release = resolve));
    await turn;
    const started = performance.now();
    // Per series: the z-scores the regime rules judge, over the kept window and the new points.
    const judgedZ: Float64Array[] = [];
    let inferenceMs: number;
    try {
      const energies = await batchEnergies(current, requests);
      for (const [index, j] of withBaseline.entries()) {
        const baseline = j.baseline!;
        const energy = energies[index]!;
        const z = zScoresOf(energy, baseline.energyMean, baseline.energyStd);
        j.energies = energy;
        j.zScores = z;
        // The window's z-scores are kept as judged (echoes out); the new points' lose the echoes
        // of spikes within the model's window before them, as POST /v1/detect judges a series
        // (apps/api/src/machines/regimes.ts): one more model call for a series with such a spike.
        const windowLength = j.window.values.length;
        const request = requests[index]!;
        judgedZ.push(
          await echoFreeZScores({
            zScores: j.window.zScores.concat(Array.from(z)),
            values: j.window.values.concat(j.newValues),
            warmupPoints: warmupPointsOf(j.window),
            reach: WINDOW_POINTS,
            from: windowLength,
            repairedZScores: async (repaired) => {
              const [again] = await batchEnergies(current, [
                { ...request, context: repaired.slice(0, windowLength), newValues: repaired.slice(windowLength) },
              ]);
              const out = new Float64Array(repaired.length).fill(Number.NaN);
              out.set(zScoresOf(again!, baseline.energyMean, baseline.energyStd), windowLength);
              return out;
            },
          }),
        );
      }
      inferenceMs = performance.now() - started;
    } finally {
      release();
    }
    const regimesStarted = performance.now();
    withBaseline.forEach((j, index) => {
      // Regimes over the kept window and the new points: an episode that began in an earlier
      // batch is still one episode. Points of the model's warm-up are never elevated.
      const windowLength = j.window.values.length;
      const allZ = judgedZ[index]!;
      j.judgedZScores = Array.from(allZ.subarray(windowLength));
      const allValues = j.window.values.concat(j.newValues);
      let changePoints: boolean[] | null = null;
      if (config.changePoints && allValues.length >= 12) {
        try {
          const period = j.detections[j.detections.length - 1]?.period ?? 0;
          changePoints = detectChangePointSeries(seriesInput(allValues), { period }).isChangePoint;
        } catch {
          changePoints = null; // a window the changepoint detector refuses has none
        }
      }
      const regimes = classifyRegimes({ zScores: allZ, changePoints, warmupPoints: warmupPointsOf(j.window) });
      j.regimes = regimes.slice(windowLength);
      // The learned scores the verdict joins: the z-scores the rows report, plus each point's shape
      // score where the baseline keeps shapes (the subsequence ending at the point: a stream has
      // nothing after it), as POST /v1/detect scores a request's points.
      const reference = j.baseline!.shapeReference;
      j.learnedScores =
        reference === null ? Float64Array.from(j.zScores!) : learnedScores(j.zScores!, shapeScorerOf(reference).scores(allValues, windowLength));
    });
    return { inferenceMs, regimesMs: performance.now() - regimesStarted };
  }

  /**
   * The machines of a batch that have a joint model of their channels, with the checkpoint of
   * their stream (read each batch: it is small, and a rebalance or a retry then needs nothing else).
   */
  async function machineStates(
    candidates: readonly { orgId: string; machineId: string; points: ChannelPoint[] }[],
  ): Promise<{ orgId: string; machineId: string; points: ChannelPoint[]; machine: MachineModelOf; checkpoint: MachineCheckpoint | null; alertEpisode: EpisodeState }[]> {
    if (candidates.length === 0) return [];
    const found = await Promise.all(candidates.map(async (candidate) => ({ ...candidate, machine: (await baselines.get(candidate.orgId, candidate.machineId))?.machine ?? null })));
    const modelled = found.filter((candidate): candidate is typeof candidate & { machine: MachineModelOf } => candidate.machine !== null);
    if (modelled.length === 0) return [];
    const keyOf = (candidate: { orgId: string; machineId: string }): string => `${config.groupId}/${candidate.orgId}/${machineStateSeriesId(candidate.machineId)}`;
    // The machine's alert episodes follow its own rows, under its own id.
    const alertKeyOf = (candidate: { orgId: string; machineId: string }): string => episodeKey(`${candidate.orgId}/${candidate.machineId}`);
    const stored = await deps.checkpoints.load(modelled.flatMap((candidate) => (alerting ? [keyOf(candidate), alertKeyOf(candidate)] : [keyOf(candidate)])));
    return modelled.map((candidate) => ({
      ...candidate,
      checkpoint: decodeMachineCheckpoint(stored.get(keyOf(candidate))),
      alertEpisode: alerting ? decodeEpisodeState(stored.get(alertKeyOf(candidate))) : NO_EPISODE,
    }));
  }

  async function handle(batch: IncomingBatch): Promise<void> {
    const startedMs = performance.now();
    const deletionsAtStart = deletionCount;
    const partitionKey = `${batch.topic}:${batch.partition}`;
    const first = batch.messages[0];
    const last = batch.messages[batch.messages.length - 1];
    if (!first || !last) return;

    // Another start than where the last batch ended (a rebalance moved the partition away and
    // back, or a failed batch is retried): the windows in memory may be behind the checkpoints.
    if (nextOffsets.get(partitionKey) !== BigInt(first.offset)) {
      for (const [key, held] of windows) if (held.partitionKey === partitionKey) windows.delete(key);
    }

    // 1. Decode and check.
    const deadLetters: OutgoingMessage[] = [];
    const reasons = new Map<string, number>();
    const pendingBySeries = new Map<string, PendingSeries>();
    // Multi-channel machines' points, per `<org>/<machine>`: their machine verdict (machine-verdicts.ts).
    const channelPoints = new Map<string, { orgId: string; machineId: string; points: ChannelPoint[] }>();
    for (const message of batch.messages) {
      const parsed = parseTelemetryMessage(codecs, message);
      if (!parsed.ok) {
        deadLetters.push(deadLetter(message, parsed.reason, parsed.detail));
        reasons.set(parsed.reason, (reasons.get(parsed.reason) ?? 0) + 1);
        continue;
      }
      for (const point of parsed.points) {
        const channelPrefix = `${parsed.machineId}:`;
        if (point.readings.some((reading) => reading.seriesId.startsWith(channelPrefix))) {
          const machineKey = `${parsed.orgId}/${parsed.machineId}`;
          let machine = channelPoints.get(machineKey);
          if (!machine) {
            machine = { orgId: parsed.orgId, machineId: parsed.machineId, points: [] };
            channelPoints.set(machineKey, machine);
          }
          machine.points.push({
            tsMs: point.tsMs,
            readings: new Map(point.readings.map((reading) => [reading.seriesId.slice(channelPrefix.length), reading.value])),
          });
        }
        for (const reading of point.readings) {
          const key = `${parsed.orgId}/${reading.seriesId}`;
          let pending = pendingBySeries.get(key);
          if (!pending) {
            pending = { orgId: parsed.orgId, seriesId: reading.seriesId, tsMs: [], values: [] };
            pendingBySeries.set(key, pending);
          }
          pending.tsMs.push(point.tsMs);
          pending.values.push(reading.value);
        }
      }
    }
    const decodedMs = performance.now();

    // 2. Windows (memory or checkpoints) and baselines.
    const keys = [...pendingBySeries.keys()];
    const loadedEpisodes = new Map<string, EpisodeState>();
    const [loaded, seriesBaselines, verdicts] = await Promise.all([
      loadWindows(keys, partitionKey, loadedEpisodes),
      Promise.all(keys.map((key) => {
        const pending = pendingBySeries.get(key)!;
        return baselines.get(pending.orgId, pending.seriesId);
      })),
      // The series' feedback (cached like baselines), read beside them rather than one by one later.
      alerting
        ? Promise.all(keys.map((key) => {
            const pending = pendingBySeries.get(key)!;
            return feedback.verdictOf(pending.orgId, pending.seriesId);
          }))
        : null,
    ]);
    const machines = await machineStates([...channelPoints.values()]);
    const stateMs = performance.now();

    // 3. Detection (here or in the detection threads), then 4. energies, z-scores and regimes.
    const prepared = keys.map((key, index) => prepare(key, pendingBySeries.get(key)!, loaded.get(key)!, seriesBaselines[index]!));
    const tasks = prepared.flatMap((p) => (p.task ? [p.task] : []));
    // In this thread the engine runs in slices of about SLICE_MS, yielding in between so the bus
    // can heartbeat and other partitions' writes complete; the time counted is this batch's own.
    // With threads, the batch waits for them.
    let results: JudgeResult[];
    let detectMs = 0;
    if (detector) {
      const started = performance.now();
      results = tasks.length === 0 ? [] : await detector.judge(tasks, judgeSettings);
      detectMs = performance.now() - started;
    } else {
      results = [];
      let sliceStarted = performance.now();
      for (const task of tasks) {
        results.push(judgeNewPoints(task, judgeSettings, live));
        const now = performance.now();
        if (now - sliceStarted >= SLICE_MS) {
          detectMs += now - sliceStarted;
          await new Promise((resolve) => setImmediate(resolve));
          sliceStarted = performance.now();
        }
      }
      detectMs += performance.now() - sliceStarted;
    }
    let nextResult = 0;
    const judged: Judged[] = prepared.map((p) => {
      const result: Pick<Judged, 'detections' | 'judge' | 'historyLength'> = p.task
        ? results[nextResult++]!
        : { detections: [], judge: null, historyLength: null };
      return {
        pending: p.pending,
        window: p.window,
        baseline: p.baseline,
        newTsMs: p.newTsMs,
        newValues: p.newValues,
        detections: result.detections,
        judge: result.judge,
        historyLength: result.historyLength,
        energies: null,
        zScores: null,
        judgedZScores: null,
        regimes: null,
        learnedScores: null,
        lastLearnedExcessAt: -1,
      };
    });
    // Awaited only when there is inference to do: an await hands the thread to the other
    // partitions' batches, whose work would then count as this one's.
    const { inferenceMs, regimesMs } = judged.some((j) => j.baseline !== null && j.newValues.length > 0)
      ? await addEnergies(judged)
      : { inferenceMs: 0, regimesMs: 0 };

    // 5. Rows.
    const writtenAtMs = now();
    const rows: ResultRow[] = [];
    let replays = 0;
    const engineOnly = `engine-${ENGINE_VERSION}`;
    const withModel = model ? `${engineOnly}+${(await model).modelVersion}` : engineOnly;
    for (const j of judged) {
      replays += j.pending.tsMs.length - j.newTsMs.length;
      const verdict =
        j.learnedScores === null
          ? { detections: j.detections, lastExcessAt: -1 }
          : joinLearnedVerdicts({
              values: j.newValues,
              detections: j.detections,
              scores: j.learnedScores,
              lastExcessAt: j.window.lastLearnedExcessAt,
              historyIndex: j.window.seenPoints,
              sensitivity: j.baseline?.sensitivity ?? config.sensitivity,
            });
      j.lastLearnedExcessAt = verdict.lastExcessAt;
      for (let k = 0; k < j.newValues.length; k++) {
        const detection = verdict.detections[k]!;
        const energy = j.energies?.[k];
        const z = j.zScores?.[k];
        rows.push({
          orgId: j.pending.orgId,
          machineId: j.pending.seriesId,
          tsMs: j.newTsMs[k]!,
          value: j.newValues[k]!,
          expectedValue: detection.expectedValue,
          upperMargin: detection.upperMargin,
          lowerMargin: detection.lowerMargin,
          isAnomaly: detection.isAnomaly,
          isPositiveAnomaly: detection.isPositiveAnomaly,
          isNegativeAnomaly: detection.isNegativeAnomaly,
          severity: detection.severity,
          energy: energy !== undefined && Number.isFinite(energy) ? energy : null,
          zScore: z !== undefined && Number.isFinite(z) ? z : null,
          regime: j.regimes?.[k] ?? 'UNKNOWN',
          modelVersion: j.baseline ? withModel : engineOnly,
          writtenAtMs,
        });
      }
    }

    const machineCheckpoints = new Map<string, Buffer>();
    const machineRows: { orgId: string; machineId: string; rows: ResultRow[]; drivers: string[]; alertEpisode: EpisodeState }[] = [];
    for (const { orgId, machineId, points, machine, checkpoint, alertEpisode } of machines) {
      const judgedMachine = judgeMachinePoints({
        orgId,
        machineId,
        points,
        machine,
        checkpoint,
        defaultSensitivity: config.sensitivity,
        modelVersion: `machine-${machine.model.kind}`,
        writtenAtMs,
      });
      rows.push(...judgedMachine.rows);
      machineRows.push({ orgId, machineId, rows: judgedMachine.rows, drivers: judgedMachine.drivers, alertEpisode });
      machineCheckpoints.set(`${config.groupId}/${orgId}/${machineStateSeriesId(machineId)}`, encodeMachineCheckpoint(judgedMachine.checkpoint));
    }

    // 5b. Episodes and their alerts, from each series' new rows (feedback decides which flags count).
    const alerts: Alert[] = [];
    const episodesAfter = new Map<string, EpisodeState>();
    if (alerting) {
      let from = 0;
      // `judged` is in the order of `keys` (prepared from them), so index i is key i's.
      for (const [index, j] of judged.entries()) {
        const seriesRows = rows.slice(from, from + j.newValues.length);
        from += j.newValues.length;
        if (seriesRows.length === 0) continue;
        const key = `${j.pending.orgId}/${j.pending.seriesId}`;
        const before = loadedEpisodes.get(key) ?? NO_EPISODE;
        const verdict = verdicts?.[index] ?? null;
        const raised = raiseAlerts(j.pending.orgId, j.pending.seriesId, before, seriesRows, { quietPoints: alerting.quietPoints, verdict, raisedAtMs: writtenAtMs });
        alerts.push(...raised.alerts);
        if (raised.state !== before) episodesAfter.set(key, raised.state);
      }
      // A multi-channel machine's own episodes (its joint model's flags), naming the channels that drove them.
      for (const machine of machineRows) {
        if (machine.rows.length === 0) continue;
        const raised = raiseAlerts(machine.orgId, machine.machineId, machine.alertEpisode, machine.rows, { quietPoints: alerting.quietPoints, verdict: null, raisedAtMs: writtenAtMs });
        alerts.push(...raised.alerts.map((alert) => ({ ...alert, channels: machine.drivers })));
        if (raised.state !== machine.alertEpisode) episodesAfter.set(`${machine.orgId}/${machine.machineId}`, raised.state);
      }
    }

    // 6. Dead letters, then results and checkpoints (in one write with the other partitions'
    // batches that finish now): all before the handler resolves and the bus commits.
    if (deadLetters.length > 0) {
      await outbound.send(config.deadLetterTopic, deadLetters);
      logger.warn(
        { topic: batch.topic, partition: batch.partition, deadLetters: deadLetters.length, reasons: Object.fromEntries(reasons) },
        'poison messages sent to the dead-letter topic',
      );
    }
    if (alerting && alerts.length > 0) {
      // On the topic before the checkpoints: a crash in between replays the batch, which raises
      // the same alerts (same event ids) again rather than losing them.
      await outbound.send(
        alerting.topic,
        alerts.map((alert) => ({ key: `${alert.organization}/${alert.machine_id}`, value: codecs.alert.encode(alert) })),
      );
      counters.alerts += alerts.length;
    }
    const storeStartedMs = performance.now();
    const updated = new Map<string, SeriesWindow>();
    const checkpoint = new Map<string, Buffer>();
    for (const j of judged) {
      if (j.newValues.length === 0) continue;
      const key = `${j.pending.orgId}/${j.pending.seriesId}`;
      const zScores = j.judgedZScores ?? new Array<number>(j.newValues.length).fill(Number.NaN);
      appendToWindow(j.window, { values: j.newValues, timestampsMs: j.newTsMs, zScores }, capacity, j.historyLength ?? capacity);
      j.window.judge = j.judge;
      j.window.lastLearnedExcessAt = j.lastLearnedExcessAt;
      updated.set(key, j.window);
      checkpoint.set(`${config.groupId}/${key}`, encodeWindow(j.window));
    }
    for (const [key, bytes] of machineCheckpoints) checkpoint.set(key, bytes);
    for (const [key, episode] of episodesAfter) checkpoint.set(episodeKey(key), encodeEpisodeState(episode));
    const stored = await sink.store(rows, checkpoint);
    const doneMs = performance.now();

    // 7. Stored: now the state may change, except for machines deleted meanwhile.
    const deletedMeanwhile = (key: string): boolean => deletionCount !== deletionsAtStart && deletedSince(deletionsAtStart, key);
    for (const [key, window] of updated) {
      windows.delete(key);
      if (!deletedMeanwhile(key)) windows.set(key, { window, partitionKey, episode: episodesAfter.get(key) ?? loadedEpisodes.get(key) ?? NO_EPISODE });
    }
    // Series loaded but with nothing new keep their state as it was (it came from memory or a checkpoint).
    for (const key of keys) {
      if (updated.has(key) || windows.has(key) || deletedMeanwhile(key)) continue;
      windows.set(key, { window: loaded.get(key)!, partitionKey, episode: loadedEpisodes.get(key) ?? NO_EPISODE });
    }
    if (deletionCount !== deletionsAtStart) {
      // The checkpoints this batch saved for them went in after the deletion's.
      for (const d of recentDeletions) {
        if (d.seq > deletionsAtStart) await deps.checkpoints.deleteMachine(d.orgId, d.machineId);
      }
    }
    while (windows.size > maxSeries) {
      const oldest = windows.keys().next();
      if (oldest.done) break;
      windows.delete(oldest.value);
    }
    nextOffsets.set(partitionKey, BigInt(last.offset) + 1n);

    const endMs = now();
    const lagMs = batch.messages.map((message) => endMs - message.timestampMs);
    counters.batches++;
    counters.messages += batch.messages.length;
    counters.rows += rows.length;
    counters.deadLetters += deadLetters.length;
    counters.replays += replays;
    const attributes = { 'messaging.destination.name': batch.topic };
    streamingMetrics.recordBatch(batch.messages.length, attributes);
    streamingMetrics.recordPoints(rows.length, attributes);
    if (inferenceMs > 0) streamingMetrics.recordInferenceMs(inferenceMs, attributes);
    for (const lag of lagMs) streamingMetrics.recordLagMs(lag, attributes);
    const summary: BatchSummary = {
      topic: batch.topic,
      partition: batch.partition,
      messages: batch.messages.length,
      rows: rows.length,
      deadLetters: deadLetters.length,
      replays,
      series: keys.length,
      storedWith: stored.batches,
      timings: {
        decodeMs: decodedMs - startedMs,
        stateMs: stateMs - decodedMs,
        detectMs,
        energyMs: inferenceMs,
        regimesMs,
        storeMs: doneMs - storeStartedMs,
        insertMs: stored.insertMs,
        checkpointMs: stored.checkpointMs,
        totalMs: doneMs - startedMs,
      },
      lagMs,
    };
    logger.debug(
      { partition: batch.partition, messages: summary.messages, rows: summary.rows, replays, timings: summary.timings },
      'batch stored',
    );
    deps.onBatch?.(summary);
  }

  const runningConsumer = consumer;
  const consume = async (batch: IncomingBatch): Promise<void> => {
    try {
      await inSpan(
        'telemetry.consume',
        {
          'messaging.system': 'kafka',
          'messaging.operation': 'process',
          'messaging.destination.name': batch.topic,
          'messaging.destination.partition.id': String(batch.partition),
          'messaging.batch.message_count': batch.messages.length,
        },
        () => handle(batch),
        batch.messages[0]?.headers,
        SpanKind.CONSUMER,
      );
    } catch (error) {
      counters.failedBatches++;
      logger.error(
        { err: error, topic: batch.topic, partition: batch.partition, offset: batch.messages[0]?.offset, messages: batch.messages.length },
        'batch failed; it will be delivered again',
      );
      throw error;
    }
  };
  try {
    await runningConsumer.run(consume);
  } catch (error) {
    await runningConsumer.close().catch(() => undefined);
    await unsubscribe().catch(() => undefined);
    await unsubscribeFeedback().catch(() => undefined);
    await outbound.close().catch(() => undefined);
    await detector?.close();
    throw error;
  }
  logger.info(
    { groupId: config.groupId, topic: config.telemetryTopic, windowPoints: config.windowPoints, detectionThreads: threads },
    'worker consuming',
  );

  let stopping: Promise<void> | undefined;
  return {
    stop(): Promise<void> {
      stopping ??= (async () => {
        await runningConsumer.close();
        await unsubscribe().catch(() => undefined);
        await unsubscribeFeedback().catch(() => undefined);
        await outbound.close().catch(() => undefined);
        await detector?.close();
        live?.clear();
        logger.info({ ...counters }, 'worker stopped');
      })();
      return stopping;
    },
    counters: () => ({ ...counters }),
  };
}
