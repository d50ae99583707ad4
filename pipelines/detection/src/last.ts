// Last-point detection and its streaming form: the newest point judged only from the points
// before it, by forecasting it from a model fitted on them.
import { tooSparseForSeasonality, type PreparedSeries } from './alignment.js';
import { cycleMedianScale, fitHistory, phaseOf } from './decomposition.js';
import {
  expectedLengthOf,
  prepareRange,
  rangePeriodProblem,
  requireMinimumLength,
  seriesContext,
  type ModelInput,
  type SeriesContext,
} from './prepare.js';
import { MAD_TO_SIGMA, MEAN_ABS_TO_SIGMA, median, medianInPlace, robustScale, scaleFloor, theilSen } from './robust.js';
import { followDwellPoints, followedWindow, largestFollowedWindow, marginMultiplier, severityOf, suggestedWindow } from './scoring.js';
import type { DetectOptions, Granularity, LastResult, PastRange, SeriesInput } from './types.js';
import { rulesInForce, type RulesInForce } from './rules.js';
import { TUNING } from './tuning.js';

/**
 * Fewest full cycles a data-driven period needs in a last-point history (the batch detectors
 * need 3). A streaming window of a few hundred points holds only two days of 5-minute data;
 * the seasonal fit that accepts a period is out of sample (one cycle against the other) at any
 * count, and the forecast's seasonal profile needs 2 cycles.
 */
export const LAST_POINT_MIN_CYCLES = TUNING.LAST_POINT_MIN_CYCLES.value;

/** Fewest full cycles a data-driven period needs under these rules (`twoCyclePeriod`). */
export function minCyclesOf(rules: RulesInForce): number {
  return rules.twoCyclePeriod ? LAST_POINT_MIN_CYCLES : 3;
}

/** Fewest points (judged point included) the streaming detector judges: the API's minimum. */
export const MIN_STREAM_POINTS = 12;
/** Longest stretch the streaming detector goes without re-detecting the period. */
export const MAX_PERIOD_RECHECK_POINTS = TUNING.MAX_PERIOD_RECHECK_POINTS.value;

/**
 * Newest points the forecast's Theil–Sen line runs through: two trend windows' worth, enough to
 * average the noise down, recent enough to follow the current level.
 */
export const FORECAST_POINTS = TUNING.FORECAST_POINTS.value;

/**
 * How much wider the forecast's error scale is than the history's noise scale for a line through
 * `points` points extrapolated `distance` slots past their mean slot (`spread`: their Σ(slot −
 * mean)²): sqrt(1 + LINE_MEDIAN_PENALTY / R + LINE_SLOPE_PENALTY × d² / Sxx).
 */
export function lineInflation(points: number, distance: number, spread: number): number {
  return Math.sqrt(
    1 + TUNING.LINE_MEDIAN_PENALTY.value / points + (spread > 0 ? (TUNING.LINE_SLOPE_PENALTY.value * distance * distance) / spread : 0),
  );
}

/** What a forecast of the next point says. */
interface Forecast {
  readonly expected: number;
  /** Robust standard deviation of the forecast error. */
  readonly scale: number;
  /**
   * One-step errors of the history's newest points (oldest first), each forecast from the
   * points before it only: see `recentErrors`.
   */
  readonly recentErrors: Float64Array;
  /**
   * With `levelErrors`: for every observed history point from ERROR_LEVEL_POINTS on (oldest
   * first), its deseasonalised, tilted value − the MEAN of the ERROR_LEVEL_POINTS before it: a
   * cheaper one-step error (a running sum, O(1) a point) for the sustained-error alarm, which
   * needs the whole window's errors.
   */
  readonly levelErrors: Float64Array;
  /** The seasonal profile the forecast used (null: none). */
  readonly profile: Float64Array | null;
  /** What the history was deseasonalised with per point, where not the profile (`HistoryFit.pointSeasonal`). */
  readonly pointSeasonal: Float64Array | null;
  /** The widening of the scale for the extrapolated line (`scale` = the history's noise × this). */
  readonly inflation: number;
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
 * With `errorPoints` > 0 it also returns the one-step errors of that many newest history points
 * (calibration, refractory), and with `levelErrors` the cheaper errors of the whole history
 * (sustained-error alarm).
 */
function forecastNext(
  history: PreparedSeries,
  period: number,
  targetSlot: number,
  errorPoints: number,
  levelErrors = false,
): Forecast {
  const { values, slots, imputed } = history;
  const m = values.length;
  const model = fitHistory(values, slots, imputed, period);

  const scale = robustScale(model.scaleResiduals, scaleFloor(values));

  const points = Math.min(m, FORECAST_POINTS);
  const recent = new Float64Array(points);
  for (let j = m - points; j < m; j++) recent[j - m + points] = values[j]! - historySeasonal(model, slots, period, j);
  const line = theilSen(recent, slots.subarray(m - points, m), 0, points);
  let meanSlot = 0;
  for (let j = m - points; j < m; j++) meanSlot += slots[j]!;
  meanSlot /= points;
  let spread = 0;
  for (let j = m - points; j < m; j++) spread += (slots[j]! - meanSlot) ** 2;
  const distance = targetSlot - meanSlot;
  const inflation = lineInflation(points, distance, spread);

  const seasonal = model.profile === null ? 0 : model.profile[phaseOf(targetSlot, period)]!;
  const u =
    errorPoints > 0 || levelErrors
      ? tilted(values, slots, model, period, line.slope, levelErrors ? 0 : m - errorPoints - ERROR_LEVEL_POINTS)
      : null;
  return {
    expected: line.intercept + line.slope * targetSlot + seasonal,
    scale: scale * inflation,
    recentErrors: errorPoints > 0 ? recentErrors(u!, imputed, errorPoints) : new Float64Array(0),
    levelErrors: levelErrors ? meanLevelErrors(u!, imputed) : new Float64Array(0),
    profile: model.profile,
    pointSeasonal: model.pointSeasonal,
    inflation,
  };
}

/** The seasonal value history point j is deseasonalised with: its own (`pointSeasonal`) or its phase's. */
function historySeasonal(
  model: { readonly profile: Float64Array | null; readonly pointSeasonal: Float64Array | null },
  slots: Float64Array,
  period: number,
  j: number,
): number {
  if (model.profile === null) return 0;
  return model.pointSeasonal !== null ? model.pointSeasonal[j]! : model.profile[phaseOf(slots[j]!, period)]!;
}

/** Points before each recent point its one-step level is the median of. */
export const ERROR_LEVEL_POINTS = TUNING.ERROR_LEVEL_POINTS.value;

/**
 * The history deseasonalised and tilted by the forecast line's slope: u[j] = value − seasonal −
 * slope × slot. A level carried forward along the slope from slot a to slot j is u[a] + slope ×
 * slot j, so the median of such levels is the median of the u's plus one shift, and a window of
 * u's can slide along the history sorted.
 */
function tilted(
  values: Float64Array,
  slots: Float64Array,
  model: { readonly profile: Float64Array | null; readonly pointSeasonal: Float64Array | null },
  period: number,
  slope: number,
  from: number,
): Float64Array {
  // Only points from `from` on are read; the rest stay 0.
  const u = new Float64Array(values.length);
  for (let j = Math.max(0, from); j < values.length; j++) {
    u[j] = values[j]! - historySeasonal(model, slots, period, j) - slope * slots[j]!;
  }
  return u;
}

/**
 * One-step forecast errors of the newest `count` observed history points (oldest first), each
 * judged only from the ERROR_LEVEL_POINTS points before it, as last-point detection would have
 * judged it when it was the newest point: deseasonalised value − the median of the preceding
 * deseasonalised values carried forward along the current line's slope. A cheap stand-in for
 * the full forecast (a median instead of the Theil–Sen line), O(count × ERROR_LEVEL_POINTS)
 * with the window of medians kept sorted as it slides.
 */
function recentErrors(u: Float64Array, imputed: Uint8Array | null, count: number): Float64Array {
  const m = u.length;
  const first = Math.max(ERROR_LEVEL_POINTS, m - count);
  if (first >= m) return new Float64Array(0);
  const sorted = Array.from(u.subarray(first - ERROR_LEVEL_POINTS, first)).sort((x, y) => x - y);
  const errors = new Float64Array(m - first);
  const half = ERROR_LEVEL_POINTS >> 1;
  let written = 0;
  for (let j = first; j < m; j++) {
    if (j > first) {
      slideSorted(sorted, u[j - 1 - ERROR_LEVEL_POINTS]!, u[j - 1]!);
    }
    if (imputed !== null && imputed[j] !== 0) continue;
    errors[written++] = u[j]! - (sorted[half - 1]! + sorted[half]!) / 2;
  }
  return errors.subarray(0, written);
}

/** `Forecast.levelErrors`: u[j] − mean(u[j−ERROR_LEVEL_POINTS..j−1]) for observed j, oldest first. */
function meanLevelErrors(u: Float64Array, imputed: Uint8Array): Float64Array {
  const m = u.length;
  const k = ERROR_LEVEL_POINTS;
  if (m <= k) return new Float64Array(0);
  const errors = new Float64Array(m - k);
  let sum = 0;
  for (let j = 0; j < k; j++) sum += u[j]!;
  let written = 0;
  for (let j = k; j < m; j++) {
    if (imputed[j] === 0) errors[written++] = u[j]! - sum / k;
    sum += u[j]! - u[j - k]!;
  }
  return errors.subarray(0, written);
}

/** Replaces one occurrence of `out` by `incoming` in an ascending array, keeping it ascending. */
export function slideSorted(sorted: number[], out: number, incoming: number): void {
  let at = sorted.indexOf(out);
  if (at < 0) at = 0;
  while (at > 0 && sorted[at - 1]! > incoming) {
    sorted[at] = sorted[at - 1]!;
    at--;
  }
  while (at < sorted.length - 1 && sorted[at + 1]! < incoming) {
    sorted[at] = sorted[at + 1]!;
    at++;
  }
  sorted[at] = incoming;
}

/**
 * How much wider the last-point band is than the batch band z(s) (`marginMultiplier`): a
 * forecast one step ahead errs with heavier tails than a fitted residual (the level is
 * extrapolated, and real series jump), so the same tail probability needs more noise scales.
 * 1.45 puts the default (sensitivity 95) at about 6 scales (TUNING says what it was tuned on).
 */
export const LAST_POINT_BAND_FACTOR = TUNING.LAST_POINT_BAND_FACTOR.value;

/** Half-width of the last-point band in noise scales: LAST_POINT_BAND_FACTOR × z(s). */
export function lastPointMultiplier(sensitivity: number): number {
  return LAST_POINT_BAND_FACTOR * marginMultiplier(sensitivity);
}

/**
 * A period detected in a last-point history is dropped when the forecast without it has a noise
 * scale under this share of the seasonal forecast's, and of the seasonal noise weighed cycle by
 * cycle (`cycleMedianScale`).
 */
export const SEASONAL_SCALE_RATIO = TUNING.SEASONAL_SCALE_RATIO.value;

/**
 * The seasonal check (rule `seasonalCheck`) of the last-point detector and the incremental judge:
 * whether a detected period is dropped, given the noise scales of the forecast without it
 * (`plain`), of the seasonal forecast (`seasonal`) and of the seasonal fit weighed cycle by cycle
 * (`cycles`, asked only when the first test drops it: `cycleMedianScale` is the costly part), all
 * three on the same footing (the forecast line's inflation applied to each or to none).
 */
export function seasonalCheckDrops(plain: number, seasonal: number, cycles: () => number): boolean {
  return plain < SEASONAL_SCALE_RATIO * seasonal && plain < SEASONAL_SCALE_RATIO * cycles();
}

/** Newest one-step errors whose spread calibrates the noise scale. */
export const CALIBRATION_POINTS = TUNING.CALIBRATION_POINTS.value;
/**
 * Band half-width, in noise scales, beyond which a recent one-step error means that an event is
 * under way (z at the service's default sensitivity, 95).
 */
export const REFRACTORY_Z = lastPointMultiplier(TUNING.REFRACTORY_SENSITIVITY.value);
/**
 * A deviation this many times the largest error of the event under way is a new event and is
 * flagged despite the refractory rule.
 */
export const NEW_EVENT_FACTOR = TUNING.NEW_EVENT_FACTOR.value;
/**
 * Newest one-step errors that belong to an event still rising: when the largest error of the
 * refractory stretch is among them, a deviation that dwarfs it is the same event growing (a
 * spike over two or three points), not a new one, and the new-event exception does not apply.
 */
export const NEW_EVENT_RISE_POINTS = TUNING.NEW_EVENT_RISE_POINTS.value;
/**
 * Points before the judged one that the refractory rule looks back over (fewer where the window
 * holds fewer errors). A count of points, not a share of the window: an event lasts as long
 * whatever window the client sends, and a short window (4 periods + 1, the suggested one) would
 * otherwise forget an event under way after a few points and report it again and again.
 */
export const REFRACTORY_POINTS = TUNING.REFRACTORY_POINTS.value;

/** One-step errors averaged over this many points for the sustained-error alarm. */
export const SUSTAINED_POINTS = TUNING.SUSTAINED_POINTS.value;
/**
 * Standard deviations above the window's usual SUSTAINED_POINTS-point mean absolute error at
 * which a sustained rise of the errors (a drift, a change of regime that no single point shows)
 * raises an alarm (README "Last-point detection").
 */
export const SUSTAINED_Z = TUNING.SUSTAINED_Z.value;
/**
 * Fewest one-step errors the sustained-error alarm needs: six stretches of SUSTAINED_POINTS, so
 * that the reference holds a few independent means (with fewer, stationary noise fired it while
 * a stream's window was still filling).
 */
const SUSTAINED_MIN_ERRORS = TUNING.SUSTAINED_MIN_STRETCHES.value * SUSTAINED_POINTS;

/**
 * How unusual the mean absolute one-step error of the newest SUSTAINED_POINTS errors is against
 * the window's own history of such means, in standard deviations: `now` for the newest stretch,
 * `before` the largest of the SUSTAINED_POINTS stretches ending just before it (one to
 * SUSTAINED_POINTS errors earlier). The reference means are those of every stretch that ends
 * before the newest one begins, so it never contains the errors it judges. Both NaN when there
 * are fewer than SUSTAINED_MIN_ERRORS errors or the reference has no spread.
 */
export interface SustainedScores {
  now: number;
  before: number;
  /** The reference's mean and standard deviation (of the stretch means) the scores are in. */
  referenceMean?: number;
  referenceSd?: number;
}

export function sustainedScores(errors: Float64Array): SustainedScores {
  return sustainedScoresInto(errors, errors.length, { now: Number.NaN, before: Number.NaN });
}

/**
 * `sustainedScores` of errors[0, m), written into `out` and returned: the streaming judge keeps
 * its errors in a longer buffer and calls this for every point without allocating.
 */
export function sustainedScoresInto(errors: Float64Array, m: number, out: SustainedScores): SustainedScores {
  const L = SUSTAINED_POINTS;
  out.now = Number.NaN;
  out.before = Number.NaN;
  if (m < SUSTAINED_MIN_ERRORS) return out;
  // Rolling sums of |error| over L points, slid along once.
  let rolling = 0;
  for (let j = 0; j < L; j++) rolling += Math.abs(errors[j]!);
  let sum = 0;
  let sumSq = 0;
  let count = 0;
  // rolling = sum over [end − L, end); reference ends L..m − L − 1.
  let end = L;
  for (; end <= m - L - 1; end++) {
    const v = rolling / L;
    sum += v;
    sumSq += v * v;
    count++;
    rolling += Math.abs(errors[end]!) - Math.abs(errors[end - L]!);
  }
  // rolling now sums [m − 2L, m − L).
  // Slide on to the newest stretch: `before` is the largest mean of the L stretches ending just
  // before it (ends m − L .. m − 1), so an alarm needs the mean to rise above the threshold, not
  // merely to hover around it.
  let before = Number.NEGATIVE_INFINITY;
  for (; end < m; end++) {
    before = Math.max(before, rolling / L);
    rolling += Math.abs(errors[end]!) - Math.abs(errors[end - L]!);
  }
  const now = rolling / L;
  const mean = sum / count;
  const sd = Math.sqrt(Math.max(0, sumSq / count - mean * mean));
  out.referenceMean = mean;
  out.referenceSd = sd;
  if (!(sd > 0)) return out;
  out.now = (now - mean) / sd;
  out.before = (before - mean) / sd;
  return out;
}

/** Robust spread of the newest CALIBRATION_POINTS one-step errors (0 when there are none). */
function calibratedScale(errors: Float64Array, floor: number): number {
  const count = Math.min(errors.length, CALIBRATION_POINTS);
  if (count === 0) return 0;
  return robustScale(errors.subarray(errors.length - count), floor);
}

/** Fewest calibration errors (`CALIBRATION_POINTS` at most) from which the band gets its own spread on each side (`sideSpreads`). */
export const SIDE_MIN_ERRORS = TUNING.SIDE_MIN_ERRORS.value;

/** The calibration errors' spread on each side of their median (`sideSpreads`). */
export interface SideSpreads {
  upper: number;
  lower: number;
}

/**
 * The spread of the newest CALIBRATION_POINTS one-step errors of errors[0, count) on each side of
 * their median c: the errors sorted, `upper` = the median of e − c over their upper half (by rank),
 * `lower` = the median of c − e over their lower half, each × MAD_TO_SIGMA. For noise symmetric
 * about c both are the MAD's scale (ties at c fall into both halves by rank, as the MAD counts
 * them); a series whose errors are skewed (a spiky metric that jumps up but never down as far)
 * gets the wider spread on its heavy side. Both 0 with fewer than SIDE_MIN_ERRORS errors.
 * `scratch` holds at least CALIBRATION_POINTS numbers; the result is written into `out`.
 */
export function sideSpreads(errors: Float64Array, count: number, scratch: Float64Array, out: SideSpreads): SideSpreads {
  const n = Math.min(count, CALIBRATION_POINTS);
  out.upper = 0;
  out.lower = 0;
  if (n < SIDE_MIN_ERRORS) return out;
  const from = count - n;
  const a = scratch;
  for (let j = 0; j < n; j++) a[j] = errors[from + j]!;
  // Selection, not a sort (this runs for every judged point): the median's selection leaves
  // rank half at a[half], the lower ranks before it and the higher after it, so each half by
  // rank is a contiguous range.
  const half = n >> 1;
  const center = medianInPlace(a, 0, n - 1);
  // The upper half is ranks [half, n): a[half, n).
  out.upper = (medianInPlace(a, half, n - 1) - center) * MAD_TO_SIGMA;
  // The lower half is ranks [0, n − half): a[0, half), and for odd n the middle error too, which
  // the upper half's selection may have moved: it goes back to a[half] (no longer needed there).
  if (n % 2 === 1) a[half] = center;
  out.lower = (center - medianInPlace(a, 0, n - half - 1)) * MAD_TO_SIGMA;
  return out;
}

export function largestRecent(errors: Float64Array, points: number): number {
  let largest = 0;
  for (let j = Math.max(0, errors.length - points); j < errors.length; j++) {
    const e = Math.abs(errors[j]!);
    if (e > largest) largest = e;
  }
  return largest;
}

/**
 * The band and the refractory rule: is the point's deviation an alarm? `largest` is the largest
 * one-step error of the refractory stretch, `newest` the largest of its newest
 * NEW_EVENT_RISE_POINTS (both 0 when the rule is off). When `largest` is itself beyond the band
 * of the reference sensitivity, an event is under way and was reported when it began, so the
 * point is not reported again, unless it dwarfs that event (a new event of another order) and
 * that event is not still rising (its largest error among the newest). Fixed reference, so
 * sensitivity still acts monotonically.
 */
export function outsideBand(deviation: number, margin: number, scale: number, largest: number, newest: number): boolean {
  const newEvent = Math.abs(deviation) > NEW_EVENT_FACTOR * largest && newest < largest;
  const ongoing = largest > REFRACTORY_Z * scale && !newEvent;
  return !ongoing && Math.abs(deviation) > margin && deviation !== 0;
}

/**
 * A point outside its band right after one that the band reported is that event going on, not a
 * new one: the one-step errors the refractory rule reads (a point against the median of the 16
 * before it) miss a marginal exceedance that the forecast line caught, so without this a point
 * just beyond its band was often followed by another (NAB dev, machine_temperature and nyc_taxi).
 */
export const ECHO_POINTS = TUNING.ECHO_POINTS.value;

/**
 * Whether the band reported one of the ECHO_POINTS points before the judged one, each judged as
 * it was judged when it was the newest: its deviation from the forecast line through the
 * FORECAST_POINTS before it (`deviationOf(j)`, j = 1 the point just before; NaN: not judged), the
 * default sensitivity's band (REFRACTORY_Z × `scale`, the refractory rule's fixed reference, so
 * a higher sensitivity still never flags fewer points), and the refractory rule over the one-step
 * errors before it (`errors[0, count − j)`; `stretch` 0: the rule off). Asked only of a point
 * outside its band.
 */
export function reportedJustBefore(
  deviationOf: (j: number) => number,
  errors: Float64Array,
  count: number,
  scale: number,
  stretch: number,
): boolean {
  for (let j = 1; j <= ECHO_POINTS; j++) {
    const deviation = deviationOf(j);
    if (!Number.isNaN(deviation) && reportedAfter(deviation, errors, Math.max(0, count - j), stretch, scale)) return true;
  }
  return false;
}

/**
 * The band rule at the default sensitivity (REFRACTORY_Z × `scale`) for a deviation whose earlier
 * one-step errors end at errors[end − 1]: the refractory rule reads the `stretch` errors before.
 */
function reportedAfter(deviation: number, errors: Float64Array, end: number, stretch: number, scale: number): boolean {
  let largest = 0;
  let newest = 0;
  for (let q = Math.max(0, end - stretch); q < end; q++) {
    const a = Math.abs(errors[q]!);
    if (a > largest) largest = a;
    if (q >= end - NEW_EVENT_RISE_POINTS && a > newest) newest = a;
  }
  return outsideBand(deviation, REFRACTORY_Z * scale, scale, largest, newest);
}

/**
 * Whether the band rule would have reported one of the newest `span` one-step errors (oldest
 * first in `errors`): each judged against the reference band (REFRACTORY_Z × `scale`, the
 * default sensitivity's, so that the answer does not depend on the request's sensitivity) with
 * the refractory rule applied over the `stretch` errors before it (`stretch` 0: the rule off).
 * The sustained-error alarm asks this of its own stretch: a rise of the errors' mean that a
 * reported point explains (one spike lifts a 30-point mean) is that point's echo, not news.
 */
export function bandReportedWithin(errors: Float64Array, count: number, span: number, stretch: number, scale: number): boolean {
  const band = REFRACTORY_Z * scale;
  for (let j = Math.max(0, count - span); j < count; j++) {
    // Most errors are inside the band: skip the refractory pass for them.
    if (Math.abs(errors[j]!) > band && reportedAfter(errors[j]!, errors, j, stretch, scale)) return true;
  }
  return false;
}

/**
 * The sustained-error alarm (0 = none, else the score that raised it): the errors' recent mean
 * has just become unusual for this window (it was not over the last SUSTAINED_POINTS points, so
 * it fires once), the band did not report the point, and no point of the stretch itself was
 * reported by the band (`reportedInStretch`, asked last: it is the costly part; see
 * `bandReportedWithin`). An event already under way does not silence it: a burst after
 * scattered marginal exceedances is news the refractory rule would hide. `scores` null = the
 * alarm is off. Independent of the sensitivity, so higher sensitivity never flags fewer.
 */
export function sustainedAlarm(
  outside: boolean,
  deviation: number,
  scores: SustainedScores | null,
  reportedInStretch: () => boolean,
  quietBelow = 0,
): number {
  if (outside || deviation === 0 || scores === null) return 0;
  if (!(scores.now > SUSTAINED_Z) || scores.before > SUSTAINED_Z) return 0;
  if (Math.abs(deviation) < quietBelow) return 0;
  return reportedInStretch() ? 0 : scores.now;
}

/**
 * The sustained-error alarm's point must itself deviate from its forecast by at least this share
 * of its band (`sustainedAlarm`'s `quietBelow` = this × the margin). The alarm reads the errors of
 * the points before the judged one and fires once, at the first point after their mean turned
 * unusual; a point its forecast meets (a burst that has already passed, a quiet point between
 * two bursts) is no place to report a rise, and the alarm is not raised for that stretch. A
 * narrower band (higher sensitivity) lowers the bar, so a higher sensitivity never flags fewer
 * points. On NAB's dev split the false alarms it removes lay within 0.06 of their band from the
 * forecast, the first alarms of labelled windows at 0.12 or more.
 */
export const SUSTAINED_QUIET_SHARE = TUNING.SUSTAINED_QUIET_SHARE.value;

/**
 * The new-level alarm's margin: a value must lie beyond the range of the window's older points
 * by this share of that range. A slow drift to a level the window has not seen (a failing
 * machine's temperature sliding down, a disk that starts writing twice as much) is invisible to
 * the forecast, which follows it, and to the sustained alarm, whose one-step errors stay small.
 */
export const NEW_LEVEL_MARGIN = TUNING.NEW_LEVEL_MARGIN.value;
/**
 * Share of the history, its newest points, that the reference range leaves out: the alarm fires
 * for the first of them to get beyond the older points' range, once.
 */
export const NEW_LEVEL_RECENT_SHARE = TUNING.NEW_LEVEL_RECENT_SHARE.value;
/** Fewest history points the new-level alarm needs (its reference range then spans 50). */
export const NEW_LEVEL_MIN_POINTS = TUNING.NEW_LEVEL_MIN_POINTS.value;

/** Where the newer part of the history values[from, to) begins (NEW_LEVEL_RECENT_SHARE of it). */
export function olderEnd(from: number, to: number): number {
  return to - Math.round(NEW_LEVEL_RECENT_SHARE * (to - from));
}

/** The older part of a history (`olderRange`): where the newer part begins, its lowest and highest value. */
interface OlderRange {
  readonly older: number;
  readonly lo: number;
  readonly hi: number;
}

/**
 * Index where the newer part of the history values[from, to) begins (its last
 * round(NEW_LEVEL_RECENT_SHARE × n) points, n = to − from), with the older part's lowest and
 * highest value; null when the history holds fewer than NEW_LEVEL_MIN_POINTS points or the
 * older part's range is empty. Points with `skip[i]` ≠ 0 (imputed) are left out.
 */
function olderRange(values: Float64Array, from: number, to: number, skip: Uint8Array | null): OlderRange | null {
  const count = to - from;
  if (count < NEW_LEVEL_MIN_POINTS) return null;
  const older = olderEnd(from, to);
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (let i = from; i < older; i++) {
    if (skip !== null && skip[i] !== 0) continue;
    const x = values[i]!;
    if (x < lo) lo = x;
    if (x > hi) hi = x;
  }
  if (!(hi - lo > 0)) return null;
  return { older, lo, hi };
}

/**
 * How far `value` lies beyond the range of the older points of the history values[from, to)
 * (`olderRange`), in units of that range: positive above it, negative below it, 0 when it lies
 * within the range widened by NEW_LEVEL_MARGIN on its side, when one of the newer points already
 * got beyond that, when the history holds fewer than NEW_LEVEL_MIN_POINTS points or the range is
 * empty. With a `past` range (the series before the history, `DetectOptions.pastRange`; asked
 * only once the value is beyond the widened range) the value must also lie beyond the past's
 * range on that side, and so must a newer point to count as having got there first: the alarm
 * waits for the first value beyond both. Depends on the values alone, not on the sensitivity.
 */
export function newLevelExcess(
  values: Float64Array,
  from: number,
  to: number,
  value: number,
  skip: Uint8Array | null = null,
  past: (() => PastRange | null) | null = null,
): number {
  const range = olderRange(values, from, to, skip);
  if (range === null) return 0;
  return excessBeyond(values, range.older, to, range.lo, range.hi, value, skip, past);
}

/**
 * `newLevelExcess` once the older points' range [lo, hi] (lo < hi) is known and the newer points
 * are values[older, to): the incremental judge keeps that range as the window slides.
 */
export function excessBeyond(
  values: Float64Array,
  older: number,
  to: number,
  lo: number,
  hi: number,
  value: number,
  skip: Uint8Array | null = null,
  past: (() => PastRange | null) | null = null,
): number {
  if (!Number.isFinite(value)) return 0;
  const span = hi - lo;
  let above = hi + NEW_LEVEL_MARGIN * span;
  let below = lo - NEW_LEVEL_MARGIN * span;
  const direction = value > above ? 1 : value < below ? -1 : 0;
  if (direction === 0) return 0;
  const range = past === null ? null : past();
  if (range !== null) {
    if (direction > 0 ? !(value > range.max) : !(value < range.min)) return 0;
    above = Math.max(above, range.max);
    below = Math.min(below, range.min);
  }
  for (let i = older; i < to; i++) {
    if (skip !== null && skip[i] !== 0) continue;
    if (direction > 0 ? values[i]! > above : values[i]! < below) return 0;
  }
  return direction > 0 ? (value - hi) / span : (value - lo) / span;
}

/**
 * A deviation under this many margins is marginal: the familiar-range and routine-miss rules
 * may hold it back. Much wider (2.5) held back labelled events 2 to 2.5 margins out.
 */
export const MARGINAL_BAND_RATIO = TUNING.MARGINAL_BAND_RATIO.value;
/**
 * The familiar-range rule's depth: a marginal point is held back when its deseasonalised value
 * lies deeper inside the older half's range than this share of it from both edges.
 */
export const FAMILIAR_EDGE_SHARE = TUNING.FAMILIAR_EDGE_SHARE.value;

/**
 * Whether a point outside its band by less than MARGINAL_BAND_RATIO margins is familiar: its
 * value lies inside the range of the history's older half (`olderRange`) and more than
 * FAMILIAR_EDGE_SHARE of that range from either edge. The forecast missed it narrowly, but the
 * window has seen such values well within its recent range; a marginal miss near or beyond an
 * edge is still reported. False for a deviation of MARGINAL_BAND_RATIO margins or more, and for
 * too short or flat a history. Familiarity does not depend on the margin, and a miss marginal
 * under a narrower band is marginal under a wider one, so a higher sensitivity never flags fewer
 * points.
 */
export function familiarMiss(
  values: Float64Array,
  from: number,
  to: number,
  value: number,
  deviation: number,
  margin: number,
  skip: Uint8Array | null = null,
): boolean {
  if (!(Math.abs(deviation) < MARGINAL_BAND_RATIO * margin)) return false;
  const range = olderRange(values, from, to, skip);
  if (range === null) return false;
  const { lo, hi } = range;
  const depth = FAMILIAR_EDGE_SHARE * (hi - lo);
  return value > lo + depth && value < hi - depth;
}

/**
 * The routine-miss rule's count: a marginal miss is held back when at least this many points of
 * the window jumped as far from the points before them, in their local noise.
 */
export const ROUTINE_MISS_COUNT = TUNING.ROUTINE_MISS_COUNT.value;

/**
 * Whether a point outside its band by less than MARGINAL_BAND_RATIO margins is a routine miss for
 * this window: at least ROUTINE_MISS_COUNT of the history's points jumped from the median of the
 * ERROR_LEVEL_POINTS values before them (`recentErrors` over the values themselves, neither
 * deseasonalised nor tilted: how the series moves, whatever the model) by at least
 * `|deviation| / scale` times the robust spread of the CALIBRATION_POINTS such jumps before them
 * (floored at `scaleFloor` of the values, as the calibration is).
 * Jumps that large, measured against the noise around them, are part of how this series behaves
 * (a spiky server metric); a marginal miss is reported only where they are rare. The count does
 * not depend on the margin, and a miss marginal under a narrower band is marginal under a wider
 * one, so a higher sensitivity never flags fewer points. False for a deviation of
 * MARGINAL_BAND_RATIO margins or more. Asked only of a point the band would otherwise report:
 * O(history × CALIBRATION_POINTS) at worst, the CALIBRATION_POINTS errors kept sorted as they slide.
 */
export function routineMiss(
  values: Float64Array,
  imputed: Uint8Array | null,
  deviation: number,
  margin: number,
  scale: number,
): boolean {
  if (!(Math.abs(deviation) < MARGINAL_BAND_RATIO * margin) || !(scale > 0)) return false;
  const errors = recentErrors(values, imputed, values.length);
  const n = CALIBRATION_POINTS;
  if (errors.length <= n) return false;
  const floor = scaleFloor(values);
  const z = Math.abs(deviation) / scale;
  // The CALIBRATION_POINTS one-step errors before the one judged, ascending.
  const sorted = new Array<number>(n).fill(0);
  for (let j = 0; j < n; j++) sorted[j] = errors[j]!;
  sorted.sort((x, y) => x - y);
  let count = 0;
  for (let i = n; i < errors.length; i++) {
    if (i > n) slideSorted(sorted, errors[i - 1 - n]!, errors[i - 1]!);
    const e = Math.abs(errors[i]!);
    if (e > 0 && e >= z * sortedSpread(sorted, floor) && ++count >= ROUTINE_MISS_COUNT) return true;
  }
  return false;
}

/**
 * `robustScale` of an ascending array (its median absolute deviation from its median × MAD_TO_SIGMA,
 * or the mean absolute deviation × MEAN_ABS_TO_SIGMA when that is 0, at least `floor`), the
 * absolute deviations taken in order by walking out from the middle in both directions.
 */
function sortedSpread(sorted: readonly number[], floor: number): number {
  const n = sorted.length;
  const half = n >> 1;
  const center = n % 2 === 1 ? sorted[half]! : (sorted[half - 1]! + sorted[half]!) / 2;
  // The deviations below the center grow leftwards from `left`, those above rightwards from `right`.
  let left = n % 2 === 1 ? half : half - 1;
  let right = half + (n % 2);
  let lower = 0;
  let upper = 0;
  for (let k = 0; k <= half; k++) {
    let d: number;
    if (right >= n || (left >= 0 && center - sorted[left]! <= sorted[right]! - center)) d = center - sorted[left--]!;
    else d = sorted[right++]! - center;
    if (k === half - 1) lower = d;
    upper = d;
  }
  const mad = n % 2 === 1 ? upper : (lower + upper) / 2;
  if (mad > 0) return Math.max(mad * MAD_TO_SIGMA, floor);
  let meanAbs = 0;
  for (let j = 0; j < n; j++) meanAbs += Math.abs(sorted[j]! - center);
  return Math.max((meanAbs / n) * MEAN_ABS_TO_SIGMA, floor);
}

/**
 * The new-level alarm (0 = none, else `excess`, signed as `newLevelExcess`): the value has just
 * left the range of the window's older points (`excess` ≠ 0), neither the band nor the sustained
 * alarm reported it (`reported`), the errors' recent mean is not unusual (`scores`: the sustained
 * alarm speaks for such an event, now or over the stretch before), and no point of the last
 * SUSTAINED_POINTS was reported by the band (`reportedInStretch`, asked last), so a level reached
 * by a reported jump or spike is not reported again. Independent of the sensitivity, so higher
 * sensitivity never flags fewer.
 */
export function newLevelAlarm(
  reported: boolean,
  excess: number,
  scores: SustainedScores | null,
  reportedInStretch: () => boolean,
): number {
  if (reported || excess === 0) return 0;
  if (scores !== null && (scores.now > SUSTAINED_Z || scores.before > SUSTAINED_Z)) return 0;
  return reportedInStretch() ? 0 : excess;
}

/**
 * Points a stuck run spans, the judged one included: the stuck-value alarm fires at the point
 * that completes a run of this many equal values. An hour of 5-minute points; exact repeats that
 * long do not come from a signal that moves, and the alarm also needs the older half of the
 * window never to have stood still that long (`stuckRun`). On NAB's dev split two runs qualify,
 * both in art_daily_flatmiddle's artificial flat day: one on a point the band reports anyway,
 * one after the band reported the drop into it; the figures are unchanged and cannot choose the
 * length; `npm run eval:inject` shows the delay it costs.
 */
export const STUCK_POINTS = TUNING.STUCK_POINTS.value;

/**
 * The stuck-value alarm's excess (0 = none): the judged `value` and the STUCK_POINTS − 1 newest
 * points of the history values[from, to) are the same number exactly (none of them imputed),
 * the point before them is not, the history's older half (`olderRange`: ≥ NEW_LEVEL_MIN_POINTS
 * points, a range that is not empty) never held one value for STUCK_POINTS observed points in a
 * row, and either
 *  - the value lies outside that half's range: a feed that died to zero or froze at a value the
 *    window never held (the band may not reach it: a zero at night is within a daily swing's
 *    band, and the line forecast follows it within a few points); the excess is measured from
 *    the range's edge, (value − hi) / span or (value − lo) / span, as `newLevelExcess` measures
 *    it without its margin; or
 *  - the older half never repeated a value even once (a continuous signal: two equal values in a
 *    row are already improbable there), wherever the value lies: a sensor that hung; the excess
 *    is then (value − the older half's median) / span, inside (−1, 1) (0, no alarm, only for a
 *    value exactly at that median).
 * Fires once per run, at its STUCK_POINTS-th point. O(1) unless the newest points repeat the
 * value; O(history) then.
 */
export function stuckRun(
  values: Float64Array,
  from: number,
  to: number,
  value: number,
  skip: Uint8Array | null = null,
): number {
  const first = to - (STUCK_POINTS - 1);
  if (first - 1 < from) return 0;
  for (let i = to - 1; i >= first; i--) {
    if (values[i] !== value || (skip !== null && skip[i] !== 0)) return 0;
  }
  if (values[first - 1] === value) return 0;
  const range = olderRange(values, from, to, skip);
  if (range === null) return 0;
  const { older, lo, hi } = range;
  let run = 0;
  let longest = 0;
  for (let i = from; i < older; i++) {
    if (skip !== null && skip[i] !== 0) run = 0;
    else if (run > 0 && values[i] === values[i - 1]) run++;
    else run = 1;
    if (run > longest && ++longest >= STUCK_POINTS) return 0;
  }
  if (value > hi) return (value - hi) / (hi - lo);
  if (value < lo) return (value - lo) / (hi - lo);
  if (longest > 1) return 0;
  const observed: number[] = [];
  for (let i = from; i < older; i++) if (skip === null || skip[i] === 0) observed.push(values[i]!);
  return (value - median(observed)) / (hi - lo);
}

/**
 * The stuck-value alarm (0 = none, else `excess` from `stuckRun`): nothing else reported the
 * point (`reported`: the band, the sustained or the new-level alarm) and no point of the last
 * SUSTAINED_POINTS was reported by the band (`reportedInStretch`, asked last, as for the
 * new-level alarm). A drop the band reported where it began can still be reported again here
 * when the run completes (the drop's own errors widen the scale that judges the stretch): two
 * facts, a drop and then a feed that stopped moving.
 */
export function stuckAlarm(reported: boolean, excess: number, reportedInStretch: () => boolean): number {
  // The new-level alarm's gate without its sustained-score condition (no scores to read).
  return newLevelAlarm(reported, excess, null, reportedInStretch);
}

/**
 * What a last point's verdict reads besides its deviation and band: each part is asked only when
 * the verdict needs it (the costly ones rarely), in the order `decideLastPoint` applies the rules.
 */
export interface VerdictContext {
  readonly rules: RulesInForce;
  /** Value − expected value. */
  readonly deviation: number;
  /** The band's half-width on the side the point deviates to. */
  readonly margin: number;
  /** The calibrated (symmetric) noise scale. */
  readonly scale: number;
  /** Largest |one-step error| of the refractory stretch and of its newest NEW_EVENT_RISE_POINTS (0 without the rule). */
  readonly largest: number;
  readonly newest: number;
  /** `reportedJustBefore` for this point (the echo rule). */
  echo(): boolean;
  /** `familiarMiss` for this point. */
  familiar(): boolean;
  /** `routineMiss` for this point. */
  routine(): boolean;
  /** The sustained-error scores (null: not scored). */
  scores(): SustainedScores | null;
  /** `bandReportedWithin` of the sustained stretch. */
  reportedInStretch(): boolean;
  /** `newLevelExcess` of this point. */
  excess(): number;
  /** `stuckRun` of this point. */
  stuckRun(): number;
}

/** A last point's verdict, rule by rule (0 / false where a rule was not asked or not in force). */
export interface Verdict {
  /** The band reported the point: outside it, and no rule held the report back. */
  readonly outside: boolean;
  readonly echo: boolean;
  readonly familiar: boolean;
  readonly routine: boolean;
  /** The sustained-error scores read (null where no alarm needed them). */
  readonly scores: SustainedScores | null;
  /** `sustainedAlarm`, `newLevelExcess`, `newLevelAlarm`, `stuckRun`, `stuckAlarm`. */
  readonly drift: number;
  readonly excess: number;
  readonly level: number;
  readonly run: number;
  readonly stuck: number;
}

/**
 * The last-point rules applied in order, the one verdict of `detectLastPoint`, `detectStream` and
 * the incremental judge: the band with the refractory rule (`outsideBand`); what holds a band
 * report back (`echo`, `familiarRange`, `routineMiss`, each asked only of a report the ones before
 * let through); then the alarms that need no band report, each only where none before it fired:
 * `sustainedError` (with `sustainedQuiet`), `newLevel`, `stuck`. A rule not in force is never asked.
 */
export function decideLastPoint(c: VerdictContext): Verdict {
  const { rules, deviation, margin } = c;
  const banded = outsideBand(deviation, margin, c.scale, c.largest, c.newest);
  const echo = banded && rules.echo && c.echo();
  const familiar = banded && !echo && rules.familiarRange && c.familiar();
  const routine = banded && !echo && !familiar && rules.routineMiss && c.routine();
  const outside = banded && !echo && !familiar && !routine;
  const scores = rules.sustainedError && !outside && deviation !== 0 ? c.scores() : null;
  const quietBelow = rules.sustainedQuiet ? SUSTAINED_QUIET_SHARE * margin : 0;
  const drift = sustainedAlarm(outside, deviation, scores, c.reportedInStretch, quietBelow);
  const excess = rules.newLevel && !outside && drift === 0 ? c.excess() : 0;
  const level = newLevelAlarm(outside || drift > 0, excess, scores, c.reportedInStretch);
  const run = rules.stuck && !outside && drift === 0 && level === 0 ? c.stuckRun() : 0;
  const stuck = stuckAlarm(outside || drift > 0 || level !== 0, run, c.reportedInStretch);
  return { outside, echo, familiar, routine, scores, drift, excess, level, run, stuck };
}

/** The history's values minus the seasonal profile (the values themselves without one). */
function deseasonalised(history: PreparedSeries, period: number, forecast: Forecast): Float64Array {
  if (forecast.profile === null || period === 0) return history.values;
  const { values, slots } = history;
  const out = new Float64Array(values.length);
  for (let k = 0; k < values.length; k++) out[k] = values[k]! - historySeasonal(forecast, slots, period, k);
  return out;
}

/**
 * `deviationOf` for `reportedJustBefore` on a last-point history: the deviation of the point j
 * before the judged one from its forecast line (the history's own slots, so a gap is a gap),
 * deseasonalised with the judged point's profile; NaN for an imputed point or too short a history.
 */
function previousDeviation(history: PreparedSeries, period: number, forecast: Forecast): (j: number) => number {
  const { values, slots, imputed } = history;
  const seasonalAt = (k: number): number => historySeasonal(forecast, slots, period, k);
  return (j) => {
    const index = values.length - j;
    if (index < FORECAST_POINTS || imputed[index] !== 0) return Number.NaN;
    const recent = new Float64Array(FORECAST_POINTS);
    for (let q = 0; q < FORECAST_POINTS; q++) recent[q] = values[index - FORECAST_POINTS + q]! - seasonalAt(index - FORECAST_POINTS + q);
    const line = theilSen(recent, slots.subarray(index - FORECAST_POINTS, index), 0, FORECAST_POINTS);
    return values[index]! - (line.intercept + line.slope * slots[index]! + seasonalAt(index));
  };
}

/**
 * Judges point `last` of the context from the prepared history of points [from, last), `model`
 * fitted on them; `past` gives the
 * range of the series before `from` for the new-level alarm (null: none), asked only when a value
 * gets beyond the window's own older range.
 */
function judgeLast(
  ctx: SeriesContext,
  from: number,
  last: number,
  model: ModelInput,
  opts: DetectOptions,
  rules: RulesInForce,
  past: (() => PastRange | null) | null,
): LastResult {
  const targetSlot = ctx.slots === null ? last - from : ctx.slots[last]! - ctx.slots[from]!;
  const value = ctx.values[last]!;
  const calibrate = rules.calibration;
  const refractory = rules.refractory;
  const sustained = rules.sustainedError;
  const stretch = refractory ? REFRACTORY_POINTS : 0;
  // The sustained alarm's echo check judges its stretch's errors with the refractory rule.
  const errorPoints = Math.max(calibrate ? CALIBRATION_POINTS : 0, stretch + (sustained ? SUSTAINED_POINTS : 0));
  let forecast = forecastNext(model.prepared, model.period, targetSlot, errorPoints, sustained);
  let period = model.period;
  // A period found in the data must earn its place: when the history forecast without it errs
  // clearly less, the seasonal profile is fitting noise or an event (a jump that happens to
  // repeat at some lag) and the point is judged without seasonality. The seasonal side is also
  // weighed cycle by cycle (`cycleMedianScale`), so that one anomalous cycle does not drop it.
  if (opts.period === undefined && period > 0 && rules.seasonalCheck) {
    const plain = forecastNext(model.prepared, 0, targetSlot, errorPoints, sustained);
    const { values, slots, imputed } = model.prepared;
    const cycles = (): number => cycleMedianScale(values, slots, imputed, period, scaleFloor(values)) * forecast.inflation;
    if (seasonalCheckDrops(plain.scale, forecast.scale, cycles)) {
      forecast = plain;
      period = 0;
    }
  }
  const errors = forecast.recentErrors;
  let scale = forecast.scale;
  if (calibrate) {
    scale = Math.max(scale, calibratedScale(errors, scaleFloor(model.prepared.values)));
  }
  // The band: the calibrated scale on each side, widened to the recent errors' spread on that
  // side of their median where it is wider (a skewed series gets its wider side there), and the
  // point judged against the side it deviates to. The refractory, echo and sustained rules keep
  // the symmetric scale: an event's size is measured the same way in both directions.
  let upperScale = scale;
  let lowerScale = scale;
  if (rules.asymmetricBand) {
    const sides = sideSpreads(errors, errors.length, new Float64Array(CALIBRATION_POINTS), { upper: 0, lower: 0 });
    upperScale = Math.max(scale, sides.upper);
    lowerScale = Math.max(scale, sides.lower);
  }
  const multiplier = lastPointMultiplier(opts.sensitivity);
  const deviation = value - forecast.expected;
  const upperMargin = multiplier * upperScale;
  const lowerMargin = multiplier * lowerScale;
  const margin = deviation < 0 ? lowerMargin : upperMargin;
  const largest = refractory ? largestRecent(errors, stretch) : 0;
  const newest = refractory ? largestRecent(errors, NEW_EVENT_RISE_POINTS) : 0;
  const history = model.prepared;
  let reported: boolean | undefined;
  const reportedInStretch = (): boolean =>
    (reported ??= bandReportedWithin(errors, errors.length, SUSTAINED_POINTS, stretch, scale));
  const { outside, echo, familiar, routine, scores: z, drift, excess, level, run, stuck } = decideLastPoint({
    rules,
    deviation,
    margin,
    scale,
    largest,
    newest,
    echo: () =>
      reportedJustBefore(previousDeviation(history, period, forecast), errors, errors.length, scale, stretch),
    // Deseasonalised with the point's profile: a seasonal swing does not make a value familiar.
    familiar: () =>
      familiarMiss(
        deseasonalised(history, period, forecast),
        0,
        history.values.length,
        value - (forecast.profile === null ? 0 : forecast.profile[phaseOf(targetSlot, period)]!),
        deviation,
        margin,
        history.imputed,
      ),
    routine: () => routineMiss(history.values, history.imputed, deviation, margin, scale),
    scores: () => sustainedScores(forecast.levelErrors),
    reportedInStretch,
    excess: () => newLevelExcess(history.values, 0, history.values.length, value, history.imputed, past),
    stuckRun: () => stuckRun(history.values, 0, history.values.length, value, history.imputed),
  });
  const newLevel = rules.newLevel;
  const stuckOn = rules.stuck;
  const isAnomaly = outside || drift > 0 || level !== 0 || stuck !== 0;
  if (opts.onDecision !== undefined) {
    const all = z ?? (sustained ? sustainedScores(forecast.levelErrors) : null);
    const recordedRun =
      stuckOn && run === 0 && (outside || drift > 0 || level !== 0)
        ? stuckRun(history.values, 0, history.values.length, value, history.imputed)
        : run;
    opts.onDecision({
      deviation,
      margin,
      scale,
      largest,
      newest,
      sustainedNow: all === null ? Number.NaN : all.now,
      sustainedBefore: all === null ? Number.NaN : all.before,
      reportedInStretch: sustained && reportedInStretch(),
      echo,
      familiar,
      routine,
      // Computed above unless the band or the sustained alarm reported the point.
      newLevel:
        newLevel && (outside || drift > 0)
          ? newLevelExcess(history.values, 0, history.values.length, value, history.imputed, past)
          : excess,
      // Computed above unless another rule reported the point.
      stuck: recordedRun,
      period,
      isAnomaly,
    });
  }
  return lastResult(period, ctx.granularity, forecast.expected, upperMargin, lowerMargin, deviation, outside, drift, level, stuck);
}

/**
 * A judged last point's record from its verdict: `outside` from `outsideBand`, `drift` from
 * `sustainedAlarm`, `level` from `newLevelAlarm`, `stuck` from `stuckAlarm`; `length` is the window's
 * points, the judged one included; the band's half-widths above and below the expected value are
 * `upperMargin` and `lowerMargin`, and a band report's severity reads the side it deviates to. A
 * new-level or stuck-value alarm's direction is the side of the range the value left; a stuck
 * value's severity is |excess| / (|excess| + NEW_LEVEL_MARGIN), in (0, 1): a half where the
 * new-level alarm's margin begins.
 */
export function lastResult(
  period: number,
  granularity: Granularity,
  expected: number,
  upperMargin: number,
  lowerMargin: number,
  deviation: number,
  outside: boolean,
  drift: number,
  level: number,
  stuck = 0,
): LastResult {
  const isAnomaly = outside || drift > 0 || level !== 0 || stuck !== 0;
  const direction = outside || drift > 0 ? deviation : level !== 0 ? level : stuck;
  return {
    period,
    suggestedWindow: suggestedWindow(period, granularity),
    expectedValue: expected,
    upperMargin,
    lowerMargin,
    isAnomaly,
    isPositiveAnomaly: isAnomaly && direction > 0,
    isNegativeAnomaly: isAnomaly && direction < 0,
    severity: outside
      ? severityOf(deviation, deviation < 0 ? lowerMargin : upperMargin)
      : drift > 0
        ? 1 - SUSTAINED_Z / drift
        : level !== 0
          ? 1 - NEW_LEVEL_MARGIN / Math.abs(level)
          : stuck !== 0
            ? Math.abs(stuck) / (Math.abs(stuck) + NEW_LEVEL_MARGIN)
            : 0,
  };
}

/**
 * Judges the last point from the points before it only: the timestamps of the whole series are
 * validated and the period is detected on points 0..n−2; the model is fitted on the newest
 * `suggestedWindow(period)` of them and the point (rule `suggestedSpan`: a longer request is
 * judged as the suggested window with the rest of it joining `pastRange`), and the last point is
 * forecast (trend extrapolated from the recent past plus the seasonal value of its phase).
 * Changing the last value therefore never changes expectedValue or the margins. O(n) once the
 * period is known, plus O(n log n) to detect it.
 */
export function detectLastPoint(input: SeriesInput, opts: DetectOptions): LastResult {
  const n = input.values.length;
  requireMinimumLength(n);
  const ctx = seriesContext(input);
  const problem = rangePeriodProblem(ctx, 0, n, opts.period);
  if (problem !== null) throw problem;
  const rules = rulesInForce(opts);
  const model = prepareRange(ctx, 0, n - 1, opts.period, rules.periodStability, minCyclesOf(rules));
  const from = spanStart(ctx, 0, n - 1, model.period, rules);
  const span = from === 0 ? model : prepareRange(ctx, from, n - 1, model.period);
  return judgeLast(ctx, from, n - 1, span, opts, rules, pastBeforeSpan(ctx.values, opts.pastRange ?? null, 0, from));
}

/**
 * Where the judged span of the window from..last (the judged point included) starts: with the
 * `suggestedSpan` rule, the newest `suggestedWindow(period)` points of a longer window, so a
 * client that sends more points than the model needs is judged as one that sends the suggestion
 * (the older points join the past range); otherwise, or when the window is no longer, `from`.
 */
function spanStart(ctx: SeriesContext, from: number, last: number, period: number, rules: RulesInForce): number {
  if (!rules.suggestedSpan) return from;
  const span = suggestedWindow(period, ctx.granularity);
  return last - from + 1 > span ? last - span + 1 : from;
}

/**
 * The past range of a point judged from `judgedFrom` whose request starts at `from`: the given
 * range joined with the range of the request's points before its judged span (read only when a
 * rule asks for it); null when there is neither.
 */
function pastBeforeSpan(values: ArrayLike<number>, given: PastRange | null, from: number, judgedFrom: number): (() => PastRange | null) | null {
  if (from < judgedFrom) return () => joinRanges(given, rangeOf(values, from, judgedFrom));
  return given === null ? null : () => given;
}

/** The union of two ranges (either may be absent). */
function joinRanges(a: PastRange | null, b: PastRange | null): PastRange | null {
  if (a === null) return b;
  if (b === null) return a;
  return { min: Math.min(a.min, b.min), max: Math.max(a.max, b.max) };
}

export interface StreamOptions extends DetectOptions {
  /** Trailing window judged for each point, the point itself included. */
  readonly windowPoints: number;
  /** Fewest points a window must hold (judged point included) to be judged; default 12. */
  readonly minHistory?: number;
  /**
   * Points a client keeps: the newest `memoryPoints` up to and including the judged one. Those
   * before its judged span give the judged point's `pastRange` (the lowest and highest of them),
   * as a client sending its window and the range of the rest would. Absent, 0 or at most
   * `windowPoints`: `pastRange`, if given, applies to every point instead (joined with the
   * window's points before its suggested span).
   */
  readonly memoryPoints?: number;
  /**
   * Auto period only: points between period re-detections. Default: a tenth of the current
   * window, between 1 and 100 (so it is re-checked often while the window is still filling).
   * 1 = detect for every point, exactly as detectLastPoint does.
   */
  readonly periodRecheckPoints?: number;
  /**
   * Points before this index are context only: their records are not-judged placeholders and
   * cost nothing. A streaming worker passes its kept trailing window followed by the new points
   * and judges only the new ones. Default 0.
   */
  readonly firstJudged?: number;
  /**
   * The window follows the verdicts' suggestion, as a client of last/detect that sends the
   * suggested window and the streaming worker do: after a verdict with a period, the next point
   * is judged from four periods and one point, never fewer than `windowPoints` nor more than the
   * memory (8,640 points without one), each window kept for at least half of itself (as the
   * following judge keeps it). Default false: every point from `windowPoints`.
   */
  readonly followSuggestedWindow?: boolean;
}

/**
 * Last-point detection for every point of a series, as a streaming client calling last/detect
 * with a trailing window would get it: record i = detectLastPoint over points
 * max(0, i − windowPoints + 1)..i (so a window longer than the suggestion for its period is judged
 * from its newest suggested points, the rest joining the past range), with two documented
 * shortcuts that keep 20,000 points in seconds:
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
  const floor = Math.max(2, Math.floor(opts.windowPoints));
  const follow = opts.followSuggestedWindow === true;
  const largest = largestFollowedWindow(floor, Math.floor(opts.memoryPoints ?? 0));
  let window = floor;
  const minPoints = Math.max(2, Math.floor(opts.minHistory ?? MIN_STREAM_POINTS));
  const results: LastResult[] = new Array<LastResult>(n);
  const rules = rulesInForce(opts);
  const minCycles = minCyclesOf(rules);
  let cachedPeriod = 0;
  let detectedAt = Number.NEGATIVE_INFINITY;

  const firstJudged = Math.max(0, Math.floor(opts.firstJudged ?? 0));
  const memory = Math.floor(opts.memoryPoints ?? 0);
  const given = opts.pastRange ?? null;
  // The past range of the point judged from judgedFrom in the window from..i: the kept points
  // before the judged span (a memory longer than the window), else as detectLastPoint gives it.
  const pastOf = (from: number, judgedFrom: number, i: number): (() => PastRange | null) | null => {
    const memoryFrom = Math.max(0, i - memory + 1);
    if (memory > window && memoryFrom < judgedFrom) return () => rangeOf(ctx.values, memoryFrom, judgedFrom);
    return pastBeforeSpan(ctx.values, given, from, judgedFrom);
  };
  // A followed window is kept for its dwell, as the following judge keeps it.
  let switchedAt = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < n; i++) {
    if (follow && i > 0 && i - switchedAt >= followDwellPoints(window)) {
      const next = followedWindow(results[i - 1]!.period, floor, largest);
      if (next !== window) {
        window = next;
        switchedAt = i;
      }
    }
    const from = Math.max(0, i - window + 1);
    const length = i - from + 1;
    if (length < minPoints || i < firstJudged) {
      results[i] = notJudged(input.values[i]!, opts.period ?? cachedPeriod, ctx.granularity);
      continue;
    }
    let model: ModelInput | null = null;
    let period: number;
    if (opts.period !== undefined) {
      if (rangePeriodProblem(ctx, from, i + 1, opts.period) !== null) {
        results[i] = notJudged(input.values[i]!, opts.period, ctx.granularity);
        continue;
      }
      period = opts.period;
    } else {
      const recheckPoints = opts.periodRecheckPoints ?? Math.min(MAX_PERIOD_RECHECK_POINTS, length / 10);
      const recheck = Math.max(1, Math.floor(recheckPoints));
      const sparse = tooSparseForSeasonality(expectedLengthOf(ctx, from, i), i - from);
      if (sparse || i - detectedAt >= recheck) {
        model = prepareRange(ctx, from, i, undefined, rules.periodStability, minCycles);
        if (!sparse) {
          cachedPeriod = model.period;
          detectedAt = i;
        }
        period = model.period;
      } else {
        period = cachedPeriod;
      }
    }
    // A followed window is already the suggestion; a fixed one is judged from its suggested span.
    const judgedFrom = follow ? from : spanStart(ctx, from, i, period, rules);
    if (model === null || judgedFrom !== from) model = prepareRange(ctx, judgedFrom, i, period);
    results[i] = judgeLast(ctx, judgedFrom, i, model, opts, rules, pastOf(from, judgedFrom, i));
  }
  return results;
}

/** The lowest and highest value of values[from, to), NaN (a missing value) skipped; null when none is left. */
export function rangeOf(values: ArrayLike<number>, from: number, to: number): PastRange | null {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (let i = from; i < to; i++) {
    const x = values[i]!;
    if (x < min) min = x;
    if (x > max) max = x;
  }
  return min <= max ? { min, max } : null;
}

export function notJudged(value: number, period: number, granularity: Granularity): LastResult {
  return {
    period,
    suggestedWindow: suggestedWindow(period, granularity),
    expectedValue: value,
    upperMargin: 0,
    lowerMargin: 0,
    isAnomaly: false,
    isPositiveAnomaly: false,
    isNegativeAnomaly: false,
    severity: 0,
  };
}
