// Period detection: which seasonal cycle, if any, the series repeats. First the periods its
// granularity suggests (a day of hours, a week of days, ...), then whatever the data's
// autocorrelation shows. Every candidate must earn its place by a cross-validated seasonal fit,
// so noise, trends and random walks come out as non-seasonal (period 0).
import { movingAverageResidualsInto, prefixSums, prefixSumsInto } from './decomposition.js';
import { autocorrelation } from './fft.js';
import { MAD_TO_SIGMA, medianOf } from './robust.js';
import type { Granularity } from './types.js';
import { TUNING } from './tuning.js';

/**
 * Share of the detrended variance a seasonal profile must explain OUT OF SAMPLE (fit on every
 * other cycle, scored on the rest) for its period to be accepted. Pure noise scores below 0.
 */
export const MIN_SEASONAL_FIT = TUNING.MIN_SEASONAL_FIT.value;
/** A longer candidate that is a multiple of a shorter one must leave this much less unexplained. */
const LONGER_PERIOD_GAIN = TUNING.LONGER_PERIOD_GAIN.value;
/** A divisor of the chosen lag replaces it when it fits nearly as well (it is the fundamental). */
const FUNDAMENTAL_TOLERANCE = TUNING.FUNDAMENTAL_TOLERANCE.value;
/** Smallest period the data-driven search reports. */
const MIN_DATA_PERIOD = TUNING.MIN_DATA_PERIOD.value;
/** Fewest points period detection looks at. */
const MIN_POINTS = 12;
/** Autocorrelation peaks lower than this are not candidates. */
const MIN_PEAK_ACF = TUNING.MIN_PEAK_ACF.value;
/** How many of the highest autocorrelation peaks get a seasonal-fit test. */
const PEAKS_TESTED = TUNING.PEAKS_TESTED.value;

/**
 * Cycle lengths, in units of the granularity, that the vendor tries first (BEHAVIOUR.md §7):
 * a day and a week of hours, minutes and seconds, a week of days, a year of months, ...
 * Divided by customInterval where that gives a whole number of points.
 */
const GRANULARITY_CYCLES: Readonly<Record<Granularity, readonly number[]>> = {
  yearly: [],
  monthly: [12],
  weekly: [4, 12],
  daily: [7],
  hourly: [24, 168],
  minutely: [1440, 2880, 10080],
  secondly: [86_400, 172_800, 604_800],
  microsecond: [1000],
  none: [],
};

/** The granularity's candidate periods in points, shortest first. */
export function granularityPeriods(granularity: Granularity, customInterval: number): number[] {
  const interval = Math.max(1, Math.floor(customInterval));
  return GRANULARITY_CYCLES[granularity]
    .filter((cycle) => cycle % interval === 0)
    .map((cycle) => cycle / interval)
    .sort((a, b) => a - b);
}

/**
 * The series' period in points, or 0 when it has none.
 *
 * 1. Granularity candidates (length > 2 × period, period >= 4), each scored by
 *    `seasonalFitScore`. The shortest accepted one wins unless a longer multiple of it explains
 *    clearly more (a weekly pattern on top of a daily one): hourly data with only a daily cycle
 *    gets 24, not 168.
 * 2. Otherwise the autocorrelation (FFT) of the linearly detrended, winsorised series: its
 *    highest local maxima with at least `minDataCycles` full cycles in the series (default 3)
 *    are scored the same way, and the best is replaced by its smallest divisor that fits nearly
 *    as well, so a multiple of the true period is refined down to the fundamental. The
 *    out-of-sample fit needs 2 cycles at least, so `minDataCycles` below 2 acts as 2.
 */
export function detectPeriod(
  values: ArrayLike<number>,
  granularity: Granularity,
  customInterval: number,
  stabilise = true,
  minDataCycles = 3,
): number {
  const n = values.length;
  if (n < MIN_POINTS) return 0;
  // Only read from here on: a Float64Array (the streaming judge's history) is used in place.
  const x = values instanceof Float64Array ? values : Float64Array.from(values);
  if (isConstant(x)) return 0;

  let chosen = 0;
  let chosenFit = Number.NEGATIVE_INFINITY;
  let scoreOf: ((period: number) => number) | null = null;
  for (const period of granularityPeriods(granularity, customInterval)) {
    if (period < 4 || n <= 2 * period) continue;
    scoreOf ??= seasonalFitScorer(x);
    const fit = scoreOf(period);
    if (fit < MIN_SEASONAL_FIT) continue;
    if (chosen === 0) {
      chosen = period;
      chosenFit = fit;
    } else if (period % chosen === 0 && 1 - fit < LONGER_PERIOD_GAIN * (1 - chosenFit)) {
      chosen = period;
      chosenFit = fit;
    }
  }
  if (chosen > 0) return chosen;
  return autocorrelationPeriod(x, stabilise, Math.max(2, minDataCycles));
}

function isConstant(x: Float64Array): boolean {
  for (let i = 1; i < x.length; i++) if (x[i] !== x[0]) return false;
  return true;
}

/**
 * Buffers of one detection, kept between detections (period detection runs every few dozen
 * points of a stream, on windows of the same few lengths): grown, never shrunk. Only
 * `autocorrelationPeriod` uses them, and it neither recurses nor yields.
 */
let kept = new Float64Array(0);
/** The kept buffer cut into `count` views of n values each (their contents are the caller's to overwrite). */
function keptViews(n: number, count: number): Float64Array[] {
  if (kept.length < n * count) kept = new Float64Array(Math.max(n * count, kept.length * 2));
  return Array.from({ length: count }, (_, k) => kept.subarray(k * n, (k + 1) * n));
}

function autocorrelationPeriod(x: Float64Array, stabilise: boolean, minCycles: number): number {
  const n = x.length;
  // The detrended and winsorised series, the scorers' moving-average residuals, their scratch
  // and their winsorised residuals, and the prefix sums (n + 1) both scorers share.
  const [trendless, winsorScratch, winsorised, detrended, scratch, clipped, prefixBuffer] = keptViews(n + 1, 7) as [
    Float64Array, Float64Array, Float64Array, Float64Array, Float64Array, Float64Array, Float64Array,
  ];
  const centred = winsoriseInto(
    detrendLinearInto(x, trendless.subarray(0, n)),
    winsorScratch.subarray(0, n),
    winsorised.subarray(0, n),
  );
  const acf = autocorrelation(centred);
  const maxLag = Math.floor(n / minCycles);
  const peaks: number[] = [];
  for (let lag = MIN_DATA_PERIOD; lag <= maxLag && lag + 1 < n; lag++) {
    const r = acf[lag]!;
    if (r > MIN_PEAK_ACF && r > acf[lag - 1]! && r >= acf[lag + 1]!) peaks.push(lag);
  }
  if (peaks.length === 0) return 0;
  peaks.sort((a, b) => acf[b]! - acf[a]!);

  const fitCache = new Map<number, number>();
  const prefix = prefixSumsInto(x, prefixBuffer);
  const buffers = { prefix, detrended: detrended.subarray(0, n), scratch: scratch.subarray(0, n), clipped: clipped.subarray(0, n) };
  const scoreOf = seasonalFitScorer(x, buffers);
  const fitOf = (period: number): number => {
    let fit = fitCache.get(period);
    if (fit === undefined) {
      fit = scoreOf(period);
      fitCache.set(period, fit);
    }
    return fit;
  };
  let best = 0;
  let bestFit = Number.NEGATIVE_INFINITY;
  for (const lag of peaks.slice(0, PEAKS_TESTED)) {
    const fit = fitOf(lag);
    if (fit > bestFit) {
      best = lag;
      bestFit = fit;
    }
  }
  if (bestFit < MIN_SEASONAL_FIT) return 0;
  // Smallest divisor first: the fundamental, when it explains the series about as well.
  let fundamental = best;
  for (let divisor = Math.floor(best / MIN_DATA_PERIOD); divisor >= 2; divisor--) {
    const candidate = Math.round(best / divisor);
    if (candidate < MIN_DATA_PERIOD || Math.abs(candidate * divisor - best) > 1) continue;
    if (fitOf(candidate) >= bestFit - FUNDAMENTAL_TOLERANCE) {
      fundamental = candidate;
      break;
    }
  }
  const sharpened = sharpenPeriod(centred, fundamental, maxLag);
  // The cycle scorer reuses the prefix sums and (done with) the fit scorer's buffers.
  return stabilise ? bestFittingLag(x, sharpened, maxLag, buffers) : sharpened;
}

/**
 * Among lags within 2 % of the sinusoid's estimate, the one whose cycles predict each other best
 * (`cyclePredictionScorer`: each point against the median of its phase in the other cycles,
 * errors counted by their size, not their square). On a clean cycle a lag one or two off smears
 * every phase, so the true period wins clearly, and the answer no longer wanders with the
 * window's position as the sinusoid's does on non-sinusoidal shapes (a 288-point daily
 * square-ish wave came out anywhere from 282 to 294), nor with one anomalous cycle in the window
 * (a raised or a flat day pulls the sinusoid's lag; the medians shrug it off). The price: on a
 * noisy sine with few cycles the lags score alike, and the answer may be one off where the
 * sinusoid's would not.
 */
function bestFittingLag(x: Float64Array, period: number, maxLag: number, buffers?: ScorerBuffers): number {
  const reach = Math.round(period * 0.02);
  if (reach < 1) return period;
  const scoreOf = cyclePredictionScorer(x, buffers);
  let best = period;
  let bestScore = scoreOf(period);
  for (let lag = Math.max(MIN_DATA_PERIOD, period - reach); lag <= Math.min(maxLag, period + reach); lag++) {
    // The estimate's own score is bestScore already (a score is a pure function of the lag).
    if (lag === period) continue;
    const score = scoreOf(lag);
    if (score > bestScore) {
      best = lag;
      bestScore = score;
    }
  }
  return best;
}

/**
 * How well the cycles of period `period` predict each other, for many periods of one series:
 * the series less its one-period moving average (which averages one cycle out), each point
 * predicted by the median of its phase's points in the other cycles; the score is 1 − the sum of
 * the absolute prediction errors over the sum of the points' absolute deviations from their
 * median (1: the cycles repeat exactly; 0 or less: no better than a flat line). Higher is better;
 * −∞ for fewer than two cycles. Each phase's handful of points is sorted once, and the median of
 * the others read from it around the point's rank.
 */
export function cyclePredictionScorer(x: ArrayLike<number>, buffers?: ScorerBuffers): (period: number) => number {
  const n = x.length;
  const prefix = buffers?.prefix ?? prefixSums(x);
  const detrended = buffers?.detrended ?? new Float64Array(n);
  let phase = new Float64Array(0);
  return (period: number): number => {
    const p = Math.floor(period);
    if (p < 2 || n < 2 * p) return Number.NEGATIVE_INFINITY;
    movingAverageResidualsInto(x, prefix, p, detrended);
    const centre = medianOf(detrended);
    const cycles = Math.ceil(n / p);
    if (phase.length < cycles) phase = new Float64Array(cycles);
    let error = 0;
    let spread = 0;
    for (let k = 0; k < p; k++) {
      let c = 0;
      for (let i = k; i < n; i += p) {
        // Insertion into the phase's sorted points (a handful).
        const v = detrended[i]!;
        let j = c++;
        while (j > 0 && phase[j - 1]! > v) {
          phase[j] = phase[j - 1]!;
          j--;
        }
        phase[j] = v;
      }
      if (c < 2) continue;
      // The median of the others: the sorted points with rank r left out, whose middle rank(s)
      // h (and h − 1 when they are even in number) sit one place up from r on.
      const m = c - 1;
      const h = m >> 1;
      for (let r = 0; r < c; r++) {
        const upper = phase[h < r ? h : h + 1]!;
        const others = m % 2 === 1 ? upper : (upper + phase[h - 1 < r ? h - 1 : h]!) / 2;
        error += Math.abs(phase[r]! - others);
        spread += Math.abs(phase[r]! - centre);
      }
    }
    return spread > 0 ? 1 - error / spread : 0;
  };
}

/**
 * Long periods give broad autocorrelation peaks that noise shifts by a lag or two (168 comes
 * out as 169). A least-squares sinusoid resolves the frequency far better: among lags within
 * 2 % of the estimate, take the one whose sine and cosine explain the most variance. (The plain
 * periodogram is biased here by leakage from the negative frequency; the 2 × 2 normal
 * equations remove it.)
 */
function sharpenPeriod(x: Float64Array, period: number, maxLag: number): number {
  const reach = Math.round(period * 0.02);
  if (reach < 1) return period;
  let best = period;
  let bestExplained = Number.NEGATIVE_INFINITY;
  for (let lag = Math.max(MIN_DATA_PERIOD, period - reach); lag <= Math.min(maxLag, period + reach); lag++) {
    const w = (2 * Math.PI) / lag;
    let yc = 0;
    let ys = 0;
    let cc = 0;
    let ss = 0;
    let cs = 0;
    for (let i = 0; i < x.length; i++) {
      const c = Math.cos(w * i);
      const s = Math.sin(w * i);
      yc += x[i]! * c;
      ys += x[i]! * s;
      cc += c * c;
      ss += s * s;
      cs += c * s;
    }
    const det = cc * ss - cs * cs;
    if (!(det > 0)) continue;
    const explained = (ss * yc * yc - 2 * cs * yc * ys + cc * ys * ys) / det;
    if (explained > bestExplained) {
      best = lag;
      bestExplained = explained;
    }
  }
  return best;
}

/** `x` less its least-squares line, written into `out` (n long) and returned. */
function detrendLinearInto(x: Float64Array, out: Float64Array): Float64Array {
  const n = x.length;
  const meanT = (n - 1) / 2;
  let meanX = 0;
  for (let i = 0; i < n; i++) meanX += x[i]!;
  meanX /= n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (i - meanT) * (x[i]! - meanX);
    sxx += (i - meanT) * (i - meanT);
  }
  const slope = sxx > 0 ? sxy / sxx : 0;
  for (let i = 0; i < n; i++) out[i] = x[i]! - meanX - slope * (i - meanT);
  return out;
}

/**
 * Clips values beyond 5 robust standard deviations, so one spike cannot fake or hide a cycle,
 * into caller-owned buffers (each x.length long): returns `x` itself or `out`.
 */
function winsoriseInto(x: Float64Array, scratch: Float64Array, out: Float64Array): Float64Array {
  const n = x.length;
  const center = medianOf(x);
  for (let i = 0; i < n; i++) scratch[i] = Math.abs(x[i]! - center);
  const limit = 5 * MAD_TO_SIGMA * medianOf(scratch);
  if (!(limit > 0)) return x;
  for (let i = 0; i < n; i++) out[i] = Math.min(Math.max(x[i]!, center - limit), center + limit);
  return out;
}

/**
 * Cross-validated share of variance a period-`period` seasonal profile explains: detrend by a
 * full-period moving average (which averages one cycle out exactly), winsorise, then fit the
 * per-phase means on the even cycles and score them on the odd ones, and the other way round.
 * 1 = the cycle explains everything; <= 0 = it predicts no better than a flat line (noise).
 * Out of sample, so a long period cannot win merely by having more phases to fit.
 */
export function seasonalFitScore(x: ArrayLike<number>, period: number): number {
  return seasonalFitScorer(x)(period);
}

/**
 * A scorer's buffers when its caller owns them (each n long, `prefix` the series' `prefixSums`,
 * n + 1): a scorer overwrites all but `prefix` at every call, so two scorers may share them only
 * when one is done before the other starts.
 */
interface ScorerBuffers {
  readonly prefix: Float64Array;
  readonly detrended: Float64Array;
  readonly scratch: Float64Array;
  readonly clipped: Float64Array;
}

/**
 * `seasonalFitScore` of one series for many periods (period detection scores a dozen lags or
 * more): the prefix sums are summed once and the buffers reused, the arithmetic unchanged, so
 * every score is the one `seasonalFitScore` gives.
 */
export function seasonalFitScorer(x: ArrayLike<number>, buffers?: ScorerBuffers): (period: number) => number {
  const n = x.length;
  const prefix = buffers?.prefix ?? prefixSums(x);
  const detrended = buffers?.detrended ?? new Float64Array(n);
  const scratch = buffers?.scratch ?? new Float64Array(n);
  const clipped = buffers?.clipped ?? new Float64Array(n);
  let sums = new Float64Array(0);
  let counts = new Float64Array(0);
  return (period: number): number => {
    const p = Math.floor(period);
    if (p < 2 || n < 2 * p) return Number.NEGATIVE_INFINITY;
    // The full-period moving average centred on i (clamped to the series).
    movingAverageResidualsInto(x, prefix, p, detrended);
    const d = winsoriseInto(detrended, scratch, clipped);

    if (sums.length < 2 * p) {
      sums = new Float64Array(2 * p);
      counts = new Float64Array(2 * p);
    } else {
      sums.fill(0, 0, 2 * p);
      counts.fill(0, 0, 2 * p);
    }
    // Point i lies in cycle floor(i / p) at phase i mod p: cycle by cycle, in order.
    let total = 0;
    for (let from = 0, cycle = 0; from < n; from += p, cycle++) {
      const base = (cycle & 1) * p - from;
      const to = Math.min(from + p, n);
      for (let j = from; j < to; j++) {
        sums[base + j] = sums[base + j]! + d[j]!;
        counts[base + j] = counts[base + j]! + 1;
        total += d[j]!;
      }
    }
    const mean = total / n;
    let sse = 0;
    let sst = 0;
    for (let from = 0, cycle = 0; from < n; from += p, cycle++) {
      const other = (1 - (cycle & 1)) * p - from;
      const to = Math.min(from + p, n);
      for (let j = from; j < to; j++) {
        const count = counts[other + j]!;
        if (count === 0) continue;
        const error = d[j]! - sums[other + j]! / count;
        sse += error * error;
        sst += (d[j]! - mean) * (d[j]! - mean);
      }
    }
    return sst > 0 ? 1 - sse / sst : 0;
  };
}
