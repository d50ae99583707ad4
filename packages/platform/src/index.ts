// @adp/platform: the wiring the API and the worker share. `openStreaming` picks each streaming
// piece (the bus from @adp/streaming, the result, checkpoint and job stores from @adp/store) from
// configuration; the environment reader validates the settings that configuration comes from.
export { openStreaming, serviceStreamingConfig, type ServiceServers, type Streaming, type StreamingConfig } from './open-streaming.js';
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
