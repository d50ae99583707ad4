// @adp/detection: the pure detection engine (no I/O, no clocks, no globals). README.md beside
// this folder describes the algorithms.
export * from './types.js';
export { parseIsoTimestamp } from './timestamps.js';
export {
  GRANULARITY_STEP_MS,
  MAX_FILL_LENGTH,
  alignSeries,
  type FillSettings,
  type PreparedSeries,
} from './alignment.js';
export { detectPeriod, granularityPeriods, seasonalFitScore, MIN_SEASONAL_FIT } from './period.js';
export { anomalyCap, DEFAULT_WINDOW_WITHOUT_PERIOD, marginMultiplier, severityOf, suggestedWindow, vendorSuggestedWindow, widenedMargin } from './scoring.js';
export { MIN_SERIES_POINTS } from './prepare.js';
export { SHOULDER_QUANTILE, shoulderScale } from './robust.js';
export { detectEntireSeries, EXCURSION_MAX_SHARE, EXCURSION_REFERENCE_SHARE, PHASE_MIN_CYCLES, PHASE_POOL_MIN_POINTS, EVENT_GAP_SHARE, reportEvents, ROUTINE_EVENT_COUNT, type EventRules } from './entire.js';
export {
  bandReportedWithin,
  decideLastPoint,
  ECHO_POINTS,
  FAMILIAR_EDGE_SHARE,
  familiarMiss,
  routineMiss,
  ROUTINE_MISS_COUNT,
  detectLastPoint,
  detectStream,
  LAST_POINT_BAND_FACTOR,
  lastPointMultiplier,
  MARGINAL_BAND_RATIO,
  MIN_STREAM_POINTS,
  NEW_LEVEL_MARGIN,
  NEW_LEVEL_MIN_POINTS,
  NEW_LEVEL_RECENT_SHARE,
  newLevelAlarm,
  newLevelExcess,
  outsideBand,
  REFRACTORY_POINTS,
  REFRACTORY_Z,
  SIDE_MIN_ERRORS,
  sideSpreads,
  type SideSpreads,
  STUCK_POINTS,
  stuckAlarm,
  stuckRun,
  reportedJustBefore,
  sustainedAlarm,
  SUSTAINED_QUIET_SHARE,
  type StreamOptions,
  type SustainedScores,
  type Verdict,
  type VerdictContext,
} from './last.js';
export {
  createFollowingJudge,
  type FollowingJudge,
  type FollowingJudgeState,
  freshFollowingState,
  judgeStreamFollowing,
} from './following-judge.js';
export {
  createStreamJudge,
  DEFAULT_ERROR_REFRESH_POINTS,
  DEFAULT_FULL_PERIOD_RECHECK_SHARE,
  DEFAULT_REFIT_POINTS,
  judgeStream,
  type StreamJudge,
  type StreamJudgeErrors,
  type StreamJudgeModel,
  type StreamJudgeOptions,
  type StreamJudgeModelState,
  type StreamJudgeState,
} from './stream-judge.js';
export { STREAM_DEFAULTS, type StreamDefaults } from './stream-defaults.js';
export {
  bandHolding,
  baselineFindsOrdinary,
  LEARNED_ONSET_POINTS,
  flagHeld,
  heldPoint,
  learnedOverride,
  learnedScores,
  learnedSeverity,
  type HeldTarget,
  type LearnedOverride,
} from './learned.js';
export {
  MAX_SHAPE_REFERENCE_POINTS,
  nearestNeighbourDistances,
  nearestNeighbourDistancesInSlices,
  shapeLength,
  shapeReferenceInSlices,
  shapeReferenceOf,
  shapeScores,
  shapeScoresInSlices,
  trailingShapeScores,
  trailingShapeScorer,
  type ShapeReferenceData,
  type ShapeScores,
  type TrailingShapeScorer,
} from './shape-distance.js';
export {
  DEFAULT_STABLE_TREND_WINDOW,
  defaultChangePointThreshold,
  detectChangePointSeries,
  effectiveStableTrendWindow,
} from './changepoint.js';
export { analyseChangePoints, type ChangePointAnalysis } from './changepoint.js';
export { familyConfidence, normalUpperTail, segmentSplits } from './changepoint-segments.js';
export { seededRandom } from './random.js';
export {
  CHANGEPOINT_RULE_NAMES,
  CHANGEPOINT_RULES,
  changePointRulesInForce,
  DETECTION_RULE_NAMES,
  ENTIRE_SERIES_RULES,
  LAST_POINT_RULES,
  rulesInForce,
  withoutRules,
  type ChangePointRuleName,
  type ChangePointRulesInForce,
  type DetectionRuleName,
  type EntireSeriesRuleName,
  type LastPointRuleName,
  type Rule,
  type RulesInForce,
} from './rules.js';
export { TUNING, type Tuned, type TunedName } from './tuning.js';
