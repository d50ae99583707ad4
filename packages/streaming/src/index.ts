// @adp/streaming: the ports (./ports.ts) and the bus and notifier adapters. The result, checkpoint
// and job stores are @adp/store's; @adp/platform opens the pieces from configuration. Adapter
// internals (the bus log's record format, the partitioner, the Avro bounds check and fingerprints)
// stay inside the package; its own tests import them by path.

export * from './ports.js';
export { STREAMING_ERROR_CODES, StreamingError, isStreamingError, type StreamingErrorCode, type StreamingErrorContext } from './errors.js';
export { handlerRetryPolicy, isRetriable, RECONNECT_BACKOFF, retrying, stopRetrying, type RetryingOptions, type RetryPolicy } from './retry.js';

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
export { createMemoryNotifier } from './memory/notifier.js';
export { createRedisNotifier, type RedisNotifierOptions } from './redis/notifier.js';
export { closeRedis, createRedisConnection, type RedisConnection, type RedisConnectionOptions } from './redis/client.js';

// Observability and caching shared by the API and the workers.
export { inSpan, traceHeaders, type SpanAttributes } from './tracing.js';
export { STREAMING_METRIC_NAMES, streamingMetrics, type StreamingMetrics } from './metrics.js';
export { GenerationalCache } from './generational-cache.js';
