// `npm run worker` runs this file: a worker process of the scale-out deployment. It reads its
// configuration (`loadWorkerConfig`, @adp/stream-worker), opens the streaming pieces (Kafka, ClickHouse, Redis, each embedded
// when its address is unset), the store the baselines are read from (ClickHouse with
// CLICKHOUSE_URL, else the embedded DuckDB file under DATA_DIR), and starts the worker. SIGTERM or
// SIGINT stops consuming, lets the batch in flight finish and commit, closes everything and exits;
// if that takes longer than SHUTDOWN_GRACE_MS the process exits anyway (uncommitted messages are
// delivered again to whoever gets the partition).
//
// OpenTelemetry: run with `--import ./apps/worker/src/instrumentation.ts` (see that file).
import { createModelRuntime } from '@adp/model';
import { openStores, type Store } from '@adp/store';
import { openStreaming, serviceStreamingConfig } from '@adp/platform';
import { pino } from 'pino';
import { loadWorkerConfig, startJobWorker, startWorker, WorkerConfigError, type WorkerConfig, type WorkerModel } from '@adp/stream-worker';
import { shutdownObservability } from './instrumentation.js';

async function main(): Promise<void> {
  let config: WorkerConfig;
  try {
    config = loadWorkerConfig(process.env);
  } catch (error) {
    if (error instanceof WorkerConfigError) {
      process.stderr.write(`Invalid configuration: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  const logger = pino({ level: config.logLevel, base: { service: 'adp-worker' } });

  const streaming = await openStreaming({
    ...serviceStreamingConfig(config),
    kafkaClientId: config.kafkaClientId,
    kafka: {
      sessionTimeoutMs: config.kafkaSessionTimeoutMs,
      maxBatchMessages: config.maxBatchMessages,
      partitionsConsumedConcurrently: config.partitionsConcurrently,
      onHandlerError: () => undefined, // the worker logs its own failures
      log: (entry) => logger[entry.level]({ kafkajs: entry.namespace, ...entry.extra }, entry.message),
    },
    inProcess: { maxBatchMessages: config.maxBatchMessages },
  });
  let store: Store;
  try {
    store = await openStores({
      dataDir: config.dataDir,
      ...(config.clickhouseUrl ? { clickhouse: { url: config.clickhouseUrl, database: config.clickhouseDatabase } } : {}),
    });
  } catch (error) {
    await streaming.close();
    throw error;
  }
  let model: { close(): Promise<void> } | undefined;
  const loadModel = async (): Promise<WorkerModel> => {
    const runtime = await createModelRuntime();
    model = runtime;
    logger.info({ modelVersion: runtime.modelVersion }, 'learned model loaded');
    return runtime;
  };

  const worker = await startWorker({
    bus: streaming.bus,
    results: streaming.results,
    checkpoints: streaming.checkpoints,
    notifier: streaming.notifier,
    store,
    loadModel,
    config,
    logger,
  });
  logger.info({ streaming: streaming.mode, groupId: config.groupId }, 'worker started');
  // Detection jobs (POST /v1/jobs) in the same process, in a consumer group of their own; only
  // with ClickHouse, the job store this process shares with the API (without it the API takes no
  // jobs unless it runs its own worker).
  const jobWorker = config.clickhouseUrl
    ? await startJobWorker({
        bus: streaming.bus,
        jobs: streaming.jobs,
        topic: config.jobsTopic,
        groupId: `${config.groupId}.jobs`,
        partitions: config.telemetryPartitions,
        baselines: store,
        logger: logger.child({ component: 'job-worker' }),
      })
    : null;
  if (!jobWorker) logger.info({}, 'job worker off: detection jobs need CLICKHOUSE_URL, the job store shared with the API');

  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping: finishing the batch in flight');
    const timer = setTimeout(() => {
      logger.error({ graceMs: config.shutdownGraceMs }, 'shutdown took too long; exiting');
      process.exit(1);
    }, config.shutdownGraceMs);
    timer.unref();
    void (async () => {
      try {
        await jobWorker?.stop();
        await worker.stop();
        await streaming.close();
        await store.close();
        await model?.close();
        logger.info({}, 'stopped');
        await shutdownObservability();
        process.exit(0);
      } catch (error) {
        logger.error({ err: error }, 'error while stopping');
        await shutdownObservability();
        process.exit(1);
      }
    })();
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

main().catch((error: unknown) => {
  process.stderr.write(`worker failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
