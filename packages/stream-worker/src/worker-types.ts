// The stream worker's public shapes: what startWorker needs (its dependencies and settings), what
// it reports per batch, and the handle it returns.
import type { AlertingStore, Store } from '@adp/store';
import type { Bus, CheckpointStore, Notifier, ResultStore, StreamingCodecs } from '@adp/streaming';
import type { DetectionConfig, WorkerAlertsConfig } from './config.js';
import type { WorkerModel } from './energies.js';

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
   * Milliseconds per phase. decode, detect (in the worker's thread), regimes and rows are this
   * batch's own work; with detection threads, detect is the wait for them; energy is its own inference
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
    /** This thread's work on the result rows, episodes and alerts, the windows and their checkpoints' encoding. */
    readonly rowsMs: number;
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

export const noopLogger: WorkerLogger = { debug() {}, info() {}, warn() {}, error() {} };
