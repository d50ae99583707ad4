// Episodes of a judged series: an episode opens at a flagged point and closes once a quiet stretch
// of `quietPoints` judged points has followed its last flagged one. Pure: the worker feeds each
// series' newly judged points with the state it kept (in its checkpoints), and raises the events.
// A flagged point that feedback recognises as familiar (feedback.ts) counts as quiet.
import type { RegimeName } from '@adp/store';
import type { JudgedPoint as StoredVerdict } from '@adp/streaming';
import type { RegimeState } from './regimes.js';

export type { RegimeName };

/** One judged point, as the worker's result row has it: the engine's verdict, its time and regime. */
export interface JudgedPoint extends StoredVerdict {
  readonly tsMs: number;
  readonly regime: RegimeName;
}

export interface EpisodePeak {
  readonly tsMs: number;
  readonly severity: number;
  readonly value: number;
  readonly expectedValue: number;
  readonly upperMargin: number;
  readonly lowerMargin: number;
  readonly regime: RegimeName;
}

export interface OpenEpisode {
  readonly startedMs: number;
  readonly lastFlaggedMs: number;
  readonly flaggedPoints: number;
  /** Judged points since the last flagged one. */
  readonly quietPoints: number;
  readonly peak: EpisodePeak;
}

/** What a series carries between batches: its open episode, and where its regime stands (regimes.ts). */
export interface EpisodeState {
  readonly open: OpenEpisode | null;
  readonly regime?: RegimeState;
}

export type EpisodeEvent =
  | { readonly kind: 'opened'; readonly episode: OpenEpisode }
  /** `endedMs`: the episode's last flagged point. */
  | { readonly kind: 'closed'; readonly episode: OpenEpisode; readonly endedMs: number };

/** How a point counts for episodes: `flag` opens or extends one, `quiet` counts toward its end. */
export type PointVerdict = 'flag' | 'quiet';

export interface EpisodeOptions {
  /** Judged points without a flag after which an open episode closes (>= 1). */
  readonly quietPoints: number;
  /** How a point counts; default: flagged when the engine says it is an anomaly. */
  readonly verdict?: (point: JudgedPoint) => PointVerdict;
}

/** A stored result row (the columns episodes read), as a judged point. */
export function judgedPointOfRow(row: JudgedPoint): JudgedPoint {
  return {
    tsMs: row.tsMs,
    value: row.value,
    expectedValue: row.expectedValue,
    upperMargin: row.upperMargin,
    lowerMargin: row.lowerMargin,
    isAnomaly: row.isAnomaly,
    isPositiveAnomaly: row.isPositiveAnomaly,
    isNegativeAnomaly: row.isNegativeAnomaly,
    severity: row.severity,
    regime: row.regime,
  };
}

export const NO_EPISODE: EpisodeState = Object.freeze({ open: null });

const byEngine = (point: JudgedPoint): PointVerdict => (point.isAnomaly ? 'flag' : 'quiet');

function peakOf(point: JudgedPoint): EpisodePeak {
  return {
    tsMs: point.tsMs,
    severity: point.severity,
    value: point.value,
    expectedValue: point.expectedValue,
    upperMargin: point.upperMargin,
    lowerMargin: point.lowerMargin,
    regime: point.regime,
  };
}

/** Follows `points` (ascending, all newer than what `state` has seen) from `state`. */
export function followEpisodes(
  state: EpisodeState,
  points: readonly JudgedPoint[],
  options: EpisodeOptions,
): { readonly state: EpisodeState; readonly events: readonly EpisodeEvent[] } {
  const quietLimit = Math.max(1, Math.floor(options.quietPoints));
  const verdict = options.verdict ?? byEngine;
  const events: EpisodeEvent[] = [];
  let open = state.open;
  for (const point of points) {
    const flagged = verdict(point) === 'flag';
    if (open === null) {
      if (!flagged) continue;
      open = { startedMs: point.tsMs, lastFlaggedMs: point.tsMs, flaggedPoints: 1, quietPoints: 0, peak: peakOf(point) };
      events.push({ kind: 'opened', episode: open });
      continue;
    }
    if (flagged) {
      open = {
        startedMs: open.startedMs,
        lastFlaggedMs: point.tsMs,
        flaggedPoints: open.flaggedPoints + 1,
        quietPoints: 0,
        peak: point.severity > open.peak.severity ? peakOf(point) : open.peak,
      };
      continue;
    }
    open = { ...open, quietPoints: open.quietPoints + 1 };
    if (open.quietPoints >= quietLimit) {
      events.push({ kind: 'closed', episode: open, endedMs: open.lastFlaggedMs });
      open = null;
    }
  }
  return { state: open === state.open ? state : { ...state, open }, events };
}

// The state's checkpoint: JSON, version-tagged, so a change of shape reads older ones as none.
const STATE_VERSION = 1;

export function encodeEpisodeState(state: EpisodeState): Buffer {
  return Buffer.from(JSON.stringify({ v: STATE_VERSION, open: state.open, regime: state.regime ?? null }), 'utf8');
}

/** The state in `bytes`, or NO_EPISODE when they are not a state this version reads. */
export function decodeEpisodeState(bytes: Buffer | undefined): EpisodeState {
  if (bytes === undefined) return NO_EPISODE;
  try {
    const parsed = JSON.parse(bytes.toString('utf8')) as { v?: unknown; open?: unknown; regime?: unknown };
    if (parsed.v !== STATE_VERSION) return NO_EPISODE;
    const regimeState = parsed.regime as RegimeState | null | undefined;
    const regime = regimeState && typeof regimeState === 'object' && typeof regimeState.count === 'number' ? { regime: regimeState } : {};
    const open = parsed.open as OpenEpisode | null;
    if (open === null || open === undefined) return Object.keys(regime).length === 0 ? NO_EPISODE : { open: null, ...regime };
    if (typeof open !== 'object' || typeof open.startedMs !== 'number' || typeof open.peak !== 'object') return NO_EPISODE;
    return { open, ...regime };
  } catch {
    return NO_EPISODE;
  }
}
