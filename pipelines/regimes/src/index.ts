// @adp/regimes: per-point operating regimes (HEALTHY, ACTIVE, TRANSITION, SHOCK, UNKNOWN) from
// energy z-scores and changepoint flags, and the spike-echo attribution that prepares those
// z-scores. Pure (the echo check takes the caller's model as a callback); README.md states the rules.
export {
  DEFAULT_REGIME_THRESHOLDS,
  REGIMES,
  activeWhere,
  heldRegime,
  classifyRegimes,
  countRegimes,
  unknownRegimes,
  zScoresOf,
  type Regime,
  type RegimeCounts,
  type RegimeInput,
  type RegimeThresholds,
} from './regimes.js';
export {
  echoFreeZScores,
  echoPoints,
  repairedValues,
  spikeRepairs,
  withoutEchoes,
  type EchoFreeInput,
  type EchoInput,
  type SpikeRepair,
} from './echoes.js';
