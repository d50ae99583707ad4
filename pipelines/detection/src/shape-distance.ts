// Shape distance: how far each subsequence of a query series is from its nearest neighbour among
// the subsequences of a reference (a machine's anomaly-free baseline), in z-normalised Euclidean
// distance. A shape the reference never showed (a discord) stands out even when every value is
// within the usual range, which residual-based rules cannot see. The reference's own
// nearest-neighbour distances (each subsequence against the rest, away from itself) say how far
// apart normal shapes lie, so distances are reported in units of that spread.
//
// The join walks the query row by row, updating every reference offset's dot product from the
// previous row's (O(n·N) for n query and N reference subsequences, no per-row O(m) work). Every
// REFRESH_ROWS rows the products are computed afresh, which bounds rounding drift; for long
// subsequences that fresh row is one cross-correlation by FFT (O(N log N) instead of O(N·m)).

import { MAX_SERIES_POINTS } from '@adp/domain';
import { fft } from './fft.js';

/** Shortest and longest subsequence a baseline's period may give. */
export const MIN_SHAPE_LENGTH = 16;
export const MAX_SHAPE_LENGTH = 400;
/** Subsequence length when the reference shows no cycle. */
export const FALLBACK_SHAPE_LENGTH = 100;
/** Rows between exact recomputations of the running dot products (bounds rounding drift). */
const REFRESH_ROWS = 512;

interface WindowStats {
  readonly mean: Float64Array;
  /** Standard deviation times sqrt(m); 0 for a constant window. */
  readonly scale: Float64Array;
}

/**
 * Each window's mean and scale, slid from the previous window's in O(1) (a running sum and a
 * running sum of squared deviations), so the whole series costs O(N), not O(N·m). A window is
 * computed afresh (two passes over its m values) every REFRESH_ROWS windows, which bounds rounding
 * drift, and wherever its squared deviations fell below STATS_DROP of the largest since then:
 * there a slid value would be mostly the rounding left by the larger windows (a flat stretch after
 * a spike), and the constant-window test below needs the exact one.
 */
function windowStats(x: Float64Array, m: number): WindowStats {
  const count = x.length - m + 1;
  const mean = new Float64Array(count);
  const scale = new Float64Array(count);
  let sum = 0;
  let squares = 0;
  let largest = 0;
  for (let start = 0; start < count; start++) {
    let fresh = start % REFRESH_ROWS === 0;
    if (!fresh) {
      const leaving = x[start - 1]!;
      const entering = x[start + m - 1]!;
      const before = sum / m;
      sum += entering - leaving;
      squares += (entering - leaving) * (entering - sum / m + leaving - before);
      fresh = !(squares >= STATS_DROP * largest);
    }
    if (fresh) {
      sum = 0;
      for (let t = 0; t < m; t++) sum += x[start + t]!;
      const mu = sum / m;
      squares = 0;
      for (let t = 0; t < m; t++) {
        const d = x[start + t]! - mu;
        squares += d * d;
      }
      largest = squares;
    } else if (squares > largest) largest = squares;
    const mu = sum / m;
    mean[start] = mu;
    // A window whose spread is negligible against its level is constant for this purpose.
    scale[start] = squares > 1e-12 * m * (mu * mu + 1) ? Math.sqrt(squares) : 0;
  }
  return { mean, scale };
}

/** See `windowStats`: a slid sum of squared deviations below this share of the largest since the last fresh one is recomputed. */
const STATS_DROP = 1e-3;

function dot(a: Float64Array, aStart: number, b: Float64Array, bStart: number, m: number): number {
  let sum = 0;
  for (let t = 0; t < m; t++) sum += a[aStart + t]! * b[bStart + t]!;
  return sum;
}

/** What a join needs of its reference, whatever the query: see `referenceSide`. */
interface ReferenceSide {
  readonly centre: number;
  /** The reference less its mean. */
  readonly r: Float64Array;
  readonly invR: Float64Array;
  readonly shift: Float64Array;
  readonly constantR: boolean;
  /** The spectrum of `r` for fresh rows by FFT, made on first use (see `freshProductsByFft`). */
  spectrum?: { readonly re: Float64Array; readonly im: Float64Array };
}

/** A reference's centred values and per-window terms for subsequence length `m`. */
function referenceSide(reference: ArrayLike<number>, m: number): ReferenceSide {
  let centre = 0;
  for (let i = 0; i < reference.length; i++) centre += reference[i]!;
  centre /= reference.length;
  const r = Float64Array.from(reference, (v) => v - centre);
  const rs = windowStats(r, m);
  const count = reference.length - m + 1;
  // The correlation of windows i and j is (QT[j] - m·μq·μr[j]) / (sq·sr[j]); per row it is maximised
  // over j as QT[j]·invR[j] − μq·shift[j], then divided by sq. A constant reference window scores
  // 0 there (invR and shift 0) and is accounted for by `constantR` instead.
  const invR = new Float64Array(count);
  const shift = new Float64Array(count);
  let constantR = false;
  for (let j = 0; j < count; j++) {
    const scale = rs.scale[j]!;
    if (scale === 0) constantR = true;
    else {
      invR[j] = 1 / scale;
      shift[j] = (m * rs.mean[j]!) / scale;
    }
  }
  return { centre, r, invR, shift, constantR };
}

/**
 * The reference side of a baseline's shape reference, kept per reference object: a stream joins
 * each batch's few new points against the same reference, and its side costs as much as the
 * join's first row. A ShapeReferenceData is read-only (a baseline is replaced, never edited).
 */
const shapeReferenceSides = new WeakMap<ShapeReferenceData, ReferenceSide>();

function shapeReferenceSide(reference: ShapeReferenceData): ReferenceSide {
  let side = shapeReferenceSides.get(reference);
  if (side === undefined) {
    side = referenceSide(reference.values, reference.length);
    shapeReferenceSides.set(reference, side);
  }
  return side;
}

/**
 * For each subsequence of `query` (start 0..n-m), the z-normalised Euclidean distance to its
 * nearest subsequence of `reference`; with `exclusion` > 0 and the query being the reference
 * itself, neighbours whose starts are closer than `exclusion` are skipped (the self-join). Both
 * are centred on the reference's mean first, so large offsets do not cost precision. Two constant
 * subsequences are 0 apart, a constant and a varying one sqrt(m).
 */
export function nearestNeighbourDistances(query: ArrayLike<number>, reference: ArrayLike<number>, m: number, exclusion = 0): Float64Array {
  return completed(distanceSteps(query, reference, m, exclusion));
}

/**
 * `nearestNeighbourDistances`, awaiting `pause()` after every block of rows (each block starts
 * from exact dot products, so blocks are independent): a long join leaves the event loop free to
 * serve other requests in between.
 */
export function nearestNeighbourDistancesInSlices(
  query: ArrayLike<number>,
  reference: ArrayLike<number>,
  m: number,
  exclusion: number,
  pause: () => Promise<void>,
): Promise<Float64Array> {
  return completedInSlices(distanceSteps(query, reference, m, exclusion), pause);
}

/** Runs a computation's steps (see `distanceSteps`) to its result at once. */
function completed<T>(steps: Generator<void, T>): T {
  let step = steps.next();
  while (step.done !== true) step = steps.next();
  return step.value;
}

/** Runs a computation's steps to its result, awaiting `pause()` between them. */
async function completedInSlices<T>(steps: Generator<void, T>, pause: () => Promise<void>): Promise<T> {
  let step = steps.next();
  while (step.done !== true) {
    await pause();
    step = steps.next();
  }
  return step.value;
}

/**
 * The join's distances (one per subsequence of `query`, 0s when either side holds no subsequence),
 * yielding between blocks of rows; `side` gives the reference's prepared side (a shape
 * reference's is kept).
 */
function* distanceSteps(
  query: ArrayLike<number>,
  reference: ArrayLike<number>,
  m: number,
  exclusion: number,
  side: () => ReferenceSide = () => referenceSide(reference, m),
): Generator<void, Float64Array> {
  const out = new Float64Array(Math.max(0, query.length - m + 1));
  if (m >= 2 && query.length >= m && reference.length >= m) yield* joinInBlocks(query, side(), m, exclusion, out);
  return out;
}

/** The join of `nearestNeighbourDistances` into `out`, yielding after every REFRESH_ROWS rows (both sides at least m long). */
function* joinInBlocks(query: ArrayLike<number>, side: ReferenceSide, m: number, exclusion: number, out: Float64Array): Generator<void> {
  const n = query.length - m + 1;
  const count = side.r.length - m + 1;
  const q = Float64Array.from(query, (v) => v - side.centre);
  const qs = windowStats(q, m);
  const products = new Float64Array(count);
  const byFft = fftPaysOff(side.r.length, m);
  for (let i = 0; i < n; i++) {
    if (i > 0 && i % REFRESH_ROWS === 0) yield;
    // Neighbours j with lo < j < hi are skipped (none without an exclusion).
    const lo = exclusion > 0 ? i - exclusion : count;
    const hi = exclusion > 0 ? i + exclusion : count;
    const fresh = i % REFRESH_ROWS === 0;
    let best: number;
    if (fresh && byFft) {
      freshProductsByFft(q, i, side, m, products);
      best = bestOfRow(products, qs.mean[i]!, side, lo, hi);
    } else {
      best = joinRow(q, i, qs.mean[i]!, side, m, products, fresh, lo, hi);
    }
    out[i] = distanceOf(best, qs.scale[i]!, m, side.constantR);
  }
}

/** Whether a fresh row costs less by FFT (two transforms of the reference's padded length) than by m products per offset. */
function fftPaysOff(referenceLength: number, m: number): boolean {
  const size = fftSize(referenceLength);
  return (referenceLength - m + 1) * m > 8 * size * Math.log2(size);
}

/** A power of two at least `length`: cyclic correlation at that size leaves every whole-window product unaliased. */
function fftSize(length: number): number {
  let size = 1;
  while (size < length) size <<= 1;
  return size;
}

/**
 * Row i's dot products (the query's subsequence at i with every reference subsequence) as one
 * cross-correlation: the reference's spectrum (kept on `side`) times that of the reversed query
 * subsequence, transformed back. Equal to the direct products within rounding (about 1e-12 of
 * the sum of |q·r| terms).
 */
function freshProductsByFft(q: Float64Array, i: number, side: ReferenceSide, m: number, products: Float64Array): void {
  const size = fftSize(side.r.length);
  if (side.spectrum === undefined) {
    const re = new Float64Array(size);
    re.set(side.r);
    const im = new Float64Array(size);
    fft(re, im, false);
    side.spectrum = { re, im };
  }
  const re = new Float64Array(size);
  const im = new Float64Array(size);
  for (let t = 0; t < m; t++) re[t] = q[i + m - 1 - t]!;
  fft(re, im, false);
  const spectrum = side.spectrum;
  for (let k = 0; k < size; k++) {
    const ar = spectrum.re[k]!;
    const ai = spectrum.im[k]!;
    const br = re[k]!;
    const bi = im[k]!;
    re[k] = ar * br - ai * bi;
    im[k] = ar * bi + ai * br;
  }
  fft(re, im, true);
  // The product at offset j is the convolution's term j + m - 1 (the inverse transform omits 1/size).
  for (let j = 0; j < products.length; j++) products[j] = re[j + m - 1]! / size;
}

/** The largest correlation term of a row whose products are given, over offsets outside (lo, hi) (see `joinRow`). */
function bestOfRow(products: Float64Array, meanQ: number, side: ReferenceSide, lo: number, hi: number): number {
  const { invR, shift } = side;
  let best = Number.NEGATIVE_INFINITY;
  for (let j = 0; j < products.length; j++) {
    if (j > lo && j < hi) continue;
    const value = products[j]! * invR[j]! - meanQ * shift[j]!;
    if (value > best) best = value;
  }
  return best;
}

/**
 * Row i of the join (the query's centred subsequence at i against every reference subsequence):
 * writes each offset's dot product into `products`, exactly (`fresh`) or slid from row i − 1's
 * products there, and returns the largest correlation term among offsets outside (lo, hi).
 */
function joinRow(
  q: Float64Array,
  i: number,
  meanQ: number,
  side: ReferenceSide,
  m: number,
  products: Float64Array,
  fresh: boolean,
  lo: number,
  hi: number,
): number {
  const { r, invR, shift } = side;
  const count = products.length;
  let best = Number.NEGATIVE_INFINITY;
  if (fresh) {
    for (let j = 0; j < count; j++) {
      const product = dot(q, i, r, j, m);
      products[j] = product;
      if (j > lo && j < hi) continue;
      const value = product * invR[j]! - meanQ * shift[j]!;
      if (value > best) best = value;
    }
    return best;
  }
  // Slide both windows one step, from the end so that j-1 still holds row i-1's product when j
  // is updated.
  const leaving = q[i - 1]!;
  const entering = q[i + m - 1]!;
  for (let j = count - 1; j >= 1; j--) {
    const product = products[j - 1]! - leaving * r[j - 1]! + entering * r[j + m - 1]!;
    products[j] = product;
    if (j > lo && j < hi) continue;
    const value = product * invR[j]! - meanQ * shift[j]!;
    if (value > best) best = value;
  }
  const first = dot(q, i, r, 0, m);
  products[0] = first;
  if (!(0 > lo && 0 < hi)) {
    const value = first * invR[0]! - meanQ * shift[0]!;
    if (value > best) best = value;
  }
  return best;
}

/** The z-normalised distance a row's best correlation term gives (see `joinRow`). */
function distanceOf(best: number, scaleQ: number, m: number, constantR: boolean): number {
  if (scaleQ === 0) return constantR ? 0 : Math.sqrt(m);
  let correlation = best === Number.NEGATIVE_INFINITY ? Number.NaN : Math.min(1, best / scaleQ);
  // A constant neighbour is sqrt(m) away: correlation 1/2.
  if (constantR && !(correlation >= 0.5)) correlation = 0.5;
  return Math.sqrt(Math.max(0, 2 * m * (1 - correlation)));
}

/**
 * The subsequence length for a reference: its dominant cycle (the lag of the highest local
 * maximum of its autocorrelation between MIN_SHAPE_LENGTH and MAX_SHAPE_LENGTH, at most a third of
 * the reference), else FALLBACK_SHAPE_LENGTH, never more than a third of the reference.
 */
export function shapeLength(reference: ArrayLike<number>): number {
  const n = reference.length;
  const cap = Math.max(2, Math.floor(n / 3));
  const hi = Math.min(MAX_SHAPE_LENGTH, cap);
  if (hi <= MIN_SHAPE_LENGTH) return Math.min(FALLBACK_SHAPE_LENGTH, cap);
  let mean = 0;
  for (let i = 0; i < n; i++) mean += reference[i]!;
  mean /= n;
  const acf = new Float64Array(hi + 2);
  for (let lag = 0; lag < acf.length; lag++) {
    let sum = 0;
    for (let i = 0; i + lag < n; i++) sum += (reference[i]! - mean) * (reference[i + lag]! - mean);
    acf[lag] = sum;
  }
  if (!(acf[0]! > 0)) return Math.min(FALLBACK_SHAPE_LENGTH, cap);
  let best = 0;
  let bestValue = 0;
  for (let lag = MIN_SHAPE_LENGTH; lag <= hi; lag++) {
    const value = acf[lag]! / acf[0]!;
    if (acf[lag]! > acf[lag - 1]! && acf[lag]! >= acf[lag + 1]! && value > bestValue) {
      best = lag;
      bestValue = value;
    }
  }
  return best > 0 ? best : Math.min(FALLBACK_SHAPE_LENGTH, cap);
}

/** Most reference values a baseline keeps (the API's limit on one series). */
export const MAX_SHAPE_REFERENCE_POINTS = MAX_SERIES_POINTS;

/** What a baseline keeps to judge new data's shapes: see `shapeReferenceOf`. */
export interface ShapeReferenceData {
  readonly length: number;
  readonly values: readonly number[];
  /** Median nearest-neighbour distance among the reference's own subsequences. */
  readonly center: number;
  /** Their robust spread (1.4826 × median absolute deviation), never below a numerical floor. */
  readonly spread: number;
}

/** Shares of sqrt(2m) (the distance of uncorrelated subsequences) below which a spread is rounding, not shape. */
const SPREAD_FLOOR_SHARE = 1e-3;
const MAD_TO_SD = 1.4826;

function median(values: Float64Array): number {
  const sorted = Float64Array.from(values).sort();
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * The shape reference of healthy `values` (their last MAX_SHAPE_REFERENCE_POINTS): the
 * subsequence length from their dominant cycle, and how far each of their subsequences lies from
 * its nearest other one (a self-join that skips neighbours within a quarter of a subsequence, which
 * overlap it), summarised by median and robust spread. Null when the values are too short for
 * three subsequences of the shortest length.
 */
export function shapeReferenceOf(values: readonly number[]): ShapeReferenceData | null {
  return completed(referenceSteps(values));
}

/** `shapeReferenceOf`, its join in slices (`nearestNeighbourDistancesInSlices`). */
export function shapeReferenceInSlices(values: readonly number[], pause: () => Promise<void>): Promise<ShapeReferenceData | null> {
  return completedInSlices(referenceSteps(values), pause);
}

function* referenceSteps(values: readonly number[]): Generator<void, ShapeReferenceData | null> {
  const kept = values.slice(Math.max(0, values.length - MAX_SHAPE_REFERENCE_POINTS));
  if (kept.length < 3 * MIN_SHAPE_LENGTH) return null;
  const length = shapeLength(kept);
  return summarised(kept, length, yield* distanceSteps(kept, kept, length, Math.ceil(length / 4)));
}

function summarised(kept: readonly number[], length: number, distances: Float64Array): ShapeReferenceData | null {
  const own = distances.filter(Number.isFinite);
  if (own.length === 0) return null;
  const center = median(own);
  const deviations = own.map((distance) => Math.abs(distance - center));
  const spread = Math.max(MAD_TO_SD * median(deviations), SPREAD_FLOOR_SHARE * Math.sqrt(2 * length));
  return { length, values: kept, center, spread };
}

/** A request's shape scores: see `shapeScores`. */
export interface ShapeScores {
  /** The subsequence centred on the point (the first or last whole one near the edges). */
  readonly around: Float64Array;
  /** The most ordinary subsequence the point belongs to: high only on the unusual points themselves. */
  readonly within: Float64Array;
}

/**
 * Each point's shape scores against a reference: a subsequence's nearest-neighbour distance less
 * the reference's median, in units of its spread (0 a usual shape, 3 a shape three spreads
 * further from anything healthy than usual). `around` scores the subsequence centred on the point,
 * which ranks where a shape changes best but rises up to half a subsequence before the change;
 * `within` scores the point by the lowest of the subsequences that contain it, so a point is
 * unusual only when every shape it is part of is (a spike's neighbours are not, the spike is).
 * The request's first length − 1 points have `within` 0: every subsequence the request holds
 * around them also holds later points, so what makes one unusual may lie after the point (near
 * the end, the subsequence that ends at a point is always there). All zeros when the request is
 * shorter than one subsequence (no shape to judge).
 */
export function shapeScores(values: ArrayLike<number>, reference: ShapeReferenceData): ShapeScores {
  return completed(scoresSteps(values, reference));
}

/** `shapeScores`, its join in slices (as `nearestNeighbourDistancesInSlices`). */
export function shapeScoresInSlices(values: ArrayLike<number>, reference: ShapeReferenceData, pause: () => Promise<void>): Promise<ShapeScores> {
  return completedInSlices(scoresSteps(values, reference), pause);
}

function* scoresSteps(values: ArrayLike<number>, reference: ShapeReferenceData): Generator<void, ShapeScores> {
  const distances = yield* referenceDistanceSteps(values, reference);
  return scoresOf(values.length, reference, distances);
}

/** The join against a shape reference, with its kept prepared side. */
function referenceDistanceSteps(values: ArrayLike<number>, reference: ShapeReferenceData): Generator<void, Float64Array> {
  return distanceSteps(values, reference.values, reference.length, 0, () => shapeReferenceSide(reference));
}

function scoresOf(n: number, reference: ShapeReferenceData, distances: Float64Array): ShapeScores {
  const m = reference.length;
  const around = new Float64Array(n);
  const within = new Float64Array(n);
  if (n < m) return { around, within };
  const count = distances.length;
  const score = (start: number): number => (distances[start]! - reference.center) / reference.spread;
  const half = Math.floor(m / 2);
  for (let i = 0; i < n; i++) around[i] = score(Math.min(count - 1, Math.max(0, i - half)));
  // Sliding minimum over the starts max(0, i-m+1)..min(i, count-1), with a deque of starts whose
  // distances increase from front to back.
  const deque = new Int32Array(count);
  let head = 0;
  let tail = 0;
  let next = 0;
  for (let i = 0; i < n; i++) {
    for (; next <= Math.min(i, count - 1); next++) {
      while (tail > head && distances[deque[tail - 1]!]! >= distances[next]!) tail--;
      deque[tail++] = next;
    }
    while (deque[head]! < i - m + 1) head++;
    within[i] = i < m - 1 ? 0 : score(deque[head]!);
  }
  return { around, within };
}

/**
 * Shape scores as a stream sees them: for each point from `from` on, the subsequence that ends at
 * it (a stream has no points after the newest), scored as `shapeScores` does. A point with fewer
 * than one subsequence of points up to it scores 0. Only the points `from - length + 1` on are read,
 * so a caller may pass its whole kept window.
 */
export function trailingShapeScores(values: ArrayLike<number>, from: number, reference: ShapeReferenceData): Float64Array {
  return trailingShapeScorer(reference).scores(values, from);
}

/**
 * `trailingShapeScores` for one stream against one reference, call after call: it keeps the dot
 * products of the last subsequence it scored with every reference subsequence, so when a call's
 * values continue that subsequence (the m points before its first new point are the ones it
 * scored last), each new point costs one slid row of the join instead of the first row's m dot
 * products each time. Any other values (a window reloaded, a gap, another series) start afresh, so
 * the scores never depend on what came before beyond rounding: a fresh row every REFRESH_ROWS rows
 * bounds the drift, as in the join.
 */
export interface TrailingShapeScorer {
  readonly reference: ShapeReferenceData;
  /** `trailingShapeScores(values, from, reference)`, carrying on from the previous call where it can. */
  scores(values: ArrayLike<number>, from: number): Float64Array;
}

export function trailingShapeScorer(reference: ShapeReferenceData): TrailingShapeScorer {
  const m = reference.length;
  /** The raw values of the subsequence `products` belongs to (null: nothing kept). */
  let last: Float64Array | null = null;
  let products: Float64Array | null = null;
  /** Rows slid since the last fresh one. */
  let slid = 0;
  const continues = (values: ArrayLike<number>, from: number): boolean => {
    if (last === null || from < 0) return false;
    for (let t = 0; t < m; t++) if (values[from + t] !== last[t]) return false;
    return true;
  };
  return {
    reference,
    scores(values, from) {
      const n = values.length;
      const start = Math.max(0, from);
      const out = new Float64Array(Math.max(0, n - start));
      // The first point with a whole subsequence up to it.
      const first = Math.max(start, m - 1);
      if (first >= n || m < 2 || reference.values.length < m) return out;
      const side = shapeReferenceSide(reference);
      const carry = products !== null && continues(values, first - m);
      // With a carry the query starts one point earlier: its row 0 is the kept one.
      const queryFrom = carry ? first - m : first - m + 1;
      const q = new Float64Array(n - queryFrom);
      for (let k = 0; k < q.length; k++) q[k] = values[queryFrom + k]! - side.centre;
      const qs = windowStats(q, m);
      const rows = products ?? new Float64Array(side.r.length - m + 1);
      const count = rows.length;
      for (let i = carry ? 1 : 0; i < qs.mean.length; i++) {
        const fresh = i === 0 || slid + 1 >= REFRESH_ROWS;
        slid = fresh ? 0 : slid + 1;
        const best = joinRow(q, i, qs.mean[i]!, side, m, rows, fresh, count, count);
        out[queryFrom + i + m - 1 - start] = (distanceOf(best, qs.scale[i]!, m, side.constantR) - reference.center) / reference.spread;
      }
      products = rows;
      last = Float64Array.from({ length: m }, (_, t) => values[n - m + t]!);
      return out;
    },
  };
}
