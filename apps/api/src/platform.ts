// Everything one API process runs besides listening: the streaming pieces (`openStreaming` picks
// Kafka, ClickHouse and Redis where their addresses are set, the in-process bus, memory checkpoints
// and a DuckDB results file under DATA_DIR where not), the platform store (ClickHouse with CLICKHOUSE_URL, else the embedded DuckDB that
// buildApp opens), the Fastify app, and with EMBEDDED_WORKER the streaming worker in this process,
// so that POST /v1/telemetry -> worker -> GET /v1/machines/{id}/results works from `npm start`
// alone. server.ts adds the logger, the port and the signals; tests call this directly.
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { openClickHouseStore, type Store } from '@adp/store';
import { openStreaming, serviceStreamingConfig, type Streaming } from '@adp/streaming';
import { startWorker, type RunningWorker, type WorkerConfig, type WorkerRuntimeConfig } from '@adp/worker';
import { buildApp } from './app.js';
import type { ApiConfig } from './config.js';
import { loadPackagedModel, type NativeModel, type NativeModelFactory } from './machines/model.js';
import { startRetention } from './telemetry/retention.js';

export interface OpenPlatformOptions {
  readonly logger?: FastifyServerOptions['logger'];
  /** The learned model, shared by the native routes and the embedded worker. Default: the packaged one. */
  readonly model?: NativeModelFactory;
  /**
   * The embedded worker's settings (the worker's own loadWorkerConfig); required with
   * EMBEDDED_WORKER. Its consumer tuning (session timeout, batch size, concurrency) also tunes the bus.
   */
  readonly worker?: WorkerRuntimeConfig &
    Partial<Pick<WorkerConfig, 'kafkaSessionTimeoutMs' | 'maxBatchMessages' | 'partitionsConcurrently'>>;
}

export interface Platform {
  readonly app: FastifyInstance;
  readonly streaming: Streaming;
  /** The in-process worker; null when EMBEDDED_WORKER is off. */
  readonly worker: RunningWorker | null;
  /**
   * Stops everything in order: the worker first (it finishes and commits its batch while the
   * store is open), then the app (in-flight requests finish; it closes its store), then the bus
   * and result store, then the model.
   */
  close(): Promise<void>;
}

/** One model instance for the app and the worker: each gets a view whose close() does nothing. */
function sharedModel(factory: NativeModelFactory): { factory: NativeModelFactory; close: () => Promise<void> } {
  let loading: Promise<NativeModel> | undefined;
  const load = (): Promise<NativeModel> => {
    loading ??= factory().catch((err: unknown) => {
      loading = undefined;
      throw err;
    });
    return loading;
  };
  return {
    factory: async () => {
      const model = await load();
      return {
        modelVersion: model.modelVersion,
        energies: (values, options) => model.energies(values, options),
        fineTune: (values, options) => model.fineTune(values, options),
        close: () => Promise.resolve(),
      };
    },
    close: async () => {
      const model = await loading?.catch(() => undefined);
      await model?.close();
    },
  };
}

export async function openPlatform(config: ApiConfig, options: OpenPlatformOptions = {}): Promise<Platform> {
  if (config.embeddedWorker && !options.worker) throw new Error('openPlatform: EMBEDDED_WORKER needs the worker settings');
  if (options.worker && options.worker.telemetryTopic !== config.telemetryTopic) {
    throw new Error(
      `openPlatform: the API publishes to ${config.telemetryTopic} but the embedded worker consumes ${options.worker.telemetryTopic} (set the same TELEMETRY_TOPIC for both)`,
    );
  }
  const model = sharedModel(options.model ?? loadPackagedModel);
  const tuning = options.worker;
  const streaming = await openStreaming({
    // The worker's names, so checkpoints and channels match between the API and the workers.
    ...serviceStreamingConfig(config),
    // Without ClickHouse the results go to results.duckdb under DATA_DIR: they survive a restart.
    embeddedResults: 'duckdb',
    kafkaClientId: 'adp-api',
    kafka: {
      ...(tuning?.kafkaSessionTimeoutMs !== undefined ? { sessionTimeoutMs: tuning.kafkaSessionTimeoutMs } : {}),
      ...(tuning?.maxBatchMessages !== undefined ? { maxBatchMessages: tuning.maxBatchMessages } : {}),
      ...(tuning?.partitionsConcurrently !== undefined ? { partitionsConsumedConcurrently: tuning.partitionsConcurrently } : {}),
    },
    inProcess: {
      ...(tuning?.maxBatchMessages !== undefined ? { maxBatchMessages: tuning.maxBatchMessages } : {}),
    },
  });
  let app: FastifyInstance;
  try {
    const store: Store | undefined = config.clickhouseUrl
      ? await openClickHouseStore({ url: config.clickhouseUrl, database: config.clickhouseDatabase })
      : undefined;
    // buildApp owns the store from here (it closes it, also when building fails).
    app = await buildApp(config, {
      ...(options.logger !== undefined ? { logger: options.logger } : {}),
      ...(store ? { store } : {}),
      model: model.factory,
      bus: streaming.bus,
      results: streaming.results,
      checkpoints: streaming.checkpoints,
      notifier: streaming.notifier,
      readiness: streaming.checks,
    });
  } catch (err) {
    await streaming.close();
    throw err;
  }
  app.log.info({ streaming: streaming.mode, store: config.clickhouseUrl ? 'clickhouse' : 'embedded' }, 'streaming pieces opened');

  let worker: RunningWorker | null = null;
  try {
    if (config.embeddedWorker && options.worker) {
      worker = await startWorker({
        bus: streaming.bus,
        results: streaming.results,
        checkpoints: streaming.checkpoints,
        notifier: streaming.notifier,
        store: app.store,
        loadModel: model.factory,
        config: options.worker,
        logger: app.log.child({ component: 'worker' }),
      });
      app.log.info({ groupId: options.worker.groupId }, 'embedded worker started');
    } else {
      // Kafka has topic auto-creation off and the workers may start later. Not fatal: the
      // synchronous endpoints work without Kafka; POST /v1/telemetry answers 503 until it is back.
      await streaming.bus
        .ensureTopics([{ name: config.telemetryTopic, partitions: options.worker?.telemetryPartitions ?? 12 }])
        .catch((err: unknown) => app.log.error({ err }, 'could not create the telemetry topic; telemetry is refused until the bus is reachable'));
    }
  } catch (err) {
    await app.close().catch(() => undefined);
    await streaming.close();
    await model.close();
    throw err;
  }

  const retention =
    config.resultsRetentionDays > 0
      ? startRetention({ results: streaming.results, days: config.resultsRetentionDays, log: app.log.child({ component: 'retention' }) })
      : null;

  let closing: Promise<void> | null = null;
  return {
    app,
    streaming,
    worker,
    close() {
      closing ??= (async () => {
        await retention?.stop();
        await worker?.stop();
        await app.close();
        await streaming.close();
        await model.close();
      })();
      return closing;
    },
  };
}
