// Last-point detection and its streaming form: the newest point judged only from the points
// before it, by forecasting it from a model fitted on them.
import { tooSparseForSeasonality, type PreparedSeries } from './alignment.js';
import { fitHistory, phaseOf } from './decomposition.js';
import {
  expectedLengthOf,
  prepareRange,
  rangePeriodProblem,
  requireMinimumLength,
  seriesContext,
  type ModelInput,
  type SeriesContext,
} from './prepare.js';
import { robustScale, scaleFloor, theilSen } from './robust.js';
import { marginMultiplier, severityOf, suggestedWindow } from './scoring.js';
import type { DetectOptions, Granularity, LastResult, SeriesInput } from './types.js';

/** Fewest points (judged point included) the streaming detector judges: the API's minimum. */
export const MIN_STREAM_POINTS = 12;
/** Longest stretch the streaming detector goes without re-detecting the period. */
export const MAX_PERIOD_RECHECK_POINTS = 100;

/**
 * Newest points the forecast's Theil–Sen line runs through: two trend windows' worth, enough to
 * average the noise down, recent enough to follow the current level.
 */
const FORECAST_POINTS = 31;

/** What a forecast of the next point says. */
interface Forecast {
  readonly expected: number;
  /** Robust standard deviation of the forecast error. */
  readonly scale: number;
}

/**
 * Forecasts slot `targetSlot` (relative to the history's first slot) from the history alone:
 * the history's seasonal profile and noise come from `fitHistory`; a Theil–Sen line through
 * the newest FORECAST_POINTS deseasonalised points is extended to the target; the target's
 * phase adds its seasonal value. The error scale is the robust scale of the history's residuals, widened
 * for the uncertainty of the extrapolated line:
 *
 *   scale × sqrt(1 + 1.57 / R + 1.1 × d² / Sxx)
 *
 * (R points in the line, d = distance from their mean slot to the target, Sxx = their spread;
 * 1.57 and 1.1 are the variance penalties of a median and of Theil–Sen against least squares).
 */
function forecastNext(history: PreparedSeries, period: number, targetSlot: number): Forecast {
  const { values, slots, imputed } = history;
  const m = values.length;
  const model = fitHistory(values, slots, imputed, period);

  const scale = robustScale(model.scaleResiduals, scaleFloor(values));

  const points = Math.min(m, FORECAST_POINTS);
  const recent = new Float64Array(points);
  for (let j = m - points; j < m; j++) {
    const seasonal = model.profile === null ? 0 : model.profile[phaseOf(slots[j]!, period)]!;
    recent[j - m + points] = values[j]! - seasonal;
  }
  const line = theilSen(recent, slots.subarray(m - points, m), 0, points);
  let meanSlot = 0;
  for (let j = m - points; j < m; j++) meanSlot += slots[j]!;
  meanSlot /= points;
  let spread = 0;
  for (let j = m - points; j < m; j++) spread += (slots[j]! - meanSlot) ** 2;
  const distance = targetSlot - meanSlot;
  const inflation = Math.sqrt(1 + 1.57 / points + (spread > 0 ? (1.1 * distance * distance) / spread : 0));

  const seasonal = model.profile === null ? 0 : model.profile[phaseOf(targetSlot, period)]!;
  return { expected: line.intercept + line.slope * targetSlot + seasonal, scale: scale * inflation };
}

/** Judges point `last` of the context from the prepared history of points from..last-1. */
function judgeLast(ctx: SeriesContext, from: number, last: number, model: ModelInput, opts: DetectOptions): LastResult {
  const targetSlot = ctx.slots === null ? last - from : ctx.slots[last]! - ctx.slots[from]!;
  const value = ctx.values[last]!;
  const forecast = forecastNext(model.prepared, model.period, targetSlot);
  const margin = marginMultiplier(opts.sensitivity) * forecast.scale;
  const deviation = value - forecast.expected;
  // The cap, max(1, floor(ratio × n)), is at least 1, so it never un-flags a single point.
  const isAnomaly = Math.abs(deviation) > margin && deviation !== 0;
  return {
    period: model.period,
    suggestedWindow: suggestedWindow(model.period, last - from + 1),
    expectedValue: forecast.expected,
    upperMargin: margin,
    lowerMargin: margin,
    isAnomaly,
    isPositiveAnomaly: isAnomaly && deviation > 0,
    isNegativeAnomaly: isAnomaly && deviation < 0,
    severity: isAnomaly ? severityOf(deviation, margin) : 0,
  };
}

/**
 * Judges the last point from the points before it only: the timestamps of the whole series are
 * validated, but the period is detected, the gaps imputed and the model fitted on points
 * 0..n−2, and the last point is forecast (trend extrapolated from the recent past plus the
 * seasonal value of its phase). Changing the last value therefore never changes expectedValue
 * or the margins. O(n) once the period is known, plus O(n log n) to detect it.
 */
export function detectLastPoint(input: SeriesInput, opts: DetectOptions): LastResult {
  const n = input.values.length;
  requireMinimumLength(n);
  const ctx = seriesContext(input);
  const problem = rangePeriodProblem(ctx, 0, n, opts.period);
  if (problem !== null) throw problem;
  return judgeLast(ctx, 0, n - 1, prepareRange(ctx, 0, n - 1, opts.period), opts);
}

export interface StreamOptions extends DetectOptions {
  /** Trailing window judged for each point, the point itself included. */
  readonly windowPoints: number;
  /** Fewest points a window must hold (judged point included) to be judged; default 12. */
  readonly minHistory?: number;
  /**
   * Auto period only: points between period re-detections. Default: a tenth of the current
   * window, between 1 and 100 (so it is re-checked often while the window is still filling).
   * 1 = detect for every point, exactly as detectLastPoint does.
   */
  readonly periodRecheckPoints?: number;
}

/**
 * Last-point detection for every point of a series, as a streaming client calling last/detect
 * with a trailing window would get it: record i = detectLastPoint over points
 * max(0, i − windowPoints + 1)..i, with two documented shortcuts that keep 20,000 points in
 * seconds:
 *  - without a client period, the period is detected on the window's history only every
 *    `periodRecheckPoints` points and reused in between (the window slides by fewer points than
 *    it holds, so the period rarely changes in between);
 *  - timestamps are validated once for the whole series and each window's slots are the
 *    differences of the whole series' slots. They equal the window's own alignment except for
 *    monthly/yearly series anchored on day 29–31, where a window starting on a shorter month's
 *    end would be anchored differently.
 * Points whose window holds fewer than minHistory points, or for which detectLastPoint would
 * reject the window (a client period longer than half the window), are not judged: not
 * anomalous, expectedValue = value, margins 0, severity 0.
 */
export function detectStream(input: SeriesInput, opts: StreamOptions): LastResult[] {
  const n = input.values.length;
  const ctx = seriesContext(input);
  const window = Math.max(2, Math.floor(opts.windowPoints));
  const minPoints = Math.max(2, Math.floor(opts.minHistory ?? MIN_STREAM_POINTS));
  const results: LastResult[] = new Array<LastResult>(n);
  let cachedPeriod = 0;
  let detectedAt = Number.NEGATIVE_INFINITY;

  for (let i = 0; i < n; i++) {
    const from = Math.max(0, i - window + 1);
    const length = i - from + 1;
    if (length < minPoints) {
      results[i] = notJudged(input.values[i]!, opts.period ?? cachedPeriod, length);
      continue;
    }
    let model: ModelInput;
    if (opts.period !== undefined) {
      if (rangePeriodProblem(ctx, from, i + 1, opts.period) !== null) {
        results[i] = notJudged(input.values[i]!, opts.period, length);
        continue;
      }
      model = prepareRange(ctx, from, i, opts.period);
    } else {
      const recheckPoints = opts.periodRecheckPoints ?? Math.min(MAX_PERIOD_RECHECK_POINTS, length / 10);
      const recheck = Math.max(1, Math.floor(recheckPoints));
      const sparse = tooSparseForSeasonality(expectedLengthOf(ctx, from, i), i - from);
      if (sparse || i - detectedAt >= recheck) {
        model = prepareRange(ctx, from, i, undefined);
        if (!sparse) {
          cachedPeriod = model.period;
          detectedAt = i;
        }
      } else {
        model = prepareRange(ctx, from, i, cachedPeriod);
      }
    }
    results[i] = judgeLast(ctx, from, i, model, opts);
  }
  return results;
}

/**
 * The vendor's window for last detection without a period (BEHAVIOUR.md §7): what a streaming
 * client should use when suggestedWindow (the whole series, under the rule) would make
 * every streamed point re-read everything before it.
 */
export const DEFAULT_WINDOW_WITHOUT_PERIOD: Readonly<Record<Granularity, number>> = {
  yearly: 13,
  monthly: 13,
  weekly: 13,
  daily: 29,
  hourly: 169,
  minutely: 1441,
  secondly: 1441,
  microsecond: 1001,
  none: 1441,
};

/** Trailing window for streaming: four periods and one point, else the granularity default. */
export function defaultStreamWindow(period: number, granularity: Granularity): number {
  return period > 0 ? period * 4 + 1 : DEFAULT_WINDOW_WITHOUT_PERIOD[granularity];
}

function notJudged(value: number, period: number, length: number): LastResult {
  return {
    period,
    suggestedWindow: suggestedWindow(period, length),
    expectedValue: value,
    upperMargin: 0,
    lowerMargin: 0,
    isAnomaly: false,
    isPositiveAnomaly: false,
    isNegativeAnomaly: false,
    severity: 0,
  };
}
