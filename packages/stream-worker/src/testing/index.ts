// Test and benchmark support, imported as `@adp/stream-worker/testing` (never by the stream
// worker itself): example fleets with known spikes, and isolated streaming on the real servers.
export { exampleSeries, type ExampleSeries } from './example-series.js';
export {
  cleanUp,
  codecs,
  interleave,
  namesFrom,
  openIsolatedStreaming,
  PARTITIONS,
  removeScaleOut,
  telemetryMessages,
  workerConfig,
  workerEnv,
  type IsolatedNames,
  type ScaleOutLeftovers,
  type ServerUrls,
} from './integration.js';
