// A machine's verdict: which points are out of the healthy state, for how long (episodes), how far
// out and which channels drove it.
import { machineThreshold, scoreMachine, type MachineModel, type ScoreContext } from './model.js';

/** A departure from the healthy state that lasted: its first and last point, both inclusive. */
export interface MachineEpisode {
  readonly start: number;
  readonly end: number;
  /** The point of the highest score. */
  readonly peak: number;
  readonly peakScore: number;
  /** Severity at the peak, in (0, 1]. */
  readonly severity: number;
  /** The channels that drove it: each one's share of the episode's summed score, largest first, those of at least `DRIVER_SHARE`. */
  readonly channels: readonly { readonly channel: string; readonly share: number }[];
  /** False when the judged points ended while it was still under way. */
  readonly closed: boolean;
}

export interface MachineVerdict {
  readonly threshold: number;
  readonly score: Float64Array;
  readonly isAnomaly: boolean[];
  /** 0 for a healthy point; 1 - threshold / score for a flagged one (flagged gap points: their own, 0 when under). */
  readonly severity: number[];
  /** Per channel, in the model's order: its part of each point's score. */
  readonly contributions: Float64Array[];
  readonly episodes: MachineEpisode[];
}

/** A channel is named as a driver of an episode when it carries at least this share of it. */
export const DRIVER_SHARE = 0.1;

/**
 * Judges readings (channel-major, the model's channel order) at a sensitivity (0..99). A point is
 * out when its score is over the threshold; runs of such points are episodes, and a gap no longer
 * than the smoothing window between two runs belongs to the episode (the trailing mean dips inside
 * one departure), its points flagged with it. The first points of a stretch with no carry, whose
 * windows are not yet whole, are not flagged.
 */
export function judgeMachine(model: MachineModel, readings: readonly ArrayLike<number>[], sensitivity: number, context: ScoreContext = {}): MachineVerdict {
  const threshold = machineThreshold(model, sensitivity);
  const { score, contributions } = scoreMachine(model, readings, context);
  const n = score.length;
  const w = model.smoothingPoints;
  const runs: [number, number][] = [];
  // A point's window is whole once smoothingPoints have been judged (with a stream's carry); a
  // mean of fewer is noisier than the held-out scores the threshold came from, so it flags nothing.
  const carried = Math.min(w - 1, context.previous?.distance.length ?? 0);
  const firstWhole = Math.max(0, w - 1 - carried);
  for (let t = firstWhole; t < n; t++) {
    if (!(score[t]! > threshold)) continue;
    const last = runs.at(-1);
    if (last && t - last[1] <= w) last[1] = t;
    else runs.push([t, t]);
  }
  const isAnomaly = new Array<boolean>(n).fill(false);
  const severity = new Array<number>(n).fill(0);
  const episodes: MachineEpisode[] = [];
  for (const [start, end] of runs) {
    const closed = end < n - 1;
    let peak = start;
    const totals = contributions.map(() => 0);
    let sum = 0;
    for (let t = start; t <= end; t++) {
      if (score[t]! > score[peak]!) peak = t;
      isAnomaly[t] = true;
      severity[t] = score[t]! > threshold ? 1 - threshold / score[t]! : 0;
      contributions.forEach((part, c) => (totals[c]! += part[t]!));
      sum += score[t]!;
    }
    const channels = model.channels
      .map((channel, c) => ({ channel, share: sum > 0 ? totals[c]! / sum : 0 }))
      .filter(({ share }) => share >= DRIVER_SHARE)
      .sort((a, b) => b.share - a.share);
    episodes.push({
      start,
      end,
      peak,
      peakScore: score[peak]!,
      severity: score[peak]! > threshold ? 1 - threshold / score[peak]! : 0,
      channels,
      closed,
    });
  }
  return { threshold, score, isAnomaly, severity, contributions, episodes };
}
