// Pure energy arithmetic: per-point prediction error and the baseline statistics the API stores.
import { EMBEDDING_DIM } from './contract.js';
import { WARMUP_POINTS } from './windows.js';

/**
 * energies[t] = mean over the 192 dims of (predicted[t-1] - embeddings[t])^2 for t >= WARMUP_POINTS,
 * 0 before. `predicted` holds the predictor's outputs for embeddings[WARMUP_POINTS-1 .. N-2], in order.
 */
export function energiesFromPredictions(embeddings: Float32Array, predicted: Float32Array, points: number): Float64Array {
  const out = new Float64Array(points);
  for (let t = WARMUP_POINTS; t < points; t++) out[t] = predictionEnergy(predicted, t - WARMUP_POINTS, embeddings, t);
  return out;
}

/** Mean squared difference between prediction row `p` and embedding row `e` (EMBEDDING_DIM wide). */
export function predictionEnergy(predicted: Float32Array, p: number, embeddings: Float32Array, e: number): number {
  const pFrom = p * EMBEDDING_DIM;
  const eFrom = e * EMBEDDING_DIM;
  let sum = 0;
  for (let k = 0; k < EMBEDDING_DIM; k++) {
    const d = (predicted[pFrom + k] ?? 0) - (embeddings[eFrom + k] ?? 0);
    sum += d * d;
  }
  return sum / EMBEDDING_DIM;
}

export interface EnergyStats {
  readonly energy_mean: number;
  readonly energy_std: number;
  /** 99th percentile, linear interpolation between order statistics. */
  readonly energy_p99: number;
  readonly num_windows: number;
}

/**
 * Statistics of a baseline's energies. Pass the energies that carry information (a runtime's
 * `energies(...)` output sliced from WARMUP_POINTS, or a caller's own list); every value counts.
 * Population standard deviation; all zeros for an empty list.
 */
export function computeEnergyStats(energies: ArrayLike<number>): EnergyStats {
  const n = energies.length;
  if (n === 0) return { energy_mean: 0, energy_std: 0, energy_p99: 0, num_windows: 0 };
  let sum = 0;
  for (let i = 0; i < n; i++) sum += energies[i] ?? 0;
  const mean = sum / n;
  let sq = 0;
  for (let i = 0; i < n; i++) {
    const d = (energies[i] ?? 0) - mean;
    sq += d * d;
  }
  const sorted = Float64Array.from(energies).sort();
  const rank = 0.99 * (n - 1);
  const lo = Math.floor(rank);
  const hi = Math.min(n - 1, lo + 1);
  const p99 = (sorted[lo] ?? 0) + ((sorted[hi] ?? 0) - (sorted[lo] ?? 0)) * (rank - lo);
  return { energy_mean: mean, energy_std: Math.sqrt(sq / n), energy_p99: p99, num_windows: n };
}
