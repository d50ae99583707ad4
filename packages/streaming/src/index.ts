// @adp/streaming: the ports (./ports.ts) and what callers need to pick, open and use an adapter.
// Adapter internals (the bus log's record format, the partitioner, RowBinary, SQL literals, the
// Avro bounds check and fingerprints) stay inside the package; its own tests import them by path.

export * from './ports.js';
export { STREAMING_ERROR_CODES, StreamingError, isStreamingError, type StreamingErrorCode, type StreamingErrorContext } from './errors.js';
export { handlerRetryPolicy, isRetriable, RECONNECT_BACKOFF, retrying, stopRetrying, type RetryingOptions, type RetryPolicy } from './retry.js';

// Wiring: configuration from the environment, and the one place that picks each adapter.
export {
  envReader,
  KAFKA_NAME,
  KAFKA_NAME_TEXT,
  LOG_LEVELS,
  readLogLevel,
  readServiceServers,
  type EnvFailure,
  type EnvReader,
  type LogLevel,
} from './env.js';
export { openStreaming, serviceStreamingConfig, type ServiceServers, type Streaming, type StreamingConfig } from './platform.js';

// Wire formats.
export {
  decodeTelemetryMessage,
  loadStreamingCodecs,
  type AvroCodec,
  type StreamingCodecs,
  type TelemetryMessage,
} from './avro/codecs.js';
export {
  REGIMES,
  type Alert,
  type AlertEvent,
  type ChannelValue,
  type DeadLetter,
  type DetectionResult,
  type JobChunk,
  type Regime,
  type TelemetryBatch,
  type TelemetryPoint,
  type TelemetryReading,
} from './avro/schemas.js';
export { encodeTelemetryBatches, TELEMETRY_BATCH_MAX_BYTES, TELEMETRY_BATCH_MAX_POINTS, type TelemetryBatchLimits } from './avro/telemetry-batches.js';
export { CHANNEL_SEPARATOR, channelPrefixOf, channelSeriesId, isSeriesOfMachine } from './series-ids.js';

// Adapters, one folder each.
export { createInProcessBus, openDurableInProcessBus, type DurableInProcessBusOptions, type InProcessBus, type InProcessBusOptions } from './in-process/bus.js';
export { createKafkaBus, type KafkaBusOptions, type KafkaLogEntry } from './kafka/bus.js';
export { createMemoryCheckpointStore, createMemoryNotifier, createMemoryResultStore } from './memory/stores.js';
export { createDuckDbCheckpointStore, type DuckDbCheckpointStoreOptions } from './duckdb/checkpoints.js';
export { createDuckDbResultStore, type DuckDbResultStoreOptions } from './duckdb/results.js';
export { createClickHouseResultStore, type ClickHouseResultStoreOptions } from './clickhouse/results.js';
export * from './clickhouse/index.js';
export { createRedisCheckpointStore, createRedisNotifier, type RedisCheckpointOptions, type RedisNotifierOptions } from './redis/stores.js';
export { closeRedis, createRedisConnection, type RedisConnection, type RedisConnectionOptions } from './redis/client.js';
export * from './jobs/index.js';

// Observability and caching shared by the API and the workers.
export { inSpan, traceHeaders, type SpanAttributes } from './tracing.js';
export { STREAMING_METRIC_NAMES, streamingMetrics, type StreamingMetrics } from './metrics.js';
export { GenerationalCache } from './generational-cache.js';
