// The engine's public contract. Everything here is plain data: no I/O, no clocks, no globals.
import type { ChangePointRuleName, DetectionRuleName } from './rules.js';

export const GRANULARITIES = [
  'yearly',
  'monthly',
  'weekly',
  'daily',
  'hourly',
  'minutely',
  'secondly',
  'microsecond',
  'none',
] as const;
export type Granularity = (typeof GRANULARITIES)[number];

export const IMPUTE_MODES = ['auto', 'previous', 'linear', 'fixed', 'zero', 'notFill'] as const;
export type ImputeMode = (typeof IMPUTE_MODES)[number];

/** A series as the API received it, after JSON-level validation. */
export interface SeriesInput {
  /**
   * Epoch milliseconds of each point, in input order, or null when the timestamps are not used
   * (granularity `none`). Sub-millisecond digits are already truncated by the parser.
   */
  readonly timestampsMs: readonly number[] | null;
  /** Finite values, one per point, in input order. */
  readonly values: readonly number[];
  readonly granularity: Granularity;
  /** Multiplies the granularity's step (minutely + 5 = 5-minute data); an integer >= 1. */
  readonly customInterval: number;
  readonly imputeMode: ImputeMode;
  /** Required when imputeMode is `fixed`; `zero` implies 0. */
  readonly imputeFixedValue?: number;
}

/** The lowest and highest value of a series' past (`DetectOptions.pastRange`); min <= max. */
export interface PastRange {
  readonly min: number;
  readonly max: number;
}

export interface DetectOptions {
  /** undefined = detect the period; 0 = treat as non-seasonal; >= 1 = use as given. */
  readonly period?: number;
  /** 0..100; higher = narrower margins = more anomalies. */
  readonly sensitivity: number;
  /** Upper bound on the share of points flagged, in (0, 0.5). */
  readonly maxAnomalyRatio: number;
  /**
   * Last-point detection only: the lowest and highest value the series took before the request's
   * first point, over whatever past the client keeps. The new-level alarm then also needs the
   * value beyond this range: a level the series has been at before is not new.
   */
  readonly pastRange?: PastRange;
  /**
   * Internal, for evaluation only (the ablation in eval/): the rules in force, by name
   * (`LAST_POINT_RULES`, `ENTIRE_SERIES_RULES` in rules.ts); absent: every rule. A variant is
   * the list less the rules it removes (`withoutRules`). The API never sets it.
   */
  readonly rules?: readonly DetectionRuleName[];
  /**
   * Internal, for evaluation and tests: the same rules switched off by name (false = off),
   * applied after `rules`. The API never sets it.
   */
  readonly components?: DetectionComponents;
  /**
   * Internal, for evaluation only (eval/src/replay.ts): called for every judged last point with
   * what its verdict was decided from, so that other decision rules can be replayed offline on
   * the same inputs. The API never sets it.
   */
  readonly onDecision?: (inputs: DecisionInputs) => void;
}

/**
 * What a last point's verdict is decided from (`outsideBand`, `sustainedAlarm`): everything the
 * rules read, computed as the detector computes it, the sustained scores even where the verdict
 * did not need them.
 */
export interface DecisionInputs {
  /** Value − expected value. */
  readonly deviation: number;
  /** The band's half-width at the request's sensitivity, on the side the point deviates to. */
  readonly margin: number;
  /** The calibrated noise scale the band is a multiple of. */
  readonly scale: number;
  /** Largest |one-step error| of the refractory stretch (0 with the rule off). */
  readonly largest: number;
  /** Largest |one-step error| of the newest NEW_EVENT_RISE_POINTS (0 with the rule off). */
  readonly newest: number;
  /** Sustained-error scores (NaN when the window holds too few errors or the alarm is off). */
  readonly sustainedNow: number;
  readonly sustainedBefore: number;
  /** `bandReportedWithin` of the sustained stretch (false when the alarm is off). */
  readonly reportedInStretch: boolean;
  /**
   * Outside its band, but the band reported one of the ECHO_POINTS points before it
   * (`reportedJustBefore`): not reported again. False for a point inside its band, and with the
   * refractory rule or the `echo` component off.
   */
  readonly echo: boolean;
  /**
   * Outside its band (and not an echo), but a marginal miss well inside the older half's range
   * (`familiarMiss`): not reported. False with the `familiarRange` component off.
   */
  readonly familiar: boolean;
  /**
   * Outside its band (not an echo, not familiar), but a marginal miss the window had at least
   * ROUTINE_MISS_COUNT times in its local noise (`routineMiss`): not reported. False with the
   * `routineMiss` component off.
   */
  readonly routine: boolean;
  /** `newLevelExcess` of the point (0 with the `newLevel` component off). */
  readonly newLevel: number;
  /** `stuckRun` of the point (0 with the `stuck` component off). */
  readonly stuck: number;
  /** Period the point was judged with (0 = none). */
  readonly period: number;
  readonly isAnomaly: boolean;
}

/** The last-point detector's components (see README, "Last-point detection"); all default to on. */
export interface DetectionComponents {
  /** Judge a window longer than its suggestion from the newest suggestedWindow points, the rest as past range. */
  readonly suggestedSpan?: boolean;
  /** Widen the noise scale to the spread of the window's own recent one-step errors. */
  readonly calibration?: boolean;
  /** No new alarm while an event is under way in the window, unless a deviation dwarfs it. */
  readonly refractory?: boolean;
  /**
   * With the refractory rule: no alarm for a point right after one the band reported
   * (`reportedJustBefore`), which the one-step errors can miss.
   */
  readonly echo?: boolean;
  /** Prefer the period that removes the most residual variance among lags close to the estimate. */
  readonly periodStability?: boolean;
  /** Accept a data-driven period with 2 full cycles in the history (off: 3, as the batch detectors). */
  readonly twoCyclePeriod?: boolean;
  /** Alarm once when the mean of the recent one-step errors becomes unusual for the window. */
  readonly sustainedError?: boolean;
  /** Drop a data-driven period when the forecast without it errs clearly less. */
  readonly seasonalCheck?: boolean;
  /** Alarm once when the value leaves the range of the window's older points (`newLevelAlarm`). */
  readonly newLevel?: boolean;
  /** Hold back a point just outside its band whose value lies well inside that range (`familiarMiss`). */
  readonly familiarRange?: boolean;
  /** Hold back a point just outside its band when the window missed as far, locally, again and again (`routineMiss`). */
  readonly routineMiss?: boolean;
  /** The band wider on the side where the recent one-step errors spread wider (`sideSpreads`); off: symmetric. */
  readonly asymmetricBand?: boolean;
  /** The sustained-error alarm only on a point deviating by SUSTAINED_QUIET_SHARE of its band or more. */
  readonly sustainedQuiet?: boolean;
  /** Alarm once when the value has repeated exactly for STUCK_POINTS points where the older points never stood still (`stuckRun`, `stuckAlarm`). */
  readonly stuck?: boolean;
  /** Entire series: inside a transient level excursion, expect the level its surroundings hold (`excursionLevels`). */
  readonly excursion?: boolean;
  /** Entire series: the noise scale also follows the residuals' shoulders (`shoulderScale`); off: the MAD alone. */
  readonly shoulder?: boolean;
  /** Entire series: a seasonal phase whose noise is wider than the series' gets its own band (`phaseScales`). */
  readonly phaseScale?: boolean;
  /** Entire series: no report of an excursion beyond the band that ROUTINE_EVENT_COUNT other excursions reach (`reportEvents`). */
  readonly routineEvent?: boolean;
  /** Entire series: an excursion beyond the band is reported once, at its first point (`reportEvents`). */
  readonly eventOnset?: boolean;
}

export interface ChangePointOptions {
  /** undefined = detect the period; 0 = non-seasonal; >= 1 = use as given. */
  readonly period?: number;
  /** Points on each side of a candidate that must show a stable trend; integer >= 3, < n/2. */
  readonly stableTrendWindow?: number;
  /** 0.01..0.99; a point is a changepoint when its confidence is >= threshold (and the seed's rules hold). */
  readonly threshold?: number;
  /**
   * Internal, for the evaluation's ablation: the changepoint rules in force, by name
   * (`CHANGEPOINT_RULES` in rules.ts); absent: every rule. The API never sets it.
   */
  readonly rules?: readonly ChangePointRuleName[];
  /**
   * Internal switches of the same rules (false = off), applied after `rules` (all on by default;
   * the API never sets them). README.md, "Changepoints", describes each.
   */
  readonly components?: ChangePointComponents;
}

/** Components of the changepoint pipeline that the ablation can switch off (all default on). */
export interface ChangePointComponents {
  /** Remove a robust straight line from the error before taking gradients. */
  readonly detrend?: boolean;
  /**
   * Choose among the candidates by significance-tested binary segmentation; off: the seed's
   * rules alone (largest gradients first, local maximum within ±k, gradient confidence).
   */
  readonly refine?: boolean;
  /**
   * In that segmentation, test each step against a parabola (level, slope, curvature) fitted
   * to its segment; off: against a level only.
   */
  readonly splitTrend?: boolean;
}

/** Entire-series result: every array has one element per input point, in input order. */
export interface EntireResult {
  readonly period: number;
  readonly expectedValues: number[];
  readonly upperMargins: number[];
  readonly lowerMargins: number[];
  readonly isAnomaly: boolean[];
  readonly isPositiveAnomaly: boolean[];
  readonly isNegativeAnomaly: boolean[];
  /** 0 for normal points, (0, 1] for anomalies. */
  readonly severity: number[];
}

/** Last-point result: the last point judged only from the points before it. */
export interface LastResult {
  readonly period: number;
  readonly suggestedWindow: number;
  readonly expectedValue: number;
  readonly upperMargin: number;
  readonly lowerMargin: number;
  readonly isAnomaly: boolean;
  readonly isPositiveAnomaly: boolean;
  readonly isNegativeAnomaly: boolean;
  readonly severity: number;
}

export interface ChangePointResult {
  readonly period: number;
  readonly isChangePoint: boolean[];
  /** In [0, 1], one per input point. */
  readonly confidenceScores: number[];
}

/** The vendor's error codes that the engine itself can raise (the API adds the parser's codes). */
export type SeriesErrorCode = 'InvalidSeries' | 'InvalidModelArgument';

/**
 * A problem with the series found while aligning, imputing or modelling it. The API turns it
 * into a 400 with `code` and `message` as they are.
 */
export class SeriesError extends Error {
  readonly code: SeriesErrorCode;
  constructor(code: SeriesErrorCode, message: string) {
    super(message);
    this.name = 'SeriesError';
    this.code = code;
  }
}
