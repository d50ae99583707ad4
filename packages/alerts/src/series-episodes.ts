// The episodes of a series judged at once (a detection's answer), by the same rule the stream
// workers follow point by point (episodes.ts): an episode opens at a flagged point and closes once
// `quietPoints` judged points without a flag have followed its last flagged one. So a series sent
// to POST /v1/detect and the same points sent as telemetry show the same episodes.

/** Judged points without a flag after which an episode closes, unless configured otherwise. */
export const DEFAULT_EPISODE_QUIET_POINTS = 10;

export interface SeriesEpisode {
  /** Index of its first flagged point. */
  readonly start: number;
  /** Index of its last flagged point (inclusive). */
  readonly end: number;
  /** Index of its most severe flagged point (the first of equals). */
  readonly peak: number;
  /** The peak's severity. */
  readonly severity: number;
  /** Flagged points within it. */
  readonly flaggedPoints: number;
  /** Whether its flags were above the expected value, below it, or both. */
  readonly direction: 'positive' | 'negative' | 'both';
  /** False while fewer than `quietPoints` points have followed its last flag: it may still go on. */
  readonly closed: boolean;
}

export interface SeriesVerdicts {
  readonly isAnomaly: readonly boolean[];
  readonly isPositiveAnomaly: readonly boolean[];
  readonly isNegativeAnomaly: readonly boolean[];
  readonly severity: readonly number[];
}

export function seriesEpisodes(verdicts: SeriesVerdicts, quietPoints = DEFAULT_EPISODE_QUIET_POINTS): SeriesEpisode[] {
  const quiet = Math.max(1, Math.floor(quietPoints));
  const n = verdicts.isAnomaly.length;
  const episodes: SeriesEpisode[] = [];
  let open: { start: number; end: number; peak: number; flagged: number; positive: boolean; negative: boolean } | null = null;
  const close = (closed: boolean): void => {
    if (open === null) return;
    const { start, end, peak, flagged, positive, negative } = open;
    const direction = positive && negative ? 'both' : negative ? 'negative' : 'positive';
    episodes.push({ start, end, peak, severity: verdicts.severity[peak] ?? 0, flaggedPoints: flagged, direction, closed });
    open = null;
  };
  for (let t = 0; t < n; t++) {
    if (verdicts.isAnomaly[t]) {
      if (open === null) open = { start: t, end: t, peak: t, flagged: 0, positive: false, negative: false };
      open.end = t;
      open.flagged++;
      if ((verdicts.severity[t] ?? 0) > (verdicts.severity[open.peak] ?? 0)) open.peak = t;
      open.positive ||= verdicts.isPositiveAnomaly[t] === true;
      open.negative ||= verdicts.isNegativeAnomaly[t] === true;
    } else if (open !== null && t - open.end >= quiet) {
      close(true);
    }
  }
  close(false);
  return episodes;
}
