// @adp/regimes: per-point operating regimes (HEALTHY, ACTIVE, TRANSITION, SHOCK, UNKNOWN) from
// energy z-scores and changepoint flags. Pure; README.md states the rules and thresholds.
export {
  DEFAULT_REGIME_THRESHOLDS,
  REGIMES,
  classifyRegimes,
  countRegimes,
  unknownRegimes,
  zScoresOf,
  type Regime,
  type RegimeCounts,
  type RegimeInput,
  type RegimeThresholds,
} from './regimes.js';
