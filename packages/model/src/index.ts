export * from './contract.js';
export { computeEnergyStats, energiesFromPredictions, type EnergyStats } from './energy.js';
export { isModelError, MODEL_ERROR_CODES, ModelError, type ModelErrorCode } from './errors.js';
export { FINETUNE_DEFAULTS, MIN_FINETUNE_POINTS } from './finetune.js';
export { ASSET_FILES, createModelRuntime, defaultAssetsDir, type LoadedModelRuntime, type ModelRuntimeOptions } from './runtime.js';
export {
  assertPredictorWeights,
  decodePredictorWeights,
  encodePredictorWeights,
  PREDICTOR_HIDDEN,
  PREDICTOR_PARAMETERS,
  PREDICTOR_TENSOR_NAMES,
  PREDICTOR_TENSOR_SHAPES,
} from './weights-codec.js';
export { buildWindows, robustNormalisation, WARMUP_POINTS, WINDOW_POINTS } from './windows.js';
export { fineTuneInThread, startFineTuneThread, type FineTuneThread } from './fine-tune-thread.js';
export { threadExecArgv } from './thread-flags.js';
