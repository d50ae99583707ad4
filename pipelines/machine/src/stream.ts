// A machine judged as its points arrive (the stream workers): the verdict `judgeMachine` gives a
// whole request, carried from batch to batch in a small state that survives a restart.
import { episodeDrivers, type MachineEpisode } from './judge.js';
import { machineThreshold, scoreMachine, type MachineModel } from './model.js';

/** What a stream carries between batches: plain data, JSON-safe. */
export interface MachineStreamState {
  /** Points judged since the baseline (the next point's drift horizon less one). */
  readonly judged: number;
  /** The last smoothingPoints - 1 points' own distances, oldest first. */
  readonly distances: readonly number[];
  /** Per channel (the model's order): their parts of those distances. */
  readonly parts: readonly (readonly number[])[];
  /** The episode under way (or waiting a whole window under the threshold to close); null: none. */
  readonly episode: OpenEpisode | null;
}

export interface OpenEpisode {
  /** The stream's point numbers (0: the first point after the baseline). */
  readonly start: number;
  /** The last flagged point so far. */
  readonly end: number;
  readonly peak: number;
  readonly peakScore: number;
  /** Per channel: the summed contributions from its start to its last flag, and the summed score. */
  readonly totals: readonly number[];
  readonly sum: number;
  /** The same over the points after its last flag (a dip that joins it if a flag follows). */
  readonly dipTotals: readonly number[];
  readonly dipSum: number;
}

/** One point of a stream judged. */
export interface StreamedPoint {
  readonly score: number;
  readonly isAnomaly: boolean;
  readonly severity: number;
  /** Per channel (the model's order): its part of the score. */
  readonly contributions: readonly number[];
}

/** An episode as the stream reports it when it opens and when it closes. */
export type StreamEpisode = Omit<MachineEpisode, 'closed'>;

export interface StreamStep {
  readonly threshold: number;
  readonly points: StreamedPoint[];
  /** Episodes opened in this batch (at their first flagged point), with what is known of them then. */
  readonly opened: { readonly at: number; readonly episode: StreamEpisode }[];
  /** Episodes that closed in this batch (a whole window under the threshold after them). */
  readonly closed: { readonly at: number; readonly episode: StreamEpisode }[];
  readonly state: MachineStreamState;
}

export function initialStreamState(model: MachineModel): MachineStreamState {
  return { judged: 0, distances: [], parts: model.channels.map(() => []), episode: null };
}

function reported(model: MachineModel, threshold: number, episode: OpenEpisode): StreamEpisode {
  const channels = episodeDrivers(model, episode.totals, episode.sum);
  return { start: episode.start, end: episode.end, peak: episode.peak, peakScore: episode.peakScore, severity: 1 - threshold / episode.peakScore, channels };
}

/**
 * Judges the next points of a machine's stream (channel-major, the model's channel order) from
 * its state: the same flags, severities and episodes `judgeMachine` gives when the points since
 * the baseline are sent as one request.
 */
export function streamMachine(model: MachineModel, state: MachineStreamState, readings: readonly ArrayLike<number>[], sensitivity: number): StreamStep {
  const threshold = machineThreshold(model, sensitivity);
  const w = model.smoothingPoints;
  const scored = scoreMachine(model, readings, { horizon: state.judged + 1, previous: { distance: state.distances, parts: state.parts } });
  const n = scored.score.length;
  const points: StreamedPoint[] = [];
  const opened: StreamStep['opened'] = [];
  const closed: StreamStep['closed'] = [];
  let episode = state.episode;
  for (let t = 0; t < n; t++) {
    const index = state.judged + t;
    const score = scored.score[t]!;
    const contributions = scored.contributions.map((part) => part[t]!);
    const whole = index >= w - 1;
    const out = whole && score > threshold;
    points.push({ score, isAnomaly: out, severity: out ? 1 - threshold / score : 0, contributions });
    if (out) {
      if (episode === null) {
        episode = { start: index, end: index, peak: index, peakScore: score, totals: [...contributions], sum: score, dipTotals: contributions.map(() => 0), dipSum: 0 };
        opened.push({ at: index, episode: reported(model, threshold, episode) });
        continue;
      }
      // The dip since the last flag belongs to the episode: its points count in its shares.
      const peak = score > episode.peakScore;
      episode = {
        ...episode,
        end: index,
        totals: episode.totals.map((total, c) => total + episode!.dipTotals[c]! + contributions[c]!),
        sum: episode.sum + episode.dipSum + score,
        dipTotals: contributions.map(() => 0),
        dipSum: 0,
        peak: peak ? index : episode.peak,
        peakScore: peak ? score : episode.peakScore,
      };
    } else if (episode !== null) {
      if (index - episode.end >= w) {
        closed.push({ at: index, episode: reported(model, threshold, episode) });
        episode = null;
      } else {
        episode = { ...episode, dipTotals: episode.dipTotals.map((total, c) => total + contributions[c]!), dipSum: episode.dipSum + score };
      }
    }
  }
  const keep = w - 1;
  const distances = [...state.distances, ...scored.distance].slice(-keep);
  const parts = model.channels.map((_, c) => [...(state.parts[c] ?? []), ...scored.parts[c]!].slice(-keep));
  return { threshold, points, opened, closed, state: { judged: state.judged + n, distances, parts, episode } };
}
