// Pure windowing and robust normalisation: the encoder's input for each point. Mirrored in
// pipelines/model-training/src/data.py (the golden fixture checks both agree).
import type { Normalisation } from './contract.js';
import { ModelError } from './errors.js';

/** Points in the window ending at each point (the encoder's input width). */
export const WINDOW_POINTS = 64;
/**
 * Energy is 0 for the first `WARMUP_POINTS` points: their windows are at least half padding (the
 * first value repeated), so the predictor's error there says more about the padding than the data.
 */
export const WARMUP_POINTS = 32;

const MAD_TO_SIGMA = 1.4826;
const MEAN_ABS_TO_SIGMA = 1.2533;

function median(sorted: Float64Array): number {
  const n = sorted.length;
  const mid = n >> 1;
  return n % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

export function assertFiniteSeries(values: ArrayLike<number>): void {
  for (let i = 0; i < values.length; i++) {
    if (!Number.isFinite(values[i])) {
      throw new ModelError('MODEL_SERIES_INVALID', `series value at index ${i} is not a finite number`);
    }
  }
}

/**
 * Centre = median, scale = MAD x 1.4826. Where the MAD is ~0 (mostly constant data) the mean
 * absolute deviation x 1.2533 is used, and the scale is floored at 1e-6 x max(|centre|, 1) so a
 * flat series does not divide by zero.
 */
export function robustNormalisation(values: ArrayLike<number>): Normalisation {
  const n = values.length;
  if (n === 0) return { center: 0, scale: 1 };
  const sorted = Float64Array.from(values).sort();
  const center = median(sorted);
  const dev = new Float64Array(n);
  let absSum = 0;
  for (let i = 0; i < n; i++) {
    const d = Math.abs((values[i] ?? 0) - center);
    dev[i] = d;
    absSum += d;
  }
  dev.sort();
  let scale = median(dev) * MAD_TO_SIGMA;
  const floor = Math.max(1e-6 * Math.max(Math.abs(center), 1), 1e-12);
  if (scale < floor) scale = (absSum / n) * MEAN_ABS_TO_SIGMA;
  if (scale < floor) scale = floor;
  return { center, scale };
}

/** Row-major [N, 64] float32 windows; row t ends at point t, the start padded with the first value. */
export function buildWindows(values: ArrayLike<number>, normalisation: Normalisation): Float32Array {
  return buildWindowRows(values, normalisation, null);
}

/**
 * The rows of `buildWindows` that end at the points `ends` (all points when null), in that order:
 * the same numbers, for a caller that needs the embeddings of a few points only.
 */
export function buildWindowRows(values: ArrayLike<number>, normalisation: Normalisation, ends: ArrayLike<number> | null): Float32Array {
  const n = values.length;
  const scaled = new Float64Array(n);
  for (let i = 0; i < n; i++) scaled[i] = ((values[i] ?? 0) - normalisation.center) / normalisation.scale;
  const rows = ends === null ? n : ends.length;
  const out = new Float32Array(rows * WINDOW_POINTS);
  const first = scaled[0] ?? 0;
  for (let r = 0; r < rows; r++) {
    const t = ends === null ? r : ends[r]!;
    const row = r * WINDOW_POINTS;
    for (let k = 0; k < WINDOW_POINTS; k++) {
      const src = t - (WINDOW_POINTS - 1) + k;
      out[row + k] = src < 0 ? first : (scaled[src] ?? 0);
    }
  }
  return out;
}
