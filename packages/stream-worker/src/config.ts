// The worker's configuration: read from the environment once at boot, validated, frozen and passed
// in. Nothing else in the worker reads process.env. An empty variable counts as unset.
import { DEFAULT_EPISODE_QUIET_POINTS } from '@adp/alerts';
import { MAX_SERIES_POINTS } from '@adp/domain';
import { STREAM_DEFAULTS } from '@adp/detection';
import { TOPICS } from '@adp/streaming';
import { envReader, KAFKA_NAME, KAFKA_NAME_TEXT, type LogLevel, readLogLevel, readServiceServers, type ServiceServers } from '@adp/platform';

export { LOG_LEVELS, type LogLevel } from '@adp/platform';

/** Default `WORKER_LIVE_JUDGES`. */
export const DEFAULT_LIVE_JUDGES = 1024;

/** What the detection loop needs; `startWorker` takes this part (tests build it directly). */
export interface DetectionConfig {
  /**
   * `WORKER_WINDOW_POINTS`: trailing window per machine, the judged point included: each point is
   * judged from the points before it in this window (last-point semantics). Default 720
   * (`STREAM_DEFAULTS` of @adp/detection, which the CLI's stream mode and the evaluation share). Range
   * 64 .. 8640. The engine's cost per point grows with it (about 0.17 ms at 720, 0.3 ms at 1441).
   */
  readonly windowPoints: number;
  /**
   * `WORKER_MEMORY_POINTS`: points of a machine's past the new-level alarm remembers, the judged
   * one included: the lowest and highest of those older than the window are its past range
   * (`pastRange` of last/detect), so a level the machine has been at within them is not new.
   * Default 8640 (`STREAM_DEFAULTS`: the most one last/detect request may carry); 0, or at most the window: none.
   * Range 0 .. 1,000,000. Costs two monotonic queues a machine (17 (point, value) pairs at the
   * median of NAB's dev files, 171 at most; in memory and in the checkpoint).
   */
  readonly memoryPoints: number;
  /** `WORKER_SENSITIVITY`: 0..99, as the vendor's `sensitivity`. Default 95. */
  readonly sensitivity: number;
  /** `WORKER_MAX_ANOMALY_RATIO`: in (0, 0.5), as the vendor's `maxAnomalyRatio`. Default 0.25. */
  readonly maxAnomalyRatio: number;
  /**
   * `WORKER_CHANGEPOINTS`: `true` to run the changepoint detector over each machine's window once
   * per batch (for the TRANSITION regime), for machines with a baseline. Default `true`.
   */
  readonly changePoints: boolean;
  /**
   * `WORKER_PREDICTOR_CACHE_SIZE`: machines whose baseline (and decoded predictor, about 1.9 MB
   * when fine-tuned) stay in memory. Default 256. Range 1 .. 100,000.
   */
  readonly predictorCacheSize: number;
  /**
   * `WORKER_BASELINE_REFRESH_MS`: a cached baseline (or the absence of one) is read again from
   * the store after this long, in case a change notification was missed. Default 60000. Range
   * 1000 .. 3,600,000.
   */
  readonly baselineRefreshMs: number;
}

/**
 * The worker process's configuration. The servers (`ServiceServers`: KAFKA_BROKERS, CLICKHOUSE_URL,
 * CLICKHOUSE_DATABASE, REDIS_URL, REDIS_KEY_PREFIX, REDIS_CHANNEL_PREFIX, DATA_DIR) are read as the
 * API reads them. A standalone worker without KAFKA_BROKERS consumes an in-process bus, which
 * only this process's tests publish to, and without CLICKHOUSE_URL or REDIS_URL keeps its results
 * or checkpoints in memory.
 */
export interface WorkerConfig extends DetectionConfig, ServiceServers {
  /** `WORKER_GROUP_ID`: Kafka consumer group; every replica of one deployment uses the same. Default `adp-worker`. */
  readonly groupId: string;
  /** `TELEMETRY_TOPIC`: default `adp.telemetry.v1`. */
  readonly telemetryTopic: string;
  /**
   * `JOBS_TOPIC`: the detection jobs' chunks (POST /v1/jobs), consumed by the job worker in this
   * process under the group `<WORKER_GROUP_ID>.jobs`; must equal the API's. Default `adp.jobs.v1`.
   */
  readonly jobsTopic: string;
  /** `DEAD_LETTER_TOPIC`: default `adp.telemetry.dead-letter.v1`. */
  readonly deadLetterTopic: string;
  /**
   * `TELEMETRY_PARTITIONS`: partitions the worker creates the telemetry topic with when it is
   * missing (the most workers of one group that can be busy at once). Default 12. Range 1 .. 1000.
   * An existing topic is left as it is.
   */
  readonly telemetryPartitions: number;
  /** `KAFKA_CLIENT_ID`: default `adp-worker`. */
  readonly kafkaClientId: string;
  /**
   * `KAFKA_SESSION_TIMEOUT_MS`: how long a worker that stopped heartbeating (killed) keeps its
   * partitions before the group gives them to the others. Default 10000. Range 6000 .. 300000
   * (the broker's group.min/max.session.timeout.ms).
   */
  readonly kafkaSessionTimeoutMs: number;
  /** `WORKER_MAX_BATCH_MESSAGES`: most messages judged and inserted as one batch. Default 5000. Range 1 .. 100,000. */
  readonly maxBatchMessages: number;
  /**
   * `WORKER_PARTITIONS_CONCURRENTLY`: partitions one worker handles at once. Their batches share
   * one ClickHouse insert and one Redis write, and the writes overlap detection. Default 12 (the
   * default partition count). Range 1 .. 64.
   */
  readonly partitionsConcurrently: number;
  /**
   * `WORKER_STORE_LINGER_MS`: how long a finished batch waits for other partitions' batches to
   * share its ClickHouse insert and Redis write, ms. Default 5. Range 0 .. 1000. Adds at most
   * this much lag; saves an insert round trip (and a ClickHouse part) per partition.
   */
  readonly storeLingerMs: number;
  /**
   * `WORKER_MAX_SERIES`: series windows kept in memory (least recently used dropped first; a
   * dropped one is read back from its checkpoint when its machine sends again). Default 50000,
   * about 17 KB each at the default window. Range 1 .. 10,000,000.
   */
  readonly maxSeriesInMemory: number;
  /**
   * `WORKER_DETECTION_THREADS`: threads that run the detection engine (pure CPU, about 0.04 ms
   * per point); 0 runs it on the worker's own thread. Default 0. Range 0 .. 64. Worth it where
   * the worker has cores to itself; see README for measurements.
   */
  readonly detectionThreads: number;
  /**
   * `WORKER_LIVE_JUDGES`: series whose detection judge stays alive between batches (about 50 KB
   * each at window 720; with detection threads, each keeps its share); the others restore theirs
   * from the window for each batch, which costs about as much as judging three points. Default
   * 1024. Range 0 (none) .. 100,000.
   */
  readonly liveJudges: number;
  /** `LOG_LEVEL`: pino level. Default `info`. */
  readonly logLevel: LogLevel;
  /** `SHUTDOWN_GRACE_MS`: on SIGTERM/SIGINT, how long the batch in flight gets before exit. Default 15000. */
  readonly shutdownGraceMs: number;
  /**
   * Alerts: each series' episodes opened and closed, published to `topic` (`ALERTS_TOPIC`,
   * default adp.alerts.v1) for the webhook dispatcher. An episode closes after
   * `quietPoints` judged points without a flag (`WORKER_EPISODE_QUIET_POINTS`, default 10,
   * 1 .. 100000). Null when `WORKER_ALERTS=false` (default true).
   */
  readonly alerts: WorkerAlertsConfig | null;
}

export interface WorkerAlertsConfig {
  readonly topic: string;
  readonly quietPoints: number;
}

export class WorkerConfigError extends Error {
  override readonly name = 'WorkerConfigError';
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`${variable} ${detail}`);
  }
}

/** Validates the environment once. Throws a WorkerConfigError naming the first invalid variable. */
export function loadWorkerConfig(env: Readonly<Record<string, string | undefined>>): Readonly<WorkerConfig> {
  const read = envReader(env, (variable, detail) => new WorkerConfigError(variable, detail));
  const kafkaName = (name: string, fallback: string): string => read.pattern(name, fallback, KAFKA_NAME, KAFKA_NAME_TEXT);
  const ratio = (name: string, fallback: number): number => {
    const raw = read.text(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!(value > 0 && value < 0.5)) throw new WorkerConfigError(name, `must be a number in (0, 0.5), got ${JSON.stringify(raw)}`);
    return value;
  };
  const logLevel = readLogLevel(read);

  return Object.freeze({
    ...readServiceServers(read),
    windowPoints: read.integer('WORKER_WINDOW_POINTS', STREAM_DEFAULTS.windowPoints, 64, MAX_SERIES_POINTS),
    memoryPoints: read.integer('WORKER_MEMORY_POINTS', STREAM_DEFAULTS.memoryPoints, 0, 1_000_000),
    sensitivity: read.integer('WORKER_SENSITIVITY', STREAM_DEFAULTS.sensitivity, 0, 99),
    maxAnomalyRatio: ratio('WORKER_MAX_ANOMALY_RATIO', STREAM_DEFAULTS.maxAnomalyRatio),
    changePoints: read.boolean('WORKER_CHANGEPOINTS', true),
    predictorCacheSize: read.integer('WORKER_PREDICTOR_CACHE_SIZE', 256, 1, 100_000),
    baselineRefreshMs: read.integer('WORKER_BASELINE_REFRESH_MS', 60_000, 1_000, 3_600_000),
    groupId: kafkaName('WORKER_GROUP_ID', 'adp-worker'),
    telemetryTopic: kafkaName('TELEMETRY_TOPIC', TOPICS.telemetry),
    jobsTopic: kafkaName('JOBS_TOPIC', TOPICS.jobs),
    deadLetterTopic: kafkaName('DEAD_LETTER_TOPIC', TOPICS.deadLetter),
    telemetryPartitions: read.integer('TELEMETRY_PARTITIONS', 12, 1, 1000),
    kafkaClientId: kafkaName('KAFKA_CLIENT_ID', 'adp-worker'),
    kafkaSessionTimeoutMs: read.integer('KAFKA_SESSION_TIMEOUT_MS', 10_000, 6_000, 300_000),
    maxBatchMessages: read.integer('WORKER_MAX_BATCH_MESSAGES', 5_000, 1, 100_000),
    partitionsConcurrently: read.integer('WORKER_PARTITIONS_CONCURRENTLY', 12, 1, 64),
    storeLingerMs: read.integer('WORKER_STORE_LINGER_MS', 5, 0, 1000),
    detectionThreads: read.integer('WORKER_DETECTION_THREADS', 0, 0, 64),
    liveJudges: read.integer('WORKER_LIVE_JUDGES', DEFAULT_LIVE_JUDGES, 0, 100_000),
    maxSeriesInMemory: read.integer('WORKER_MAX_SERIES', 50_000, 1, 10_000_000),
    logLevel,
    shutdownGraceMs: read.integer('SHUTDOWN_GRACE_MS', 15_000, 0, 300_000),
    alerts: readAlerts(),
  });

  function readAlerts(): WorkerAlertsConfig | null {
    const topic = kafkaName('ALERTS_TOPIC', TOPICS.alerts);
    const quietPoints = read.integer('WORKER_EPISODE_QUIET_POINTS', DEFAULT_EPISODE_QUIET_POINTS, 1, 100_000);
    return read.boolean('WORKER_ALERTS', true) ? Object.freeze({ topic, quietPoints }) : null;
  }
}
