// @adp/stream-worker: the stream worker's core and the detection jobs' worker (README.md beside src/).
export {
  startWorker,
  type BatchSummary,
  type RunningWorker,
  type WorkerCounters,
  type WorkerDeps,
  type WorkerLogger,
  type WorkerRuntimeConfig,
} from './worker.js';
export { loadWorkerConfig, WorkerConfigError, LOG_LEVELS, type DetectionConfig, type WorkerConfig, type LogLevel } from './config.js';
export { batchEnergies, type EnergyRequest, type WorkerModel } from './energies.js';
export { BaselineCache, toSeriesBaseline, type SeriesBaseline } from './baselines.js';
export {
  DEAD_LETTER_REASONS,
  MAX_BATCH_POINTS,
  channelSeriesId,
  parseTelemetryMessage,
  validateTelemetryBatch,
  validateTelemetryPoint,
  type DeadLetterReason,
  type ParsedPoint,
  type ParsedTelemetry,
  type Reading,
} from './telemetry.js';
export {
  appendToWindow,
  decodeWindow,
  encodeWindow,
  emptyWindow,
  judgeHistory,
  windowCapacity,
  type SeriesWindow,
} from './series-window.js';
export { ENGINE_VERSION } from './version.js';
export { engineInput, startJobWorker, type JobWorkerDeps, type RunningJobWorker } from './jobs.js';
export { judgeNewPoints, type JudgeModelState, type JudgeResult, type JudgeSettings, type JudgeTask } from './new-points-judge.js';
export { inlineDetector, startDetectorPool, DetectionThreadError, type Detector } from './detect-pool.js';
