// Changepoint detection: where the series' level shifts and stays shifted, by the seed's rule
// over the model's prediction error.
import { decompose, seasonalAt } from './decomposition.js';
import { prepareSeries } from './prepare.js';
import { median, quantile, robustScale, runningMedian, scaleFloor } from './robust.js';
import type { ChangePointOptions, ChangePointResult, Granularity, SeriesInput } from './types.js';

/**
 * The vendor's default stableTrendWindow per granularity (BEHAVIOUR.md §3.2). Used when the
 * client sends none, capped to a twentieth of the series (at least 5): the noise estimate needs
 * stretches of several windows between changes, and short series still deserve changepoints.
 */
export const DEFAULT_STABLE_TREND_WINDOW: Readonly<Record<Granularity, number>> = {
  yearly: 3,
  monthly: 6,
  weekly: 3,
  daily: 5,
  hourly: 24,
  minutely: 72,
  secondly: 72,
  microsecond: 100,
  none: 100,
};

/** The vendor's default changepoint threshold: 0.9, and 0.91 for hourly data. */
export function defaultChangePointThreshold(granularity: Granularity): number {
  return granularity === 'hourly' ? 0.91 : 0.9;
}

/** Standardised gradient at which confidence reaches 0.9: 6 robust standard deviations. */
const Z_AT_CONFIDENCE_090 = 6;
const CONFIDENCE_WIDTH = Z_AT_CONFIDENCE_090 / Math.sqrt(Math.log(10));
/** Share of gradients a changepoint must exceed (the seed's 95th percentile). */
const GRADIENT_PERCENTILE = 0.95;

/** stableTrendWindow in force: the client's, else the granularity default capped to the series. */
export function effectiveStableTrendWindow(granularity: Granularity, count: number, requested?: number): number {
  if (requested !== undefined) return Math.max(1, Math.floor(requested));
  return Math.min(DEFAULT_STABLE_TREND_WINDOW[granularity], Math.max(5, Math.floor(count / 20)));
}

/**
 * Changepoints, by the seed's rules over the prediction error e:
 *
 *   e = value − seasonal component (the level the seasonal model does not explain; the trend is
 *       deliberately NOT removed, since a trend that follows the series would absorb the shift),
 *       minus a robust straight line (slope = the median gradient / k), so that a steady trend
 *       is not mistaken for a run of changes;
 *   gradient[i] = mean(e[i:i+k]) − mean(e[i−k:i]), where k = max(period, stableTrendWindow)
 *       (defined where both windows fit; 0 elsewhere). The gradient peaks at the first point of
 *       the new level.
 *   confidence[i] = 1 − exp(−(z/3.95)²), z = |gradient[i]| / the gradient's noise scale
 *       (`gradientNoise`): 0.9 at z = 6, 0.99 at z ≈ 8.5.
 *
 * A point is a changepoint when |gradient| (absolute, so downward shifts count) is above the
 * 95th percentile of all |gradients|, is the largest within ±k, its confidence is >= threshold,
 * and it is at least max(period, 1) points from every other changepoint (the larger gradients
 * win). Changes within k points of either end cannot be seen. Imputed points are never reported.
 */
export function detectChangePointSeries(input: SeriesInput, opts: ChangePointOptions): ChangePointResult {
  const { prepared, period } = prepareSeries(input, opts.period);
  const n = input.values.length;
  const m = prepared.values.length;
  const threshold = opts.threshold ?? defaultChangePointThreshold(input.granularity);
  const model = decompose(prepared.values, prepared.slots, prepared.imputed, period);

  const stableTrendWindow = effectiveStableTrendWindow(input.granularity, n, opts.stableTrendWindow);
  const k = Math.max(1, Math.min(Math.max(period, stableTrendWindow), Math.floor((m - 1) / 2)));

  const errors = new Float64Array(m);
  for (let j = 0; j < m; j++) errors[j] = prepared.values[j]! - seasonalAt(model, j);
  const prefix = new Float64Array(m + 1);
  for (let j = 0; j < m; j++) prefix[j + 1] = prefix[j]! + errors[j]!;
  const gradient = new Float64Array(m);
  const first = k;
  const last = m - k; // inclusive: e[last:last+k] is the final window
  const validCount = Math.max(0, last - first + 1);
  for (let i = first; i <= last; i++) {
    gradient[i] = (prefix[i + k]! - prefix[i]! - (prefix[i]! - prefix[i - k]!)) / k;
  }
  // Removing the median gradient = removing a robust straight line of slope median / k from e.
  const typical = validCount > 0 ? median(gradient.subarray(first, last + 1)) : 0;
  for (let i = first; i <= last; i++) gradient[i] = gradient[i]! - typical;

  const noise = gradientNoise(errors, first, last, k, scaleFloor(prepared.values));
  const confidence = new Float64Array(m);
  for (let i = first; i <= last; i++) {
    const z = Math.abs(gradient[i]!) / noise;
    confidence[i] = 1 - Math.exp(-((z / CONFIDENCE_WIDTH) ** 2));
  }

  const magnitudes: number[] = [];
  for (let i = first; i <= last; i++) if (prepared.imputed[i] === 0) magnitudes.push(Math.abs(gradient[i]!));
  const cutoff = magnitudes.length > 0 ? quantile(magnitudes, GRADIENT_PERCENTILE) : Number.POSITIVE_INFINITY;

  const candidates: number[] = [];
  for (let i = first; i <= last; i++) {
    const size = Math.abs(gradient[i]!);
    if (prepared.imputed[i] !== 0 || !(size > cutoff) || confidence[i]! < threshold) continue;
    if (isLocalMaximum(gradient, i, k, first, last)) candidates.push(i);
  }
  candidates.sort((a, b) => Math.abs(gradient[b]!) - Math.abs(gradient[a]!) || a - b);
  const spacing = Math.max(period, 1);
  const accepted: number[] = [];
  for (const i of candidates) {
    if (accepted.every((j) => Math.abs(i - j) >= spacing)) accepted.push(i);
  }
  const isChange = new Uint8Array(m);
  for (const i of accepted) isChange[i] = 1;

  const isChangePoint: boolean[] = new Array<boolean>(n);
  const confidenceScores: number[] = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const j = prepared.inputIndex[i]!;
    isChangePoint[i] = isChange[j] === 1;
    confidenceScores[i] = confidence[j]!;
  }
  return { period, isChangePoint, confidenceScores };
}

/** |gradient[i]| is the largest within ±radius (the first of equal values wins). */
function isLocalMaximum(gradient: Float64Array, i: number, radius: number, first: number, last: number): boolean {
  const size = Math.abs(gradient[i]!);
  for (let j = Math.max(first, i - radius); j <= Math.min(last, i + radius); j++) {
    const other = Math.abs(gradient[j]!);
    if (other > size || (other === size && j < i)) return false;
  }
  return true;
}

/**
 * Robust standard deviation of the gradient when nothing changes. Estimated from the gradients
 * of e's residual around a running median of 4k+1 points: that median keeps level shifts (a
 * median filter does not smear steps), so the residual holds what does NOT persist for k
 * points, i.e. the noise the gradient must rise above, autocorrelation included. Estimating
 * from the gradients of e itself fails when shifts are many and close (every gradient is then
 * "signal"); estimating from e's first differences ignores autocorrelation and calls every
 * wander a change. On simulated AR(1) noise (φ 0..0.8, k 5..72) this estimate is within 10 %
 * of the true spread of the gradients.
 */
function gradientNoise(errors: Float64Array, first: number, last: number, k: number, floor: number): number {
  if (last < first) return floor;
  const smooth = runningMedian(errors, 4 * k + 1, 'line');
  const m = errors.length;
  const prefix = new Float64Array(m + 1);
  for (let j = 0; j < m; j++) prefix[j + 1] = prefix[j]! + errors[j]! - smooth[j]!;
  const gradients = new Float64Array(last - first + 1);
  for (let i = first; i <= last; i++) {
    gradients[i - first] = (prefix[i + k]! - 2 * prefix[i]! + prefix[i - k]!) / k;
  }
  return robustScale(gradients, floor);
}
