// Robust statistics the models are built from: order statistics, running medians, robust lines
// and scales. Medians and MADs rather than means and standard deviations everywhere a fit could
// see an anomaly, so that an anomaly never pulls the expected value towards itself.

import { TUNING } from './tuning.js';

/** Consistency constant: MAD × 1.4826 estimates the standard deviation of Gaussian noise. */
export const MAD_TO_SIGMA = 1.4826;
/** Mean absolute deviation × 1.2533 estimates the standard deviation of Gaussian noise. */
export const MEAN_ABS_TO_SIGMA = 1.2533;

/**
 * Rearranges `a[lo..hi]` so that `a[k]` holds the value it would have if that range were sorted,
 * and returns it. Expected O(hi − lo); the scratch array is the caller's to lose.
 */
export function selectInPlace(a: Float64Array, k: number, lo = 0, hi = a.length - 1): number {
  while (hi > lo) {
    // Median of three as the pivot keeps sorted and reversed input linear.
    const mid = (lo + hi) >>> 1;
    if (a[mid]! < a[lo]!) swap(a, mid, lo);
    if (a[hi]! < a[lo]!) swap(a, hi, lo);
    if (a[hi]! < a[mid]!) swap(a, hi, mid);
    const pivot = a[mid]!;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i]! < pivot) i++;
      while (a[j]! > pivot) j--;
      if (i <= j) {
        swap(a, i, j);
        i++;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else break;
  }
  return a[k]!;
}

function swap(a: Float64Array, i: number, j: number): void {
  const t = a[i]!;
  a[i] = a[j]!;
  a[j] = t;
}

/** Median of `a[lo..hi]`, reordering that range. Even counts give the mean of the middle two. */
export function medianInPlace(a: Float64Array, lo = 0, hi = a.length - 1): number {
  const n = hi - lo + 1;
  if (n <= 0) return Number.NaN;
  const upper = lo + (n >> 1);
  const upperValue = selectInPlace(a, upper, lo, hi);
  if (n % 2 === 1) return upperValue;
  // After selection everything below `upper` is <= upperValue; the lower middle is their maximum.
  let lowerValue = a[lo]!;
  for (let i = lo + 1; i < upper; i++) if (a[i]! > lowerValue) lowerValue = a[i]!;
  return (lowerValue + upperValue) / 2;
}

/** Arrays at least this long take `medianOf`'s bucketed selection; shorter ones a copy's quickselect. */
const BUCKETED_MEDIAN_POINTS = 256;
/** Buckets of the bucketed selection: a few points each for the windows the streaming judge takes medians of. */
const MEDIAN_BUCKETS = 512;
const bucketCounts = new Int32Array(MEDIAN_BUCKETS);
/** `medianOf`'s working memory, kept between calls (grown, never shrunk; it neither recurses nor yields). */
let bucketPoints = new Float64Array(0);
let bucketSpare = new Float64Array(0);
/** Points few enough to select among without bucketing them again. */
const SELECTED_BUCKET_POINTS = 64;
let medianCopy = new Float64Array(0);

/**
 * The median of `values` exactly as `medianInPlace` gives it (the middle order statistic, or the
 * mean of the two middle ones for an even count), leaving them untouched. Period detection takes
 * two medians of a whole window for every period it scores (a dozen or more per check), and on
 * noise-like residuals quickselect spends most of its time on mispredicted comparisons (on
 * smoother data it is as fast: robustScale keeps it). So for a long array the points are
 * counted into buckets of equal width between their minimum and maximum (the bucket of x,
 * ⌊(x − min) × scale⌋, never decreases as x grows, so every point of a lower bucket is at most
 * every point of a higher one), and only the bucket holding the middle rank is selected in:
 * the same order statistics with few unpredictable comparisons. Arrays with NaN (which does not
 * order), constant ones and ranges beyond the floating-point numbers take quickselect on a copy.
 */
export function medianOf(values: Float64Array): number {
  const n = values.length;
  if (n >= BUCKETED_MEDIAN_POINTS) {
    const bucketed = bucketedMedian(values, n);
    if (bucketed !== undefined) return bucketed;
  }
  if (medianCopy.length < n) medianCopy = new Float64Array(Math.max(n, 2 * medianCopy.length));
  const copy = medianCopy.subarray(0, n);
  copy.set(values);
  return medianInPlace(copy);
}

/**
 * `medianOf` by buckets (n > 1), or undefined where it does not apply (NaN, constant, overflowing
 * range). Outliers stretch the range and crowd the middle ranks into a few buckets, so the
 * bucket holding the middle is bucketed again between its own extremes, up to three levels,
 * before the points left are selected in.
 */
function bucketedMedian(values: Float64Array, n: number): number | undefined {
  let min = values[0]!;
  let max = min;
  for (let i = 0; i < n; i++) {
    const x = values[i]!;
    if (x < min) min = x;
    else if (x > max) max = x;
    else if (x !== x) return undefined;
  }
  if (!(max > min)) return undefined;
  if (bucketPoints.length < n) bucketPoints = new Float64Array(Math.max(n, 2 * bucketPoints.length));
  if (bucketSpare.length < n) bucketSpare = new Float64Array(Math.max(n, 2 * bucketSpare.length));
  const counts = bucketCounts;
  const upper = n >> 1;
  const even = n % 2 === 0;
  let source = values;
  let target = bucketPoints;
  let spare = bucketSpare;
  let count = n;
  /** Points below the ones in `source`, and the largest of them (the lower middle when it is among them). */
  let skipped = 0;
  let largestBelow = Number.NEGATIVE_INFINITY;
  for (let level = 0; level < 3 && count > SELECTED_BUCKET_POINTS; level++) {
    if (level > 0) {
      min = source[0]!;
      max = min;
      for (let i = 1; i < count; i++) {
        const x = source[i]!;
        if (x < min) min = x;
        else if (x > max) max = x;
      }
    }
    const scale = (MEDIAN_BUCKETS - 1) / (max - min);
    if (!(max > min && scale > 0 && scale < Number.POSITIVE_INFINITY)) {
      if (level === 0) return undefined;
      break;
    }
    counts.fill(0);
    for (let i = 0; i < count; i++) counts[((source[i]! - min) * scale) | 0]!++;
    // The bucket holding rank `upper` (medianInPlace's), and how many points lie below it.
    let below = skipped;
    let bucket = 0;
    while (below + counts[bucket]! <= upper) below += counts[bucket++]!;
    // With an even count the lower middle is rank upper − 1: in the same bucket, or the largest
    // point of the buckets below.
    const lowerBelow = even && upper - 1 < below;
    let kept = 0;
    for (let i = 0; i < count; i++) {
      const x = source[i]!;
      const b = ((x - min) * scale) | 0;
      if (b === bucket) target[kept++] = x;
      else if (lowerBelow && b < bucket && x > largestBelow) largestBelow = x;
    }
    skipped = below;
    count = kept;
    source = target;
    [target, spare] = [spare, target];
  }
  if (source === values) {
    // Few enough points to select among at once: a copy of them.
    source = bucketPoints;
    source.set(values.subarray(0, n));
  }
  const rank = upper - skipped;
  const upperValue = selectInPlace(source, rank, 0, count - 1);
  if (!even) return upperValue;
  let lowerValue = largestBelow;
  if (rank > 0) {
    // After selection the points before `rank` are the smaller ones; the lower middle is their largest.
    lowerValue = source[0]!;
    for (let j = 1; j < rank; j++) if (source[j]! > lowerValue) lowerValue = source[j]!;
  }
  return (lowerValue + upperValue) / 2;
}

/** Median of the values, leaving them untouched. */
export function median(values: ArrayLike<number>): number {
  return medianInPlace(Float64Array.from(values));
}

/** The q-quantile (0..1) by linear interpolation between order statistics, leaving values untouched. */
export function quantile(values: ArrayLike<number>, q: number): number {
  const a = Float64Array.from(values);
  if (a.length === 0) return Number.NaN;
  const position = Math.min(Math.max(q, 0), 1) * (a.length - 1);
  const below = Math.floor(position);
  const low = selectInPlace(a, below);
  if (below === position) return low;
  // The next order statistic is the minimum of what selection left above `below`.
  let high = Number.POSITIVE_INFINITY;
  for (let i = below + 1; i < a.length; i++) if (a[i]! < high) high = a[i]!;
  return low + (high - low) * (position - below);
}

/** robustScale's working copy, kept between calls (grown, never shrunk; it neither recurses nor yields). */
let scaleScratch = new Float64Array(0);

/**
 * A robust estimate of the noise's standard deviation: MAD × 1.4826. When more than half the
 * values tie (MAD = 0, common with counts or flat stretches) it falls back to the mean absolute
 * deviation × 1.2533, which is non-zero as soon as one value differs; and it never goes below
 * `floor`, so a perfectly flat series still gets a band of non-zero width.
 */
export function robustScale(values: Float64Array, floor: number): number {
  const n = values.length;
  if (n === 0) return floor;
  if (scaleScratch.length < n) scaleScratch = new Float64Array(Math.max(n, 2 * scaleScratch.length));
  const scratch = scaleScratch.subarray(0, n);
  scratch.set(values);
  const center = medianInPlace(scratch);
  let meanAbs = 0;
  for (let i = 0; i < n; i++) {
    const d = Math.abs(values[i]! - center);
    scratch[i] = d;
    meanAbs += d;
  }
  const mad = medianInPlace(scratch);
  if (mad > 0) return Math.max(mad * MAD_TO_SIGMA, floor);
  return Math.max((meanAbs / n) * MEAN_ABS_TO_SIGMA, floor);
}

/**
 * Quantile of the absolute deviations from the median that `shoulderScale` reads: the shoulders
 * of the distribution, past its core and short of its tails.
 */
export const SHOULDER_QUANTILE = TUNING.SHOULDER_QUANTILE.value;
/** Φ⁻¹((1 + SHOULDER_QUANTILE) / 2): for Gaussian noise 80 % of |x − median| lie within 1.2816 σ. */
const SHOULDER_TO_SIGMA = 1 / 1.2815515655446004;

/**
 * The noise scale of residuals that need not be Gaussian: the larger of `robustScale` (the MAD,
 * the core's width) and the 0.8-quantile of |x − median| / 1.2816 (the shoulders' width). Both
 * estimate σ for Gaussian noise, so a band of z of them flags as rarely as before there; where
 * the core is narrow and the shoulders broad (readings quantized to a few levels, noise that is
 * larger in one phase of a cycle than in another, bursts) the MAD alone makes every ordinary
 * reading of the shoulders an outlier. Anomalies up to a fifth of the points leave it as it is.
 */
export function shoulderScale(values: Float64Array, floor: number): number {
  const core = robustScale(values, floor);
  const n = values.length;
  if (n === 0) return core;
  const deviations = values.slice();
  const center = medianInPlace(deviations);
  for (let i = 0; i < n; i++) deviations[i] = Math.abs(values[i]! - center);
  return Math.max(core, quantile(deviations, SHOULDER_QUANTILE) * SHOULDER_TO_SIGMA);
}

/**
 * A scale floor tied to the series' magnitude: a millionth of its mean absolute value, so that
 * margins never collapse to zero width on flat data yet never hide a real deviation.
 */
export function scaleFloor(values: ArrayLike<number>): number {
  let total = 0;
  for (let i = 0; i < values.length; i++) total += Math.abs(values[i]!);
  const magnitude = values.length > 0 ? total / values.length : 0;
  return magnitude > 0 ? magnitude * 1e-6 : 1e-12;
}

/** Largest odd number <= limit that is >= wanted rounded up to odd (at least 1). */
export function oddWindow(wanted: number, limit: number): number {
  let w = Math.max(1, Math.ceil(wanted));
  if (w % 2 === 0) w += 1;
  let cap = Math.max(1, Math.floor(limit));
  if (cap % 2 === 0) cap -= 1;
  return Math.min(w, cap);
}

/** A robust straight line y = intercept + slope × x. */
export interface Line {
  readonly slope: number;
  readonly intercept: number;
}

/**
 * Theil–Sen line through the points `from..to-1` (x from `xs`, or the index when null): the median
 * of all pairwise slopes, then the median intercept. Breaks down only when ~29 % of the points
 * are outliers. O(w²) in the number of points; used on short windows only.
 */
export function theilSen(ys: ArrayLike<number>, xs: ArrayLike<number> | null, from: number, to: number): Line {
  const w = to - from;
  if (w <= 0) return { slope: 0, intercept: 0 };
  if (w === 1) return { slope: 0, intercept: ys[from]! };
  const slopes = new Float64Array((w * (w - 1)) / 2);
  let count = 0;
  for (let i = from; i < to; i++) {
    const xi = xs === null ? i : xs[i]!;
    for (let j = i + 1; j < to; j++) {
      const dx = (xs === null ? j : xs[j]!) - xi;
      if (dx !== 0) slopes[count++] = (ys[j]! - ys[i]!) / dx;
    }
  }
  const slope = count > 0 ? medianInPlace(slopes, 0, count - 1) : 0;
  const intercepts = new Float64Array(w);
  for (let i = from; i < to; i++) intercepts[i - from] = ys[i]! - slope * (xs === null ? i : xs[i]!);
  return { slope, intercept: medianInPlace(intercepts) };
}

/** How the running median treats the first and last half-window, where no centred window fits. */
export type EdgeRule = 'clamp' | 'line';

/**
 * Running median over an odd window `w`, O(n·w) with a sorted window and binary search (w is at
 * most a few hundred here, where shifting beats a heap). Median filters keep level shifts sharp
 * and ignore bursts shorter than half the window, which is why the trend is built from them.
 *
 * Edges: `clamp` uses the first (last) full window's median, right for seasonal data where a
 * full window is needed to average a cycle out; `line` uses a Theil–Sen line through the first
 * (last) window, so that a trending series is not lagged at its ends.
 *
 * `leaveOut`, when given, receives for every interior point the median of its window WITHOUT
 * the point itself (edge points get the edge value). Residuals against it are out of sample, so
 * a noise scale estimated from them is not shrunk by the point having voted for its own trend.
 */
export function runningMedian(x: Float64Array, w: number, edges: EdgeRule, leaveOut?: Float64Array): Float64Array {
  const n = x.length;
  const out = new Float64Array(n);
  if (n === 0) return out;
  const window = oddWindow(w, n);
  const half = (window - 1) >> 1;
  const sorted = x.slice(0, window).sort();
  out[half] = sorted[half]!;
  if (leaveOut !== undefined) leaveOut[half] = medianWithout(sorted, x[half]!, half);
  for (let center = half + 1; center + half < n; center++) {
    replaceSorted(sorted, x[center - half - 1]!, x[center + half]!);
    out[center] = sorted[half]!;
    if (leaveOut !== undefined) leaveOut[center] = medianWithout(sorted, x[center]!, half);
  }
  if (edges === 'clamp' || window < 3) {
    const first = out[half]!;
    const last = out[n - 1 - half]!;
    for (let i = 0; i < half; i++) out[i] = first;
    for (let i = n - half; i < n; i++) out[i] = last;
  } else {
    const head = theilSen(x, null, 0, window);
    for (let i = 0; i < half; i++) out[i] = head.intercept + head.slope * i;
    const tail = theilSen(x, null, n - window, n);
    for (let i = n - half; i < n; i++) out[i] = tail.intercept + tail.slope * i;
  }
  if (leaveOut !== undefined) {
    for (let i = 0; i < half; i++) leaveOut[i] = out[i]!;
    for (let i = n - half; i < n; i++) leaveOut[i] = out[i]!;
    if (window < 3) leaveOut.set(out);
  }
  return out;
}

/**
 * Median of an odd-length sorted window (middle index `half`) once one copy of `value` is
 * removed: the mean of the two middle values of the rest. Ties leave the same multiset
 * whichever copy goes, so the first copy's rank decides.
 */
function medianWithout(sorted: Float64Array, value: number, half: number): number {
  if (sorted.length < 3) return sorted[half]!;
  const rank = lowerBound(sorted, value);
  const low = rank > half - 1 ? sorted[half - 1]! : sorted[half]!;
  const high = rank > half ? sorted[half]! : sorted[half + 1]!;
  return (low + high) / 2;
}

/**
 * A robust global slope: the median of the slopes between points half the series apart. O(n),
 * insensitive to spikes, and to the seasonal cycle too when averaged over many pairs. Running
 * medians are taken around this line: on a steep trend a window's median is simply its middle
 * point, so without it the trend would chase the noise.
 */
export function robustSlope(x: Float64Array): number {
  const n = x.length;
  const lag = n >> 1;
  if (lag < 1) return 0;
  const slopes = new Float64Array(n - lag);
  for (let i = 0; i + lag < n; i++) slopes[i] = (x[i + lag]! - x[i]!) / lag;
  return medianInPlace(slopes);
}

/**
 * Running median taken around the series' robust straight line (see `robustSlope`), the line
 * added back. `leaveOut` as in `runningMedian`.
 */
export function detrendedRunningMedian(
  x: Float64Array,
  w: number,
  edges: EdgeRule,
  leaveOut?: Float64Array,
): Float64Array {
  const n = x.length;
  const slope = robustSlope(x);
  const level = new Float64Array(n);
  for (let i = 0; i < n; i++) level[i] = x[i]! - slope * i;
  const out = runningMedian(level, w, edges, leaveOut);
  for (let i = 0; i < n; i++) out[i] = out[i]! + slope * i;
  if (leaveOut !== undefined) for (let i = 0; i < n; i++) leaveOut[i] = leaveOut[i]! + slope * i;
  return out;
}

/** Swaps one value of a sorted array for another, keeping it sorted, by one shift of the gap. */
function replaceSorted(sorted: Float64Array, leaving: number, entering: number): void {
  let at = lowerBound(sorted, leaving);
  if (entering > leaving) {
    while (at + 1 < sorted.length && sorted[at + 1]! < entering) {
      sorted[at] = sorted[at + 1]!;
      at++;
    }
  } else {
    while (at > 0 && sorted[at - 1]! > entering) {
      sorted[at] = sorted[at - 1]!;
      at--;
    }
  }
  sorted[at] = entering;
}

function lowerBound(sorted: Float64Array, value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
