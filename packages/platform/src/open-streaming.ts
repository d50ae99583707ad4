// Picks each streaming piece from configuration: Kafka, ClickHouse and Redis when their address is
// given, the in-process bus and the in-memory stores otherwise. Everything above this (the API,
// the worker, the integration tests) sees only the contracts, so one code path serves `npm start`
// and a scaled-out deployment, and a mix (e.g. Kafka with the embedded stores) works too.
import path from 'node:path';
import {
  createInProcessBus,
  createKafkaBus,
  createMemoryNotifier,
  createRedisNotifier,
  openDurableInProcessBus,
  StreamingError,
  type Bus,
  type CheckpointStore,
  type DependencyCheck,
  type DurableInProcessBusOptions,
  type InProcessBus,
  type KafkaBusOptions,
  type Notifier,
  type ResultStore,
} from '@adp/streaming';
import {
  createClickHouseJobStore,
  createClickHouseResultStore,
  createDuckDbCheckpointStore,
  createDuckDbJobStore,
  createDuckDbResultStore,
  createMemoryCheckpointStore,
  createMemoryJobStore,
  createMemoryResultStore,
  createRedisCheckpointStore,
  type JobStore,
} from '@adp/store';

export interface StreamingConfig {
  /** `host:port` brokers; unset or empty = the in-process bus. */
  readonly kafkaBrokers?: readonly string[];
  /** `http://host:8123`; unset = results in memory. */
  readonly clickhouseUrl?: string;
  /** Database of the results table. Default `adp`. */
  readonly clickhouseDatabase?: string;
  /** `redis://host:6379`; unset = checkpoints and notifications in memory. */
  readonly redisUrl?: string;
  /**
   * Directory of the embedded deployment: where `embeddedResults: 'duckdb'` keeps `results.duckdb`
   * and `embeddedBus: 'durable'` its log (`bus/`).
   */
  readonly dataDir?: string;
  /**
   * The bus without Kafka: `memory` (default; what is not consumed is gone on restart) or `durable`
   * (an fsync'd log per partition and the groups' committed offsets under `<dataDir>/bus`, which
   * it then requires: a send resolves once its messages are on disk, and a reopened bus delivers
   * what was not committed).
   */
  readonly embeddedBus?: 'memory' | 'durable';
  /**
   * Checkpoints without Redis: `memory` (default; a restarted worker starts each series' window
   * afresh) or `duckdb` (a `checkpoints.duckdb` file under `dataDir`, which it then requires).
   */
  readonly embeddedCheckpoints?: 'memory' | 'duckdb';
  /**
   * Results without ClickHouse: `memory` (default; gone on restart, grows with the stream) or
   * `duckdb` (a `results.duckdb` file under `dataDir`, which it then requires; one process per file).
   */
  readonly embeddedResults?: 'memory' | 'duckdb';
  /**
   * Detection jobs without ClickHouse (with CLICKHOUSE_URL they go to its job tables): `memory` (default; gone on restart) or `duckdb` (a
   * `jobs.duckdb` file under `dataDir`, which it then requires; one process per file).
   */
  readonly embeddedJobs?: 'memory' | 'duckdb';
  /** kafkajs client id. Default `adp`. */
  readonly kafkaClientId?: string;
  /** Tuning of the Kafka bus (timeouts, batch sizes). */
  readonly kafka?: Omit<KafkaBusOptions, 'brokers' | 'clientId'>;
  /** Tuning of the in-process bus (the log's options apply to `embeddedBus: 'durable'`). */
  readonly inProcess?: Omit<DurableInProcessBusOptions, 'dir'>;
  /** Prefix of checkpoint keys in Redis. Default `adp:checkpoint:`. */
  readonly redisCheckpointPrefix?: string;
  /** Prefix of notification channels in Redis. Default none. */
  readonly redisChannelPrefix?: string;
}

/**
 * The servers and their namespaces, as the API's and the worker's configurations both hold them
 * (`readServiceServers` reads them from the environment). An unset server means the service's
 * embedded piece (`StreamingConfig`'s `embedded*` choices): the API keeps DuckDB files under
 * `dataDir`, a standalone worker keeps results and checkpoints in memory.
 */
export interface ServiceServers {
  /** `KAFKA_BROKERS`: comma-separated `host:port`; unset = the in-process bus. */
  readonly kafkaBrokers: readonly string[] | undefined;
  /**
   * `CLICKHOUSE_URL` (http or https): results, jobs and the platform store (baselines included) in
   * ClickHouse, shared by every replica; unset = embedded.
   */
  readonly clickhouseUrl: string | undefined;
  /** `CLICKHOUSE_DATABASE`: created and migrated at start. Default `adp`; a plain identifier. */
  readonly clickhouseDatabase: string;
  /** `REDIS_URL` (redis or rediss): checkpoints and change notifications in Redis; unset = embedded. */
  readonly redisUrl: string | undefined;
  /**
   * `REDIS_KEY_PREFIX`: prefix of the service's Redis keys (checkpoints live under
   * `<prefix>checkpoint:`). Default `adp:`; 1 to 64 of A-Z a-z 0-9 _ : . -
   */
  readonly redisKeyPrefix: string;
  /**
   * `REDIS_CHANNEL_PREFIX`: prefix of pub/sub channel names; the API and its workers must use the
   * same one. Default none; up to 64 of A-Z a-z 0-9 _ : . -
   */
  readonly redisChannelPrefix: string;
  /**
   * `DATA_DIR`: the embedded files' directory (the platform store's `platform.duckdb` among them,
   * where the worker reads baselines without CLICKHOUSE_URL). Default `./data`, resolved against
   * the working directory at boot.
   */
  readonly dataDir: string;
}

/**
 * The part of the StreamingConfig that the API (with its embedded worker) and the worker derive
 * from their configuration, derived in one place so that both use the same checkpoint keys and
 * notification channels.
 */
export function serviceStreamingConfig(servers: ServiceServers): StreamingConfig {
  return {
    ...(servers.kafkaBrokers ? { kafkaBrokers: servers.kafkaBrokers } : {}),
    ...(servers.clickhouseUrl ? { clickhouseUrl: servers.clickhouseUrl, clickhouseDatabase: servers.clickhouseDatabase } : {}),
    ...(servers.redisUrl ? { redisUrl: servers.redisUrl } : {}),
    redisCheckpointPrefix: `${servers.redisKeyPrefix}checkpoint:`,
    redisChannelPrefix: servers.redisChannelPrefix,
    dataDir: servers.dataDir,
  };
}

export interface Streaming {
  readonly bus: Bus;
  readonly results: ResultStore;
  readonly checkpoints: CheckpointStore;
  readonly notifier: Notifier;
  /** Detection jobs: their records, staged chunks and results. */
  readonly jobs: JobStore;
  /** The in-process bus's backlog (messages its running consumers have not committed); null on Kafka. */
  readonly backlog: (() => number) | null;
  /** Which implementation each piece is, for logs and health output. */
  readonly mode: {
    readonly bus: 'kafka' | 'in-process' | 'in-process-durable';
    readonly results: 'clickhouse' | 'duckdb' | 'memory';
    readonly checkpoints: 'redis' | 'duckdb' | 'memory';
    readonly notifier: 'redis' | 'memory';
  };
  /**
   * What a readiness probe asks: one check per server in use (`kafka`, `clickhouse results`,
   * `redis`). The in-process pieces have none: they are ready when the process is.
   */
  readonly checks: readonly DependencyCheck[];
  close(): Promise<void>;
}

function requireDataDir(dataDir: string | undefined, what: string): string {
  if (!dataDir) throw new StreamingError('VALUE_INVALID', `openStreaming: ${what} needs dataDir`);
  return dataDir;
}

export async function openStreaming(config: StreamingConfig = {}): Promise<Streaming> {
  const opened: { close(): Promise<void> }[] = [];
  try {
    const brokers = (config.kafkaBrokers ?? []).map((broker) => broker.trim()).filter((broker) => broker !== '');
    // The embedded stores before the durable bus: their DuckDB files are locked against a second
    // process on the same data directory, which must not read (or repair) a live bus log.
    const results = config.clickhouseUrl
      ? await createClickHouseResultStore({
          url: config.clickhouseUrl,
          ...(config.clickhouseDatabase !== undefined ? { database: config.clickhouseDatabase } : {}),
        })
      : config.embeddedResults === 'duckdb'
        ? await createDuckDbResultStore({ dataDir: requireDataDir(config.dataDir, "embeddedResults 'duckdb'") })
        : createMemoryResultStore();
    opened.push(results);
    const checkpoints = config.redisUrl
      ? await createRedisCheckpointStore(config.redisUrl, {
          ...(config.redisCheckpointPrefix !== undefined ? { prefix: config.redisCheckpointPrefix } : {}),
        })
      : config.embeddedCheckpoints === 'duckdb'
        ? await createDuckDbCheckpointStore({ dataDir: requireDataDir(config.dataDir, "embeddedCheckpoints 'duckdb'") })
        : createMemoryCheckpointStore();
    opened.push(checkpoints);
    const jobs = config.clickhouseUrl
      ? await createClickHouseJobStore({
          url: config.clickhouseUrl,
          ...(config.clickhouseDatabase !== undefined ? { database: config.clickhouseDatabase } : {}),
        })
      : config.embeddedJobs === 'duckdb'
        ? await createDuckDbJobStore({ dataDir: requireDataDir(config.dataDir, "embeddedJobs 'duckdb'") })
        : createMemoryJobStore();
    opened.push(jobs);
    const durableBus = brokers.length === 0 && config.embeddedBus === 'durable';
    const inProcess: InProcessBus | null =
      brokers.length > 0
        ? null
        : durableBus
          ? await openDurableInProcessBus({
              ...config.inProcess,
              dir: path.join(requireDataDir(config.dataDir, "embeddedBus 'durable'"), 'bus'),
            })
          : createInProcessBus(config.inProcess);
    const bus: Bus =
      inProcess ??
      createKafkaBus({ ...config.kafka, brokers, clientId: config.kafkaClientId ?? 'adp' });
    // Closed first: consumers finish their batches while the stores they write to are still open.
    opened.unshift(bus);
    const notifier = config.redisUrl
      ? await createRedisNotifier(config.redisUrl, {
          ...(config.redisChannelPrefix !== undefined ? { channelPrefix: config.redisChannelPrefix } : {}),
        })
      : createMemoryNotifier();
    opened.push(notifier);
    const checks: DependencyCheck[] = [];
    const pingOf = (piece: { ping?(): Promise<void> }) => () => piece.ping?.() ?? Promise.resolve();
    if (brokers.length > 0) checks.push({ name: 'kafka', ping: pingOf(bus) });
    if (config.clickhouseUrl) checks.push({ name: 'clickhouse results', ping: pingOf(results) });
    if (config.redisUrl) {
      checks.push({ name: 'redis', ping: () => Promise.all([pingOf(checkpoints)(), pingOf(notifier)()]).then(() => undefined) });
    }
    return {
      bus,
      backlog: inProcess ? () => inProcess.backlog() : null,
      results,
      checkpoints,
      notifier,
      jobs,
      mode: {
        bus: brokers.length > 0 ? 'kafka' : durableBus ? 'in-process-durable' : 'in-process',
        results: config.clickhouseUrl ? 'clickhouse' : config.embeddedResults === 'duckdb' ? 'duckdb' : 'memory',
        checkpoints: config.redisUrl ? 'redis' : config.embeddedCheckpoints === 'duckdb' ? 'duckdb' : 'memory',
        notifier: config.redisUrl ? 'redis' : 'memory',
      },
      checks,
      async close(): Promise<void> {
        // Bus first: consumers finish their batches while the stores they write to are still open.
        for (const piece of opened) await piece.close().catch(() => undefined);
      },
    };
  } catch (error) {
    for (const piece of opened) await piece.close().catch(() => undefined);
    throw error;
  }
}
