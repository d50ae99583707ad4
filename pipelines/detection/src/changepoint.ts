// Changepoint detection: where the series' level shifts and stays shifted, by the seed's rules
// over the model's prediction error, with a significance test choosing among the candidates.
import { decompose, seasonalAt } from './decomposition.js';
import { familyConfidence, segmentSplits, type SplitSettings } from './changepoint-segments.js';
import { prepareSeries } from './prepare.js';
import { median, quantile, robustScale, runningMedian, scaleFloor } from './robust.js';
import type { ChangePointOptions, ChangePointResult, Granularity, SeriesInput } from './types.js';
import { changePointRulesInForce } from './rules.js';
import { TUNING } from './tuning.js';

/**
 * The vendor's default stableTrendWindow per granularity (BEHAVIOUR.md §3.2). Used when the
 * client sends none, capped to the series (`effectiveStableTrendWindow`).
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

/** Share of gradients a changepoint must exceed (the seed's 95th percentile). */
const GRADIENT_PERCENTILE = TUNING.GRADIENT_PERCENTILE.value;
/** Smallest default gradient window (the seed's `max(period, 5)`). */
const MIN_CHANGE_WINDOW = TUNING.MIN_CHANGE_WINDOW.value;
/** The default window is at most this share of the series. */
const CHANGE_WINDOW_SHARE = TUNING.CHANGE_WINDOW_SHARE.value;
/** Blocks per window when the noise is estimated on block means (`noiseAtScale`). */
const WIDE_BLOCKS = TUNING.WIDE_BLOCKS.value;
/** Longest gradient window whose noise is estimated point by point. */
const MAX_DIRECT_SPAN = TUNING.MAX_DIRECT_SPAN.value;

/** stableTrendWindow in force: the client's, else the granularity default capped to n/20 (at least 5). */
export function effectiveStableTrendWindow(granularity: Granularity, count: number, requested?: number): number {
  if (requested !== undefined) return Math.max(1, Math.floor(requested));
  return Math.min(DEFAULT_STABLE_TREND_WINDOW[granularity], Math.max(MIN_CHANGE_WINDOW, Math.floor(count * CHANGE_WINDOW_SHARE)));
}

/**
 * Changepoints, by the seed's rules over the prediction error e (README.md, "Changepoints"):
 *
 *   e = value − seasonal component − a robust straight line (slope = median gradient / k);
 *   gradient[i] = mean(e[i:i+k]) − mean(e[i−k:i]), k = max(period, stableTrendWindow);
 *   candidates: |gradient| above the 95th percentile of all |gradients| and the largest within
 *       ±max(1, round(k/2)) (rules 1 and 2);
 *   changepoints: chosen among the candidates by binary segmentation (`segmentSplits`), each
 *       split tested as a step against a smooth curve within its segment, its confidence the
 *       family-wise tail probability of that test (>= threshold), and at least max(period, 1)
 *       points from every other changepoint (rules 3 and 4).
 */
export function detectChangePointSeries(input: SeriesInput, opts: ChangePointOptions): ChangePointResult {
  const analysis = analyseChangePoints(input, opts);
  const n = input.values.length;
  const isChangePoint: boolean[] = new Array<boolean>(n);
  const confidenceScores: number[] = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const j = analysis.inputIndex[i]!;
    isChangePoint[i] = analysis.isChange[j] === 1;
    confidenceScores[i] = analysis.confidence[j]!;
  }
  return { period: analysis.period, isChangePoint, confidenceScores };
}

/** What `detectChangePointSeries` computed, by model position (the aligned grid), for tests. */
export interface ChangePointAnalysis {
  readonly period: number;
  /** The gradient window. */
  readonly k: number;
  /** Radius of the local-maximum rule. */
  readonly radius: number;
  /** Least distance between changepoints: max(period, 1). */
  readonly spacing: number;
  readonly threshold: number;
  /** The prediction error e the gradients are taken over. */
  readonly errors: Float64Array;
  readonly gradient: Float64Array;
  /** 1 where a point was imputed (never a changepoint, and not in the percentile). */
  readonly imputed: Uint8Array;
  readonly isChange: Uint8Array;
  readonly confidence: Float64Array;
  /** Model position of each input point. */
  readonly inputIndex: ArrayLike<number>;
}

/** The changepoint pipeline, returning its intermediate values (see `detectChangePointSeries`). */
export function analyseChangePoints(input: SeriesInput, opts: ChangePointOptions): ChangePointAnalysis {
  const { prepared, period } = prepareSeries(input, opts.period);
  const n = input.values.length;
  const m = prepared.values.length;
  const threshold = opts.threshold ?? defaultChangePointThreshold(input.granularity);
  const { detrend, refine, splitTrend } = changePointRulesInForce(opts);
  const model = decompose(prepared.values, prepared.slots, prepared.imputed, period);

  const stableTrendWindow = effectiveStableTrendWindow(input.granularity, n, opts.stableTrendWindow);
  const k = Math.max(1, Math.min(Math.max(period, stableTrendWindow), Math.floor((m - 1) / 2)));
  const first = k;
  const last = m - k; // inclusive: e[last:last+k] is the final window
  const validCount = Math.max(0, last - first + 1);

  let errors: Float64Array = new Float64Array(m);
  for (let j = 0; j < m; j++) errors[j] = prepared.values[j]! - seasonalAt(model, j);
  let gradient = gradients(errors, k, first, last);
  if (detrend && validCount > 0) {
    // The median gradient is k × a robust slope of e that level shifts barely move: without
    // that line, a steady trend would be one long run of large gradients.
    const slope = median(gradient.subarray(first, last + 1)) / k;
    errors = tilted(errors, slope);
    gradient = gradients(errors, k, first, last);
  }

  const floor = scaleFloor(prepared.values);
  const noise = last >= first ? noiseAtScale(errors, k, floor) : floor;
  const windows = Math.max(1, validCount / k);
  const confidence = new Float64Array(m);
  for (let i = first; i <= last; i++) confidence[i] = familyConfidence(Math.abs(gradient[i]!) / noise, windows);

  // The seed's rules 1 and 2: above the 95th percentile of |gradient|, and a local maximum.
  const magnitudes: number[] = [];
  for (let i = first; i <= last; i++) if (prepared.imputed[i] === 0) magnitudes.push(Math.abs(gradient[i]!));
  const cutoff = magnitudes.length > 0 ? quantile(magnitudes, GRADIENT_PERCENTILE) : Number.POSITIVE_INFINITY;
  const radius = refine ? Math.max(1, Math.round(k / 2)) : k;
  const candidates: number[] = [];
  for (let i = first; i <= last; i++) {
    if (prepared.imputed[i] !== 0 || !(Math.abs(gradient[i]!) > cutoff)) continue;
    if (isLocalMaximum(gradient, i, radius, first, last)) candidates.push(i);
  }

  // Rules 3 and 4: confidence >= threshold, and at least max(period, 1) points apart.
  const spacing = Math.max(period, 1);
  const isChange = new Uint8Array(m);
  if (refine) {
    const settings: SplitSettings = {
      longRunVariance: longRunVariance(errors, k, noise, floor),
      spacing,
      threshold,
      withTrend: splitTrend,
    };
    for (const split of segmentSplits(errors, candidates, settings)) {
      isChange[split.at] = 1;
      confidence[split.at] = split.confidence;
    }
  } else {
    candidates.sort((a, b) => Math.abs(gradient[b]!) - Math.abs(gradient[a]!) || a - b);
    const accepted: number[] = [];
    for (const i of candidates) {
      if (confidence[i]! < threshold) continue;
      if (accepted.every((j) => Math.abs(i - j) >= spacing)) accepted.push(i);
    }
    for (const i of accepted) isChange[i] = 1;
  }

  return {
    period,
    k,
    radius,
    spacing,
    threshold,
    errors,
    gradient,
    imputed: prepared.imputed,
    isChange,
    confidence,
    inputIndex: prepared.inputIndex,
  };
}

/** e − slope × index. */
function tilted(raw: Float64Array, slope: number): Float64Array {
  const out = new Float64Array(raw.length);
  for (let j = 0; j < raw.length; j++) out[j] = raw[j]! - slope * j;
  return out;
}

/** g[i] = mean(e[i:i+k]) − mean(e[i−k:i]) for first <= i <= last, 0 elsewhere. */
function gradients(errors: Float64Array, k: number, first: number, last: number): Float64Array {
  const m = errors.length;
  const prefix = new Float64Array(m + 1);
  for (let j = 0; j < m; j++) prefix[j + 1] = prefix[j]! + errors[j]!;
  const gradient = new Float64Array(m);
  for (let i = first; i <= last; i++) {
    gradient[i] = (prefix[i + k]! - 2 * prefix[i]! + prefix[i - k]!) / k;
  }
  return gradient;
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

/**
 * Long-run variance of e for the split test, which compares means of long stretches: from the
 * gradient noise at scale k (var(g) = 2·σ²_long / k), and at the scale W of a twentieth of the
 * series when that is longer, whichever is larger. Noise that wanders for longer than k points
 * (strongly autocorrelated) has a larger variance of long means than k alone shows.
 */
function longRunVariance(errors: Float64Array, k: number, noise: number, floor: number): number {
  const m = errors.length;
  const atK = (noise * noise * k) / 2;
  const wide = Math.min(Math.floor(m * CHANGE_WINDOW_SHARE), Math.floor((m - 1) / 2));
  if (wide <= k) return atK;
  const wideNoise = noiseAtScale(errors, wide, floor, true);
  return Math.max(atK, (wideNoise * wideNoise * wide) / 2);
}

/**
 * `gradientNoise` at scale `span`. Long spans (or `always`) run on means of blocks of span/8
 * points, since gradients of block means at 8 blocks are gradients at span points: this keeps
 * the running median's window short (its cost is O(n·w), and its Theil–Sen ends O(w²)).
 */
function noiseAtScale(errors: Float64Array, span: number, floor: number, always = false): number {
  const m = errors.length;
  if (!always && span <= MAX_DIRECT_SPAN) return gradientNoise(errors, span, m - span, span, floor);
  const block = Math.max(1, Math.floor(span / WIDE_BLOCKS));
  const count = Math.floor(m / block);
  const means = new Float64Array(count);
  for (let c = 0; c < count; c++) {
    let sum = 0;
    for (let j = c * block; j < (c + 1) * block; j++) sum += errors[j]!;
    means[c] = sum / block;
  }
  const blocks = Math.max(1, Math.min(Math.round(span / block), Math.floor((count - 1) / 2)));
  // A block-mean gradient over `blocks` blocks spans blocks × block points; rescale to `span`.
  const sigma = gradientNoise(means, blocks, count - blocks, blocks, floor);
  return sigma * Math.sqrt((blocks * block) / span);
}
