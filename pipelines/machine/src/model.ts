// The joint healthy state of a machine's channels, and how far each new reading departs from it.
//
// Fitted on the machine's baseline (its healthy rows), the model is a Gaussian of the channels'
// standardised readings: their levels, spreads and correlations (a covariance shrunk towards the
// identity, so a channel that never moved in the baseline cannot make the inverse explode). A
// reading's departure is its squared Mahalanobis distance from the healthy state, which is
// Hotelling's T-squared on every principal direction at once (the squared prediction error of a
// truncated PCA is the part on the small directions, which this keeps instead of cutting off).
//
// Healthy machines wander: temperatures follow the room, slowly. A channel whose variogram keeps
// growing over the baseline (a walk or a trend, not noise or a cycle) gets its own independent
// drift, whose variance grows with the points since the baseline ended, as the variogram grew; a
// steady channel keeps its healthy spread, and its relations to the others, however far from the
// baseline a reading is.
//
// A fault is a departure that lasts: the score of a point is the trimmed mean distance over the
// trailing `smoothingPoints` (a lone spike is left to the channel judges), and the threshold comes
// from the baseline itself, out of sample: each block of the baseline is scored by the model fitted
// on the others, and the threshold at a sensitivity is a quantile of a distribution fitted
// robustly to those held-out scores (at the default 95, the 99th percentile).
// At the API's default sensitivity the threshold leaves `defaultTail` of healthy scores above it.
import { DEFAULT_SENSITIVITY } from '@adp/domain';
import { symmetricEigen } from './linalg.js';

/** The model's constants, each with what it was chosen on (docs/machine-model.md). */
export const MACHINE_MODEL_TUNING = {
  /** Correlation shrinkage towards the identity: small, so a broken relation between channels that move together shows. */
  shrinkage: 0.01,
  /** Drift lag as a share of the baseline's rows: the variogram's growth between half of it and it is drift. SKAB dev. */
  driftLagShare: 0.2,
  /**
   * The least share of a channel's baseline variance in the means of the baseline's fifths for it to
   * count as drifting. SKAB dev's thermal channels hold 0.4-0.9, its other channels under 0.17;
   * white noise and cycles shorter than a fifth about 0.01.
   */
  driftMinShare: 0.25,
  /** Trailing points whose distances are averaged into a point's score. SKAB dev (10-20 a plateau). */
  smoothingPoints: 20,
  /** Share of a window's largest distances left out of its mean (one spike in 20), not tuned. */
  trimmedShare: 0.1,
  /** Blocks the baseline is cut into to calibrate the threshold out of sample (each scored by a fit on the others). */
  calibrationBlocks: 5,
  /** A spread floor, as a share of a channel's typical magnitude, for channels constant in the baseline. */
  scaleFloorShare: 1e-6,
  /**
   * The healthy tail left above the threshold at the default sensitivity 95: 1 %. Chosen on SKAB
   * dev and checked on UCR dev (one channel): fewer false alarms and false episodes on both than 5 %,
   * no fault lost (docs/machine-model.md).
   */
  defaultTail: 0.01,
} as const;

/** Lags averaged on each side of the drift estimate. */
const DRIFT_LAGS = 16;

/** Standard errors the healthy level's estimate is raised by before a threshold is set on it. */
const LEVEL_CONFIDENCE_Z = 2;

/** Fewest healthy rows a machine model is fitted on. */
export const MIN_MACHINE_MODEL_ROWS = 50;

/** A fitted machine model: plain data, stored with the machine's baseline as JSON. */
export interface MachineModel {
  readonly kind: 'gaussian-drift';
  readonly channels: readonly string[];
  /** Per channel: the healthy mean. */
  readonly center: readonly number[];
  /** Per channel: the healthy spread (standard deviation, floored). */
  readonly scale: readonly number[];
  /**
   * The drifting channels' drift covariance at a horizon of one point, in units of their spreads
   * (rows per channel; zero rows and columns for a steady channel).
   */
  readonly drift: readonly (readonly number[])[];
  /** Per channel: how its drift grows with the horizon h, as h to this power (1 a walk, 2 a trend). */
  readonly driftPower: readonly number[];
  /** The shrunk correlation of the standardised healthy readings, rows per channel. */
  readonly correlation: readonly (readonly number[])[];
  /** Trailing points averaged into a score. */
  readonly smoothingPoints: number;
  /** Held-out healthy scores, ascending: the thresholds' distribution. */
  readonly calibration: readonly number[];
  /** The relative standard error of the held-out points' mean distance: how well the healthy level is known. */
  readonly calibrationError: number;
  /** Healthy rows the model was fitted on. */
  readonly rows: number;
}

/** A machine's readings, channel-major: `values[c][t]` is channel c at point t. */
export interface ChannelMatrix {
  readonly channels: readonly string[];
  readonly values: readonly ArrayLike<number>[];
}

interface Fit {
  readonly center: readonly number[];
  readonly scale: readonly number[];
  readonly drift: readonly (readonly number[])[];
  readonly driftPower: readonly number[];
  /** The shrunk correlation of the standardised readings. */
  readonly correlation: readonly (readonly number[])[];
}

function rowsOf(matrix: ChannelMatrix): number {
  return matrix.values[0]?.length ?? 0;
}

function fitRange(values: readonly ArrayLike<number>[], from: number, to: number): Fit {
  const d = values.length;
  const n = to - from;
  const { shrinkage, driftLagShare, scaleFloorShare } = MACHINE_MODEL_TUNING;
  const mean = new Array<number>(d).fill(0);
  const scale = new Array<number>(d).fill(0);
  for (let c = 0; c < d; c++) {
    const v = values[c]!;
    let sum = 0;
    let magnitude = 0;
    for (let t = from; t < to; t++) {
      sum += v[t]!;
      magnitude += Math.abs(v[t]!);
    }
    mean[c] = sum / n;
    let squares = 0;
    for (let t = from; t < to; t++) squares += (v[t]! - mean[c]!) ** 2;
    const floor = Math.max(scaleFloorShare * (magnitude / n), 1e-12);
    scale[c] = Math.max(Math.sqrt(squares / Math.max(1, n - 1)), floor);
  }
  // Drift: the variogram's growth per point of lag, from the lags in the lower half of the drift lag
  // to those in the upper half, relative to the spread. Stationary noise has reached its plateau
  // by then (a cycle's variogram swings around it, and averaging over many lags evens the swings
  // out); a random walk's keeps growing.
  const lag = Math.max(4, Math.round(driftLagShare * n));
  const lagsOf = (low: number, high: number): number[] => {
    const count = Math.min(DRIFT_LAGS, high - low);
    return Array.from({ length: count }, (_, k) => Math.round(low + ((k + 1) * (high - low)) / count));
  };
  const first = lagsOf(Math.round(lag / 8), Math.round(lag / 4));
  const lower = lagsOf(Math.round(lag / 4), Math.round(lag / 2));
  const upper = lagsOf(Math.round(lag / 2), lag);
  const meanOf = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
  // Each standardised channel's variogram, averaged over a range of lags: the variance of its
  // change over h points, which a walk grows by its step's variance a point.
  const standardised = values.map((v, c) => Float64Array.from({ length: n }, (_, t) => (v[from + t]! - mean[c]!) / scale[c]!));
  const variograms = (lags: readonly number[]): number[] =>
    standardised.map((z) => {
      let total = 0;
      for (const h of lags) {
        let sum = 0;
        for (let t = 0; t + h < n; t++) sum += (z[t + h]! - z[t]!) ** 2;
        total += sum / Math.max(1, n - h);
      }
      return total / lags.length;
    });
  const [g1, g2, g3] = [first, lower, upper].map(variograms) as [number[], number[], number[]];
  // Which channels wander: those whose means over the baseline's fifths differ by a large share of
  // their variance. Noise and cycles shorter than a fifth average out within each fifth; a walk or
  // a trend does not. (Counted drift on a steady channel would loosen its relations to the others
  // point by point.)
  const blocks = Math.max(1, Math.round(1 / driftLagShare));
  const blockRows = Math.floor(n / blocks);
  const drifting = standardised.map((z, c) => {
    let between = 0;
    for (let k = 0; k < blocks; k++) {
      let sum = 0;
      for (let t = k * blockRows; t < (k + 1) * blockRows; t++) sum += z[t]!;
      between += (sum / blockRows) ** 2 / blocks;
    }
    return between > MACHINE_MODEL_TUNING.driftMinShare && g3[c]! > g2[c]!;
  });
  // How each drifting channel's growth scales as the lags double: a random walk's doubles (power
  // 1), a smooth trend's quadruples (power 2); its drift at a horizon h grows as h to that power.
  const driftPower = drifting.map((walks, c) => {
    if (!walks) return 1;
    const near = g2[c]! - g1[c]!;
    const far = g3[c]! - g2[c]!;
    return Math.min(2, Math.max(1, near > 0 ? Math.log2(far / near) : 2));
  });
  // Each drifting channel drifts on its own: a diagonal covariance, the growth of its variogram
  // per unit of horizon to its power. (The cross-variogram's growth kept as well, so that channels
  // drifting together keep their relation, raised SKAB dev's false alarms from 20 % to 24 %: its
  // two thermal channels part after a fault more than their baselines show.)
  const drift = Array.from({ length: d }, (_, i) =>
    Array.from({ length: d }, (_, j) => {
      if (i !== j || !drifting[i]) return 0;
      return (g3[i]! - g2[i]!) / (meanOf(upper) ** driftPower[i]! - meanOf(lower) ** driftPower[i]!);
    }),
  );
  // Shrunk correlation of the standardised readings (whitened per horizon in whiteningAt).
  const correlation: number[][] = Array.from({ length: d }, () => new Array<number>(d).fill(0));
  for (let i = 0; i < d; i++) {
    for (let j = i; j < d; j++) {
      const zi = standardised[i]!;
      const zj = standardised[j]!;
      let sum = 0;
      for (let t = 0; t < n; t++) sum += zi[t]! * zj[t]!;
      const r = (1 - shrinkage) * (sum / Math.max(1, n - 1)) + (i === j ? shrinkage : 0);
      correlation[i]![j] = r;
      correlation[j]![i] = r;
    }
  }
  return { center: mean, scale, drift, driftPower, correlation };
}

/** Horizons below this are each their own; beyond it they share a whitening per 1/16 of growth. */
const EXACT_HORIZONS = 16;

/** The horizon whose whitening a point at `horizon` uses: itself while small, else the floor of a geometric grid. */
function horizonStep(horizon: number): number {
  if (horizon <= EXACT_HORIZONS) return Math.max(0, horizon);
  const step = Math.floor(Math.log(horizon / EXACT_HORIZONS) / Math.log(1 + 1 / EXACT_HORIZONS));
  return EXACT_HORIZONS * (1 + 1 / EXACT_HORIZONS) ** step;
}

/**
 * The symmetric inverse square root of the readings' covariance `horizon` points after the
 * baseline: the healthy correlation plus each channel's independent drift so far (in units of its
 * spread squared). Its rows whiten a standardised reading; the squares of the whitened
 * coordinates add up to the squared Mahalanobis distance.
 */
function whiteningAt(fit: Fit, horizon: number): number[][] {
  const d = fit.correlation.length;
  const covariance = fit.correlation.map((row, i) => row.map((r, j) => r + fit.drift[i]![j]! * horizon ** ((fit.driftPower[i]! + fit.driftPower[j]!) / 2)));
  const eigen = symmetricEigen(covariance);
  const whitening: number[][] = Array.from({ length: d }, () => new Array<number>(d).fill(0));
  const floor = MACHINE_MODEL_TUNING.shrinkage;
  for (let k = 0; k < d; k++) {
    const weight = 1 / Math.sqrt(Math.max(eigen.values[k]!, floor));
    const vector = eigen.vectors[k]!;
    for (let i = 0; i < d; i++) for (let j = 0; j < d; j++) whitening[i]![j]! += weight * vector[i]! * vector[j]!;
  }
  return whitening;
}

const whitenings = new WeakMap<object, Map<number, number[][]>>();

/** `whiteningAt` on the horizon grid, remembered per fit. */
function cachedWhitening(fit: Fit, horizon: number): number[][] {
  const key = horizonStep(horizon);
  let byHorizon = whitenings.get(fit.correlation);
  if (!byHorizon) {
    byHorizon = new Map();
    whitenings.set(fit.correlation, byHorizon);
  }
  let whitening = byHorizon.get(key);
  if (!whitening) {
    whitening = whiteningAt(fit, key);
    if (byHorizon.size > 4096) byHorizon.clear();
    byHorizon.set(key, whitening);
  }
  return whitening;
}

/**
 * Per point: the squared distance of the readings from the healthy state, and each channel's part
 * of it (the complete decomposition: the whitened reading's squared coordinates, which add up to
 * the distance and are never negative). `horizon0` is the drift horizon of the first point (points
 * since the fit's data ended, 1 for the point right after it).
 */
function distances(fit: Fit, values: readonly ArrayLike<number>[], from: number, to: number, horizon0: number): { distance: Float64Array; parts: Float64Array[] } {
  const d = values.length;
  const n = to - from;
  const distance = new Float64Array(n);
  const parts = Array.from({ length: d }, () => new Float64Array(n));
  const z = new Float64Array(d);
  const drifts = fit.drift.some((row) => row.some((x) => x !== 0));
  let whitening = cachedWhitening(fit, drifts ? horizon0 : 0);
  for (let t = 0; t < n; t++) {
    if (drifts) whitening = cachedWhitening(fit, horizon0 + t);
    for (let c = 0; c < d; c++) z[c] = (values[c]![from + t]! - fit.center[c]!) / fit.scale[c]!;
    let total = 0;
    for (let i = 0; i < d; i++) {
      const row = whitening[i]!;
      let w = 0;
      for (let j = 0; j < d; j++) w += row[j]! * z[j]!;
      const part = w * w;
      parts[i]![t] = part;
      total += part;
    }
    distance[t] = total;
  }
  return { distance, parts };
}

/**
 * Trailing trimmed means over `points` (fewer at the start), continuing the values of `prefix`: in
 * each window the `trimmedPoints` largest distances are left out, so one spike cannot lift a
 * window on its own (spikes are the channel judges' to flag; the machine's score is for departures
 * that last). `parts` are averaged over the same points, so they still add up to the score.
 */
/** Mean of `values` at the first `count` of `sorted` (null: at first, first + 1, ...), summed in that order. */
function keptMean(values: Float64Array, sorted: readonly number[] | null, first: number, count: number): number {
  let sum = 0;
  if (sorted === null) for (let k = 0; k < count; k++) sum += values[first + k]!;
  else for (let k = 0; k < count; k++) sum += values[sorted[k]!]!;
  return sum / count;
}

function sameValues(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
  return true;
}

export function trimmedTrailingMeans(
  distance: Float64Array,
  parts: readonly Float64Array[],
  points: number,
  prefix?: { readonly distance: ArrayLike<number>; readonly parts: readonly ArrayLike<number>[] },
): { score: Float64Array; contributions: Float64Array[] } {
  const carried = prefix ? Math.min(points - 1, prefix.distance.length) : 0;
  const n = distance.length;
  const all = new Float64Array(carried + n);
  const allParts = parts.map((part, c) => {
    const joined = new Float64Array(carried + n);
    const before = prefix?.parts[c];
    for (let i = 0; i < carried; i++) joined[i] = before?.[before.length - carried + i] ?? 0;
    joined.set(part, carried);
    return joined;
  });
  for (let i = 0; i < carried; i++) all[i] = prefix!.distance[prefix!.distance.length - carried + i]!;
  all.set(distance, carried);
  const score = new Float64Array(n);
  const contributions = parts.map(() => new Float64Array(n));
  const single = parts.length === 1 && sameValues(parts[0]!, distance) && sameValues(allParts[0]!, all);
  // The window's indices kept sorted by distance (ties: the earlier first) as points come and go,
  // so each point costs a binary search and a shift, not a sort of its window.
  const sorted: number[] = [];
  const before = (x: number, y: number): boolean => all[x]! < all[y]! || (all[x] === all[y] && x < y);
  const place = (index: number): number => {
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (before(sorted[mid]!, index)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  for (let i = 0; i < all.length; i++) {
    if (i >= points) {
      const leaving = i - points;
      const at = place(leaving);
      sorted.splice(sorted[at] === leaving ? at : sorted.indexOf(leaving), 1);
    }
    sorted.splice(place(i), 0, i);
    if (i < carried) continue;
    const length = sorted.length;
    const trim = Math.floor(length * MACHINE_MODEL_TUNING.trimmedShare);
    const keptCount = length - trim;
    // Summed in the order the points are kept: arrival order when none is trimmed, else by distance.
    const first = i - length + 1;
    score[i - carried] = keptMean(all, trim === 0 ? null : sorted, first, keptCount);
    // One channel's part is its whole distance: its contribution is the score itself.
    if (single) continue;
    for (let c = 0; c < allParts.length; c++) contributions[c]![i - carried] = keptMean(allParts[c]!, trim === 0 ? null : sorted, first, keptCount);
  }
  if (single) contributions[0]!.set(score);
  return { score, contributions };
}

/** How a model is fitted beyond its healthy rows. */
export interface FitOptions {
  /** Trailing points averaged into a score (default MACHINE_MODEL_TUNING.smoothingPoints). */
  readonly smoothingPoints?: number;
}

/** Fits the model on a machine's healthy rows (every channel the same length). */
export function fitMachineModel(healthy: ChannelMatrix, options: FitOptions = {}): MachineModel {
  const n = rowsOf(healthy);
  if (healthy.values.length === 0 || healthy.values.length !== healthy.channels.length) {
    throw new RangeError('a machine model needs one value series per channel');
  }
  if (healthy.values.some((v) => v.length !== n)) throw new RangeError('every channel needs the same number of healthy rows');
  if (n < MIN_MACHINE_MODEL_ROWS) throw new RangeError(`a machine model needs at least ${MIN_MACHINE_MODEL_ROWS} healthy rows`);
  const { calibrationBlocks } = MACHINE_MODEL_TUNING;
  const smoothingPoints = Math.max(1, Math.round(options.smoothingPoints ?? MACHINE_MODEL_TUNING.smoothingPoints));
  const fit = fitRange(healthy.values, 0, n);
  // Out of sample: each block in turn is scored by the model fitted on the other blocks.
  const calibration: number[] = [];
  const raw: number[] = [];
  const block = Math.floor(n / calibrationBlocks);
  for (let k = 0; k < calibrationBlocks; k++) {
    const start = k * block;
    const stop = k === calibrationBlocks - 1 ? n : start + block;
    const others = healthy.values.map((v) => [...Array.prototype.slice.call(v, 0, start), ...Array.prototype.slice.call(v, stop)] as number[]);
    const partial = fitRange(others, 0, others[0]!.length);
    const { distance, parts } = distances(partial, healthy.values, start, stop, 1);
    const smoothed = trimmedTrailingMeans(distance, parts, smoothingPoints).score;
    raw.push(...distance);
    // A block's first means average fewer points, noisier than any judged later: left out.
    for (let t = Math.min(smoothingPoints - 1, smoothed.length - 1); t < smoothed.length; t++) calibration.push(smoothed[t]!);
  }
  calibration.sort((a, b) => a - b);
  const rawMean = raw.reduce((a, b) => a + b, 0) / Math.max(1, raw.length);
  const rawSd = Math.sqrt(raw.reduce((a, b) => a + (b - rawMean) ** 2, 0) / Math.max(1, raw.length - 1));
  return {
    kind: 'gaussian-drift',
    channels: [...healthy.channels],
    center: fit.center,
    scale: fit.scale,
    drift: fit.drift,
    driftPower: fit.driftPower,
    correlation: fit.correlation,
    smoothingPoints,
    calibration,
    calibrationError: rawMean > 0 && raw.length > 1 ? rawSd / (rawMean * Math.sqrt(raw.length)) : 0,
    rows: n,
  };
}

/** The standard normal quantile (Acklam's rational approximation, relative error under 1.2e-9). */
export function normalQuantile(p: number): number {
  if (p <= 0) return Number.NEGATIVE_INFINITY;
  if (p >= 1) return Number.POSITIVE_INFINITY;
  const a = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
  const b = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
  const c = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
  const low = 0.02425;
  if (p < low) {
    const q = Math.sqrt(-2 * Math.log(p));
    return (((((c[0]! * q + c[1]!) * q + c[2]!) * q + c[3]!) * q + c[4]!) * q + c[5]!) / ((((d[0]! * q + d[1]!) * q + d[2]!) * q + d[3]!) * q + 1);
  }
  if (p > 1 - low) return -normalQuantile(1 - p);
  const q = p - 0.5;
  const r = q * q;
  return ((((((a[0]! * r + a[1]!) * r + a[2]!) * r + a[3]!) * r + a[4]!) * r + a[5]!) * q) / (((((b[0]! * r + b[1]!) * r + b[2]!) * r + b[3]!) * r + b[4]!) * r + 1);
}

/**
 * The threshold at a sensitivity (0..99), on the held-out healthy scores' distribution: as the
 * vendor's margins do, it stands further from the healthy centre the lower the sensitivity,
 * in proportion to 105 - s spreads, so that at the default 95 it is the quantile 1 - defaultTail
 * (at 99 about the 92nd percentile, at 90 the 99.98th). A fault lasts, so a high quantile loses
 * little of it, while every healthy point above the threshold is a false alarm.
 * A score is a mean of squared distances, a scaled chi-square in shape, whose cube root is nearly
 * normal (Wilson and Hilferty); the normal's centre and spread are taken robustly (median, median
 * absolute deviation) from the held-out scores' cube roots, so one block of the baseline with a
 * transient in it does not set the threshold, and the quantile comes from the fitted normal rather
 * than from the few held-out scores at the top.
 */
export function machineThreshold(model: MachineModel, sensitivity: number): number {
  const roots = model.calibration.map(Math.cbrt).sort((x, y) => x - y);
  if (roots.length < 2) return Number.POSITIVE_INFINITY;
  const centre = medianOfSorted(roots);
  const spread = MAD_TO_SD * medianOfSorted(roots.map((r) => Math.abs(r - centre)).sort((x, y) => x - y));
  const atDefault = normalQuantile(1 - MACHINE_MODEL_TUNING.defaultTail);
  const s = Math.min(99, Math.max(0, sensitivity));
  const threshold = Math.max(0, centre + (atDefault * (105 - s)) / (105 - DEFAULT_SENSITIVITY) * spread) ** 3;
  // The held-out points are few: the healthy level is known only to calibrationError, and a mean
  // of many distances is narrow enough for that to matter. The threshold stands above the level's
  // upper confidence bound (two standard errors).
  return threshold * (1 + LEVEL_CONFIDENCE_Z * model.calibrationError);
}

const MAD_TO_SD = 1.4826;

function medianOfSorted(sorted: readonly number[]): number {
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export interface MachineScores {
  /** Per point: the trailing trimmed mean squared distance from the healthy state. */
  readonly score: Float64Array;
  /** Per channel (the model's order): its part of each point's score (they add up to it). */
  readonly contributions: Float64Array[];
}

/** What came before a judged stretch (a stream's carry); absent: the stretch follows the baseline. */
export interface ScoreContext {
  /** Drift horizon of the first point: points since the baseline ended (1: right after it). */
  readonly horizon?: number;
  /** The unsmoothed distances and parts of the points just before, oldest first. */
  readonly previous?: { readonly distance: ArrayLike<number>; readonly parts: readonly ArrayLike<number>[] };
}

export interface ScoredStretch extends MachineScores {
  /** Per point: its own squared distance, unsmoothed. */
  readonly distance: Float64Array;
  /** Per channel: its part of each point's own distance. */
  readonly parts: Float64Array[];
}

/** Scores readings (channel-major, in the model's channel order) against the model. */
export function scoreMachine(model: MachineModel, readings: readonly ArrayLike<number>[], context: ScoreContext = {}): ScoredStretch {
  if (readings.length !== model.channels.length) throw new RangeError(`expected ${model.channels.length} channels, got ${readings.length}`);
  const n = readings[0]?.length ?? 0;
  const fit: Fit = model;
  const { distance, parts } = distances(fit, readings, 0, n, context.horizon ?? 1);
  const { score, contributions } = trimmedTrailingMeans(distance, parts, model.smoothingPoints, context.previous);
  return { score, contributions, distance, parts };
}
