// Everything one API process runs besides listening: the streaming pieces (`openStreaming` picks
// Kafka, ClickHouse and Redis where their addresses are set, and where not the durable in-process
// bus (an fsync'd log under DATA_DIR/bus: a 202 from POST /v1/telemetry means the points are on
// disk, and a restart hands the worker what it had not stored), and DuckDB files under DATA_DIR
// for the results and the worker's checkpoints), the platform store (ClickHouse with CLICKHOUSE_URL, else the embedded DuckDB that
// buildApp opens), the Fastify app, and with EMBEDDED_WORKER the streaming worker in this process,
// so that POST /v1/telemetry -> worker -> GET /v1/machines/{id}/results works from `npm start`
// alone. server.ts adds the logger, the port and the signals; tests call this directly.
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { openStores } from '@adp/store';
import { openStreaming, serviceStreamingConfig, type Streaming } from '@adp/platform';
import { startJobWorker, startWorker, type RunningJobWorker, type RunningWorker, type WorkerConfig, type WorkerRuntimeConfig } from '@adp/stream-worker';
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
  /** The in-process job worker (detection jobs); null when EMBEDDED_WORKER is off. */
  readonly jobWorker: RunningJobWorker | null;
  /**
   * Stops everything in order: with `drainMs`, first lets the embedded worker consume the bus's
   * backlog for up to that long (requests are still served; what it does not reach stays in the
   * durable log for the next start); then the worker (it finishes and commits its batch while the
   * store is open), then the app (in-flight requests finish; it closes its store), then the bus
   * and result store, then the model.
   */
  close(options?: PlatformCloseOptions): Promise<void>;
}

export interface PlatformCloseOptions {
  /** Longest wait for the embedded worker to catch up with the in-process bus, ms. Default 0. */
  readonly drainMs?: number;
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

/** Waits until `backlog()` is 0 or `drainMs` has passed, polling. */
async function drain(backlog: () => number, drainMs: number, app: FastifyInstance): Promise<void> {
  const started = Date.now();
  const before = backlog();
  if (before === 0) return;
  app.log.info({ backlog: before, drainMs }, 'draining the telemetry backlog before stopping');
  while (backlog() > 0 && Date.now() - started < drainMs) await new Promise((resolve) => setTimeout(resolve, 20));
  const left = backlog();
  if (left > 0) app.log.warn({ backlog: left }, 'stopping with a telemetry backlog: the durable bus delivers it after the next start');
  else app.log.info({ drainedMs: Date.now() - started }, 'telemetry backlog drained');
}

export async function openPlatform(config: ApiConfig, options: OpenPlatformOptions = {}): Promise<Platform> {
  if (config.embeddedWorker && !options.worker) throw new Error('openPlatform: EMBEDDED_WORKER needs the worker settings');
  if (options.worker && options.worker.telemetryTopic !== config.telemetryTopic) {
    throw new Error(
      `openPlatform: the API publishes to ${config.telemetryTopic} but the embedded worker consumes ${options.worker.telemetryTopic} (set the same TELEMETRY_TOPIC for both)`,
    );
  }
  const workerAlerts = options.worker?.alerts;
  if (workerAlerts && workerAlerts.topic !== config.webhooks.alertsTopic) {
    throw new Error(
      `openPlatform: the embedded worker publishes alerts to ${workerAlerts.topic} but the dispatcher consumes ${config.webhooks.alertsTopic} (set the same ALERTS_TOPIC for both)`,
    );
  }
  const model = sharedModel(options.model ?? loadPackagedModel);
  const tuning = options.worker;
  // What the bus log repaired at open (a torn tail) is logged once the app's logger exists.
  const busWarnings: [string, Record<string, unknown>][] = [];
  let warn = (message: string, detail: Record<string, unknown>): void => {
    busWarnings.push([message, detail]);
  };
  const streaming = await openStreaming({
    // The worker's names, so checkpoints and channels match between the API and the workers.
    ...serviceStreamingConfig(config),
    // Without ClickHouse the results go to results.duckdb under DATA_DIR: they survive a restart.
    embeddedResults: 'duckdb',
    // Without Kafka the telemetry goes through a log under DATA_DIR/bus: accepted points survive a crash.
    embeddedBus: 'durable',
    // Without Redis the worker's windows go to checkpoints.duckdb: a restart resumes them.
    embeddedCheckpoints: 'duckdb',
    // Without ClickHouse detection jobs go to jobs.duckdb: an accepted job survives a restart.
    embeddedJobs: 'duckdb',
    kafkaClientId: 'adp-api',
    kafka: {
      ...(tuning?.kafkaSessionTimeoutMs !== undefined ? { sessionTimeoutMs: tuning.kafkaSessionTimeoutMs } : {}),
      ...(tuning?.maxBatchMessages !== undefined ? { maxBatchMessages: tuning.maxBatchMessages } : {}),
      ...(tuning?.partitionsConcurrently !== undefined ? { partitionsConsumedConcurrently: tuning.partitionsConcurrently } : {}),
    },
    inProcess: {
      ...(tuning?.maxBatchMessages !== undefined ? { maxBatchMessages: tuning.maxBatchMessages } : {}),
      onWarning: (message, detail) => warn(message, detail),
      onCommitError: (err) => warn('the bus could not record a commit; the batch is delivered again', { err }),
    },
  });
  let app: FastifyInstance;
  try {
    const store = await openStores({
      dataDir: config.dataDir,
      ...(config.clickhouseUrl ? { clickhouse: { url: config.clickhouseUrl, database: config.clickhouseDatabase } } : {}),
    });
    // buildApp owns the store from here (it closes it, also when building fails).
    app = await buildApp(config, {
      ...(options.logger !== undefined ? { logger: options.logger } : {}),
      store,
      model: model.factory,
      bus: streaming.bus,
      results: streaming.results,
      checkpoints: streaming.checkpoints,
      notifier: streaming.notifier,
      // Jobs need a job store their worker shares: this process's own (the embedded worker, now or
      // after a restart on the in-process bus) or ClickHouse. Kafka workers apart without
      // ClickHouse could not see them: the job routes answer 503.
      ...(config.embeddedWorker || config.clickhouseUrl || !config.kafkaBrokers ? { jobs: streaming.jobs } : {}),
      readiness: streaming.checks,
      // Alerts reach webhooks through this process's dispatcher (WEBHOOK_DISPATCHER).
      alertsBus: streaming.bus,
    });
  } catch (err) {
    await streaming.close();
    throw err;
  }
  app.log.info({ streaming: streaming.mode, store: config.clickhouseUrl ? 'clickhouse' : 'embedded' }, 'streaming pieces opened');
  const busLog = app.log.child({ component: 'bus' });
  warn = (message, detail) => busLog.warn(detail, message);
  for (const [message, detail] of busWarnings.splice(0)) warn(message, detail);

  let worker: RunningWorker | null = null;
  let jobWorker: RunningJobWorker | null = null;
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
      jobWorker = await startJobWorker({
        bus: streaming.bus,
        jobs: streaming.jobs,
        topic: config.jobs.topic,
        groupId: `${options.worker.groupId}.jobs`,
        partitions: options.worker.telemetryPartitions,
        baselines: app.store,
        logger: app.log.child({ component: 'job-worker' }),
      });
    } else {
      // Kafka has topic auto-creation off and the workers may start later. Not fatal: the
      // synchronous endpoints work without Kafka; POST /v1/telemetry answers 503 until it is back.
      await streaming.bus
        .ensureTopics([{ name: config.telemetryTopic, partitions: options.worker?.telemetryPartitions ?? 12 }])
        .catch((err: unknown) => app.log.error({ err }, 'could not create the telemetry topic; telemetry is refused until the bus is reachable'));
      await streaming.bus
        .ensureTopics([{ name: config.jobs.topic, partitions: options.worker?.telemetryPartitions ?? 12 }])
        .catch((err: unknown) => app.log.error({ err }, 'could not create the jobs topic; jobs are refused until the bus is reachable'));
    }
  } catch (err) {
    await jobWorker?.stop().catch(() => undefined);
    await worker?.stop().catch(() => undefined);
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
    jobWorker,
    close(closeOptions = {}) {
      closing ??= (async () => {
        const drainMs = closeOptions.drainMs ?? 0;
        if (worker && streaming.backlog && drainMs > 0) await drain(streaming.backlog, drainMs, app);
        await retention?.stop();
        await jobWorker?.stop();
        await worker?.stop();
        await app.close();
        await streaming.close();
        await model.close();
      })();
      return closing;
    },
  };
}
