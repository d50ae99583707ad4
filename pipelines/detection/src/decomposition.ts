// The robust seasonal-trend model behind every expected value: trend by running medians,
// seasonal profile by per-phase medians of the detrended series, each refined once with the
// other. Medians throughout, so anomalies do not pull the fit towards themselves.
import { detrendedRunningMedian, median, medianInPlace, oddWindow, robustScale, selectInPlace } from './robust.js';
import { TUNING } from './tuning.js';

/** Trend window for non-seasonal series: bursts of up to 7 anomalous points are ignored. */
export const NON_SEASONAL_TREND_WINDOW = TUNING.NON_SEASONAL_TREND_WINDOW.value;

/**
 * Trend window on the deseasonalised series: about one period, kept between 9 and 25 points so
 * that short periods still get a steady trend and long ones (168) still follow level changes.
 */
export function trendWindow(period: number): number {
  return period > 1
    ? Math.min(Math.max(period, TUNING.SEASONAL_TREND_MIN_WINDOW.value), TUNING.SEASONAL_TREND_MAX_WINDOW.value)
    : NON_SEASONAL_TREND_WINDOW;
}

/** Seasonal phase (0..period-1) of a grid slot. */
export function phaseOf(slot: number, period: number): number {
  return slot >= 0 && slot < 2 ** 31 ? (slot | 0) % period : ((slot % period) + period) % period;
}

/** Seasonal phase of every modelled point, from its grid slot. */
export function phasesOf(slots: Float64Array, period: number): Int32Array {
  const phases = new Int32Array(slots.length);
  for (let i = 0; i < slots.length; i++) phases[i] = phaseOf(slots[i]!, period);
  return phases;
}

/** A seasonal profile with the out-of-sample residuals of the points it was fitted on. */
export interface SeasonalFit {
  /** Seasonal value per phase, centred to average zero over the observed phases. */
  readonly profile: Float64Array;
  /**
   * Residual of each observed point (phases with a single point skipped) against its phase's
   * median over the OTHER cycles (leave one out). With few cycles per phase (a 48-point monthly
   * series has 4) in-sample residuals are far too small, since a median of four sits between the
   * middle two values; these are the errors the model makes on a point it has not seen, which
   * is what a margin must cover.
   */
  readonly residuals: Float64Array;
}

/**
 * Per-phase medians of `detrended` (value − trend) over the points not `imputed`, and the
 * leave-one-out residuals of those points (in phase order). A phase with no observed point
 * gets 0. Phase of a point = its slot mod period.
 *
 * Only the three middle order statistics of each phase (ranks h−1, h, h+1, h = ⌊c/2⌋) are
 * needed: removing one value shifts the median by at most one rank. So each phase costs one
 * selection, not a sort, and the whole fit is O(n), as the streaming detector needs.
 *
 * With `othersAt` (length n, overwritten) it also writes each point's seasonal value over the
 * other cycles of its phase, the median of the others centred as the profile is (the profile's
 * value where there are no others, and for an imputed point).
 */
export function fitSeasonal(
  detrended: Float64Array,
  slots: Float64Array,
  imputed: Uint8Array,
  period: number,
  withResiduals = true,
  othersAt?: Float64Array,
): SeasonalFit {
  const n = detrended.length;
  othersAt?.fill(Number.NaN);
  // Consecutive slots (a filled grid, the usual case): phase k is every period-th point, read
  // in place. Otherwise the points are grouped by phase first.
  const regular = n === 0 || slots[n - 1]! - slots[0]! === n - 1;
  const firstPhase = n === 0 ? 0 : phaseOf(slots[0]!, period);
  let order: Int32Array | null = null;
  let offsets: Int32Array | null = null;
  if (!regular) {
    const counts = new Int32Array(period);
    const phases = phasesOf(slots, period);
    for (let i = 0; i < n; i++) counts[phases[i]!]!++;
    offsets = new Int32Array(period + 1);
    for (let k = 0; k < period; k++) offsets[k + 1] = offsets[k]! + counts[k]!;
    order = new Int32Array(n);
    const cursor = offsets.slice(0, period);
    for (let i = 0; i < n; i++) order[cursor[phases[i]!]!++] = i;
  }

  const profile = new Float64Array(period);
  const observed = new Uint8Array(period);
  const scratch = new Float64Array(regular ? Math.ceil(n / period) + 1 : n);
  const residuals = new Float64Array(withResiduals ? n : 0);
  let written = 0;
  let centre = 0;
  let observedPhases = 0;
  // Residuals are written relative to the uncentred profile, then shifted once at the end.
  for (let k = 0; k < period; k++) {
    let count = 0;
    let first = 0;
    let last = 0;
    if (regular) {
      first = (k - firstPhase + period) % period;
      for (let i = first; i < n; i += period) if (imputed[i] === 0) scratch[count++] = detrended[i]!;
    } else {
      first = offsets![k]!;
      last = offsets![k + 1]!;
      for (let j = first; j < last; j++) {
        const i = order![j]!;
        if (imputed[i] === 0) scratch[count++] = detrended[i]!;
      }
    }
    if (count === 0) continue;
    const h = count >> 1;
    const mid = selectInPlace(scratch, h, 0, count - 1);
    let below = Number.NEGATIVE_INFINITY;
    for (let j = 0; j < h; j++) if (scratch[j]! > below) below = scratch[j]!;
    let above = Number.POSITIVE_INFINITY;
    for (let j = h + 1; j < count; j++) if (scratch[j]! < above) above = scratch[j]!;
    const median = count % 2 === 1 ? mid : (below + mid) / 2;
    profile[k] = median;
    observed[k] = 1;
    centre += median;
    observedPhases++;
    if (!withResiduals || count < 2) continue;
    const even = count % 2 === 0;
    const step = regular ? period : 1;
    const end = regular ? n : last;
    for (let j = first; j < end; j += step) {
      const i = regular ? j : order![j]!;
      if (imputed[i] !== 0) continue;
      const x = detrended[i]!;
      // The median of the others: with c even it is one rank, h or h−1 depending on whether x
      // sat at or below rank h−1; with c odd the mean of two. Ties leave the same multiset
      // whichever copy of x is removed, so "at or below" decides each shift.
      const low = x <= below ? mid : below;
      const others = even ? low : (low + (x <= mid ? above : mid)) / 2;
      residuals[written++] = x - others;
      if (othersAt !== undefined) othersAt[i] = others;
    }
  }
  centre = observedPhases > 0 ? centre / observedPhases : 0;
  for (let k = 0; k < period; k++) profile[k] = observed[k] === 0 ? 0 : profile[k]! - centre;
  for (let j = 0; j < written; j++) residuals[j] = residuals[j]! + centre;
  if (othersAt !== undefined) {
    // Points without a value over other cycles (imputed, or alone in their phase) take the profile.
    for (let i = 0; i < n; i++) othersAt[i] = Number.isNaN(othersAt[i]!) ? profile[phaseOf(slots[i]!, period)]! : othersAt[i]! - centre;
  }
  return { profile, residuals: residuals.subarray(0, written) };
}

/** A fitted model: expected value = trend + seasonal, per modelled point. */
export interface Decomposition {
  readonly trend: Float64Array;
  /** Seasonal value per phase, or null when non-seasonal. */
  readonly profile: Float64Array | null;
  /** Seasonal phase per modelled point, or null when non-seasonal. */
  readonly phases: Int32Array | null;
  /**
   * Residuals of the observed points from which the noise scale is estimated: out-of-sample
   * for the seasonal part (`fitSeasonal`), plain value − trend when non-seasonal.
   */
  readonly scaleResiduals: Float64Array;
}

/** The seasonal component at model position i (0 when non-seasonal). */
export function seasonalAt(model: Decomposition, i: number): number {
  return model.profile === null ? 0 : model.profile[model.phases![i]!]!;
}

function observedResiduals(values: Float64Array, trend: Float64Array, imputed: Uint8Array): Float64Array {
  let count = 0;
  for (let i = 0; i < values.length; i++) if (imputed[i] === 0) count++;
  const out = new Float64Array(count);
  for (let i = 0, k = 0; i < values.length; i++) if (imputed[i] === 0) out[k++] = values[i]! - trend[i]!;
  return out;
}

function minus(values: Float64Array, trend: Float64Array): Float64Array {
  const out = new Float64Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = values[i]! - trend[i]!;
  return out;
}

function deseasonalise(values: Float64Array, profile: Float64Array, phases: Int32Array): Float64Array {
  const out = new Float64Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = values[i]! - profile[phases[i]!]!;
  return out;
}

/** Whether a period can be modelled on this many points: two full cycles at least. */
export function isSeasonal(period: number, length: number): boolean {
  return period > 1 && length >= 2 * period;
}

/**
 * Entire-series decomposition (all points known).
 *
 * Running medians are taken around the series' robust straight line (`detrendedRunningMedian`).
 * Non-seasonal: trend = running median (window 15, Theil–Sen line at the ends).
 * Seasonal, period p:
 *   1. rough trend = running median over a window covering a full cycle (p, or p+1 when even),
 *      clamped at the ends so every window still spans one cycle;
 *   2. profile = per-phase medians of value − rough trend;
 *   3. trend = running median (window `trendWindow(p)`) of value − profile;
 *   4. profile again from value − trend, then trend again: the second pass no longer sees the
 *      cycle's shape in the trend or the trend's bends in the profile.
 */
export function decompose(
  values: Float64Array,
  slots: Float64Array,
  imputed: Uint8Array,
  period: number,
): Decomposition {
  const n = values.length;
  const trendOfOthers = new Float64Array(n);
  if (!isSeasonal(period, n)) {
    const trend = detrendedRunningMedian(values, NON_SEASONAL_TREND_WINDOW, 'line', trendOfOthers);
    return { trend, profile: null, phases: null, scaleResiduals: observedResiduals(values, trendOfOthers, imputed) };
  }
  const phases = phasesOf(slots, period);
  const window = trendWindow(period);
  const rough = detrendedRunningMedian(values, oddWindow(period, n), 'clamp');
  const first = fitSeasonal(minus(values, rough), slots, imputed, period, false);
  const firstTrend = detrendedRunningMedian(deseasonalise(values, first.profile, phases), window, 'line');
  const second = fitSeasonal(minus(values, firstTrend), slots, imputed, period, false);
  const trend = detrendedRunningMedian(deseasonalise(values, second.profile, phases), window, 'line', trendOfOthers);
  // Noise from residuals the point itself did not shape: the trend without the point, the
  // seasonal value fitted without it.
  const scaleResiduals = fitSeasonal(minus(values, trendOfOthers), slots, imputed, period).residuals;
  return { trend, profile: second.profile, phases, scaleResiduals };
}

/**
 * Value minus its centred moving average over `window` points; near the ends the window keeps
 * its full length and slides inwards, so with window = period it always spans exactly one
 * cycle and averages the cycle out.
 */
export function movingAverageResiduals(values: Float64Array, window: number): Float64Array {
  return movingAverageResidualsInto(values, prefixSums(values), window, new Float64Array(values.length));
}

/** Running sums of `values`: prefix[i] = values[0] + ... + values[i − 1], n + 1 of them. */
export function prefixSums(values: ArrayLike<number>): Float64Array {
  return prefixSumsInto(values, new Float64Array(values.length + 1));
}

/** `prefixSums` written into `out` (n + 1 long) and returned. */
export function prefixSumsInto(values: ArrayLike<number>, out: Float64Array): Float64Array {
  out[0] = 0;
  for (let i = 0; i < values.length; i++) out[i + 1] = out[i]! + values[i]!;
  return out;
}

/**
 * `movingAverageResiduals` from the values' `prefixSums`, written into `out` (at least n long)
 * and returned: the period scorers take the sums once and try many windows.
 */
export function movingAverageResidualsInto(values: ArrayLike<number>, prefix: Float64Array, window: number, out: Float64Array): Float64Array {
  const n = values.length;
  const w = Math.max(1, Math.min(Math.floor(window), n));
  const half = w >> 1;
  for (let i = 0; i < n; i++) {
    const start = Math.min(Math.max(i - half, 0), n - w);
    out[i] = values[i]! - (prefix[start + w]! - prefix[start]!) / w;
  }
  return out;
}

/** What last-point detection needs from the history: the seasonal profile and the noise. */
export interface HistoryFit {
  /** Seasonal value per phase (slot mod period), or null when non-seasonal. */
  readonly profile: Float64Array | null;
  /** Residuals the forecast's noise scale is estimated from (observed points only). */
  readonly scaleResiduals: Float64Array;
  /**
   * Seasonal: with fewer than FEW_CYCLES cycles of the period in the history, each point's phase
   * value over the other cycles (`fitSeasonal`'s `othersAt`), to deseasonalise the history with;
   * null otherwise (the profile serves), when non-seasonal and without `pointwise`.
   */
  readonly pointSeasonal: Float64Array | null;
}

/**
 * Fewest cycles of the period in a last-point history from which its points are deseasonalised
 * with their phase's median: below it (two cycles and a part), a phase's median is mostly the mean
 * of its own two values, so each deseasonalised value would hide half of its difference from the
 * other cycle, and the history's one-step errors would look calmer than a new point's.
 */
export const FEW_CYCLES = TUNING.FEW_CYCLES.value;

/**
 * The model of last-point detection, on the O(n) budget of a detector that runs once per
 * streamed point: about a dozen passes over the window, no running medians. Seasonal: profile =
 * per-phase medians of value − one-period moving average (the average spans exactly one cycle,
 * the medians shrug off anomalies), residuals out of sample (`fitSeasonal`). Non-seasonal:
 * residuals around a 15-point moving average. The level itself is not fitted here: the
 * forecast extrapolates a Theil–Sen line through the newest deseasonalised points.
 */
export function fitHistory(values: Float64Array, slots: Float64Array, imputed: Uint8Array, period: number, pointwise = true): HistoryFit {
  const n = values.length;
  if (!isSeasonal(period, n)) {
    const detrended = movingAverageResiduals(values, NON_SEASONAL_TREND_WINDOW);
    let count = 0;
    for (let i = 0; i < n; i++) if (imputed[i] === 0) count++;
    const scaleResiduals = count === n ? detrended : new Float64Array(count);
    if (count !== n) for (let i = 0, k = 0; i < n; i++) if (imputed[i] === 0) scaleResiduals[k++] = detrended[i]!;
    return { profile: null, scaleResiduals, pointSeasonal: null };
  }
  const pointSeasonal = pointwise && n < FEW_CYCLES * period ? new Float64Array(n) : null;
  const fit = fitSeasonal(movingAverageResiduals(values, period), slots, imputed, period, true, pointSeasonal ?? undefined);
  return { profile: fit.profile, scaleResiduals: fit.residuals, pointSeasonal };
}

/**
 * The seasonal check's noise scale when one cycle may be anomalous: each cycle of the period
 * (slots ⌊slot / period⌋, from the history's first) less its own median, each point's
 * leave-one-out residual against its phase over the other cycles, the robust scale of each full
 * cycle's residuals, and the median of those scales. One anomalous cycle moves one cycle's level
 * and one cycle's scale, where the one-period moving average of `fitHistory` spreads it over its
 * neighbours and its residual scale over the whole history. +Infinity without a full cycle.
 */
export function cycleMedianScale(values: Float64Array, slots: Float64Array, imputed: Uint8Array, period: number, floor: number): number {
  const n = values.length;
  if (n === 0) return Number.POSITIVE_INFINITY;
  const first = Math.floor(slots[0]! / period);
  const cycles = Math.floor(slots[n - 1]! / period) - first + 1;
  // Points of each cycle: [bounds[c], bounds[c + 1]) (slots ascend).
  const bounds = new Int32Array(cycles + 1);
  for (let i = 0; i < n; i++) bounds[Math.floor(slots[i]! / period) - first + 1]!++;
  for (let c = 0; c < cycles; c++) bounds[c + 1]! += bounds[c]!;
  const levelled = new Float64Array(n);
  const scratch = new Float64Array(n);
  for (let c = 0; c < cycles; c++) {
    let count = 0;
    for (let i = bounds[c]!; i < bounds[c + 1]!; i++) if (imputed[i] === 0) scratch[count++] = values[i]!;
    const level = count === 0 ? 0 : medianInPlace(scratch.subarray(0, count));
    for (let i = bounds[c]!; i < bounds[c + 1]!; i++) levelled[i] = values[i]! - level;
  }
  const others = new Float64Array(n);
  fitSeasonal(levelled, slots, imputed, period, true, others);
  const scales: number[] = [];
  for (let c = 0; c < cycles; c++) {
    const from = bounds[c]!;
    const to = bounds[c + 1]!;
    if (to - from === 0 || slots[to - 1]! - slots[from]! !== period - 1) continue;
    let count = 0;
    for (let i = from; i < to; i++) if (imputed[i] === 0) scratch[count++] = levelled[i]! - others[i]!;
    if (count > 0) scales.push(robustScale(scratch.subarray(0, count), floor));
  }
  if (scales.length === 0) return Number.POSITIVE_INFINITY;
  return median(scales);
}
