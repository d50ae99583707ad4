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
  /** False until a whole window has passed under the threshold after it (it may still go on). */
  readonly closed: boolean;
}

export interface MachineVerdict {
  readonly threshold: number;
  readonly score: Float64Array;
  readonly isAnomaly: boolean[];
  /** 0 for a healthy point; 1 - threshold / score for a flagged one. */
  readonly severity: number[];
  /** Per channel, in the model's order: its part of each point's score. */
  readonly contributions: Float64Array[];
  readonly episodes: MachineEpisode[];
}

/** A channel is named as a driver of an episode when it carries at least this share of it. */
export const DRIVER_SHARE = 0.1;

/** The channels that drove an episode, from their summed contributions and its summed score: largest share first. */
export function episodeDrivers(model: MachineModel, totals: readonly number[], sum: number): { channel: string; share: number }[] {
  return model.channels
    .map((channel, c) => ({ channel, share: sum > 0 ? totals[c]! / sum : 0 }))
    .filter(({ share }) => share >= DRIVER_SHARE)
    .sort((a, b) => b.share - a.share);
}

/**
 * Judges readings (channel-major, the model's channel order) at a sensitivity (0..99). A point is
 * out when its score is over the threshold: each point's verdict needs nothing after it, so a
 * stream judged point by point flags exactly the same points. The first points of a stretch with
 * no carry, whose windows are not yet whole, are not flagged. An episode runs from the first flag
 * of a departure to its last, through dips shorter than a window.
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
    if (last && last[1] === t - 1) last[1] = t;
    else runs.push([t, t]);
  }
  const isAnomaly = new Array<boolean>(n).fill(false);
  const severity = new Array<number>(n).fill(0);
  for (const [start, end] of runs) {
    for (let t = start; t <= end; t++) {
      isAnomaly[t] = true;
      severity[t] = 1 - threshold / score[t]!;
    }
  }
  // Runs a short dip apart are one departure: an episode stays open until the score has stayed
  // under the threshold for a whole window (which a stream knows as the points arrive).
  const spans: [number, number][] = [];
  for (const [start, end] of runs) {
    const last = spans.at(-1);
    if (last && start - last[1] <= w) last[1] = end;
    else spans.push([start, end]);
  }
  const episodes: MachineEpisode[] = spans.map(([start, end]) => {
    let peak = start;
    const totals = contributions.map(() => 0);
    let sum = 0;
    for (let t = start; t <= end; t++) {
      if (score[t]! > score[peak]!) peak = t;
      contributions.forEach((part, c) => (totals[c]! += part[t]!));
      sum += score[t]!;
    }
    const channels = episodeDrivers(model, totals, sum);
    // Closed once a whole window has passed under the threshold after it.
    const closed = n - 1 - end >= w;
    return { start, end, peak, peakScore: score[peak]!, severity: 1 - threshold / score[peak]!, channels, closed };
  });
  return { threshold, score, isAnomaly, severity, contributions, episodes };
}
