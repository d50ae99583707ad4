// Statistics of a machine's energies on healthy data: the reference that z-scores and regimes are
// measured against. The arithmetic is the model package's; this decides which energies count.
import { computeEnergyStats, WINDOW_POINTS } from '@adp/model';
import type { BaselineStats } from '@adp/store';

/**
 * Statistics of the energies a model run gave for a series of `energies.length` points, over the
 * points whose window is full (from WINDOW_POINTS on): before that the model's window is partly
 * padding (energy 0 for the first WARMUP_POINTS, then inflated), which says more about the padding
 * than about the machine. `numWindows` counts the points used. The regime rules skip the same points.
 */
export function seriesEnergyStats(energies: ArrayLike<number>): BaselineStats {
  const informative = Array.prototype.slice.call(energies, WINDOW_POINTS) as number[];
  return fromModelStats(computeEnergyStats(informative), energies.length);
}

/**
 * Statistics of a fine-tuned baseline's energies over its held-out tail only (points from
 * `heldOutFrom`, the fine-tune's, and never before WINDOW_POINTS). The predictor fits the earlier
 * points' pairs closely (its output layer has more features than a short series has pairs), so
 * their energies are several times lower than on any new data of the same machine: a mean and
 * standard deviation from them would make healthy new data read elevated. `numWindows` counts the
 * held-out points used.
 */
export function heldOutEnergyStats(energies: ArrayLike<number>, heldOutFrom: number): BaselineStats {
  const from = Math.max(WINDOW_POINTS, heldOutFrom);
  const heldOut = Array.prototype.slice.call(energies, from) as number[];
  return fromModelStats(computeEnergyStats(heldOut), energies.length);
}

/** Statistics of energies a caller computed: every value counts. */
export function givenEnergyStats(energies: readonly number[]): BaselineStats {
  return fromModelStats(computeEnergyStats(energies), energies.length);
}

function fromModelStats(stats: ReturnType<typeof computeEnergyStats>, seriesLength: number): BaselineStats {
  return {
    energyMean: stats.energy_mean,
    energyStd: stats.energy_std,
    energyP99: stats.energy_p99,
    numWindows: stats.num_windows,
    seriesLength,
  };
}
