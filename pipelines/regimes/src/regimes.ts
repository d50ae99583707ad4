// Regime rules: per-point operating regimes from a machine's energy z-scores and the engine's
// changepoints. Pure: plain arrays in, plain arrays out. README.md beside `src/` states the rules.

import { REGIMES, type Regime } from '@adp/domain';

export { REGIMES, type Regime };
export type RegimeCounts = Record<Regime, number>;

export interface RegimeThresholds {
  /** A point is elevated when its z-score is at least this. */
  readonly activeZ: number;
  /** A point is extreme when its z-score is at least this. */
  readonly shockZ: number;
  /**
   * An episode is sudden when its first extreme point comes at most this many points after the
   * last calm point before it (1 = the very first elevated point is already extreme).
   */
  readonly shockRisePoints: number;
  /** Calm runs of at most this many points inside an episode do not end it. */
  readonly bridgePoints: number;
  /**
   * An episode with fewer elevated points than this and no extreme point is noise: its points stay
   * HEALTHY. Healthy data has isolated high-energy points; a real deviation lasts or is extreme.
   */
  readonly minEpisodePoints: number;
  /** A changepoint this many points before the episode's start (or inside it) belongs to it. */
  readonly transitionRadius: number;
  /** Elevated points an episode needs to count as sustained (a candidate for TRANSITION). */
  readonly transitionMinPoints: number;
  /** TRANSITION lasts at most this many points after the changepoint; elevation beyond it is ACTIVE. */
  readonly transitionMaxPoints: number;
  /** SHOCK lasts at most this many points from the episode's start; a deviation that lasts is ACTIVE. */
  readonly shockMaxPoints: number;
  /**
   * The echo check (echoes.ts) repairs an extreme point whose value departs from the line through
   * its neighbours by at least this many robust standard deviations of such departures.
   */
  readonly spikeDeparture: number;
}

export const DEFAULT_REGIME_THRESHOLDS: RegimeThresholds = Object.freeze({
  activeZ: 6,
  shockZ: 12,
  shockRisePoints: 2,
  bridgePoints: 2,
  minEpisodePoints: 3,
  transitionRadius: 8,
  transitionMinPoints: 4,
  transitionMaxPoints: 64,
  shockMaxPoints: 64,
  spikeDeparture: 6,
});

export interface RegimeInput {
  /** One z-score per point (energy relative to the machine's baseline). Non-finite counts as calm. */
  readonly zScores: ArrayLike<number>;
  /** The engine's changepoint flags, one per point; absent = no changepoints known. */
  readonly changePoints?: ArrayLike<boolean> | null;
  /**
   * Points at the start of the series whose energy is not comparable (the model's window is still
   * partly padding); they are never elevated. Default 0.
   */
  readonly warmupPoints?: number;
}

/** An episode: points [start, end] (inclusive) that are elevated, short calm gaps bridged. */
interface Episode {
  readonly start: number;
  readonly end: number;
}

function isElevated(z: number | undefined, thresholds: RegimeThresholds): boolean {
  return z !== undefined && Number.isFinite(z) && z >= thresholds.activeZ;
}

function isExtreme(z: number | undefined, thresholds: RegimeThresholds): boolean {
  return z !== undefined && Number.isFinite(z) && z >= thresholds.shockZ;
}

function findEpisodes(zScores: ArrayLike<number>, thresholds: RegimeThresholds, warmupPoints: number): Episode[] {
  const episodes: Episode[] = [];
  let start = -1;
  let lastElevated = -1;
  for (let index = warmupPoints; index < zScores.length; index++) {
    if (!isElevated(zScores[index], thresholds)) continue;
    if (start >= 0 && index - lastElevated - 1 > thresholds.bridgePoints) {
      episodes.push({ start, end: lastElevated });
      start = -1;
    }
    if (start < 0) start = index;
    lastElevated = index;
  }
  if (start >= 0) episodes.push({ start, end: lastElevated });
  return episodes;
}

/** The first changepoint in [from, to], or -1. */
function firstChangePoint(changePoints: ArrayLike<boolean> | null | undefined, from: number, to: number): number {
  if (!changePoints) return -1;
  for (let index = Math.max(0, from); index <= to && index < changePoints.length; index++) {
    if (changePoints[index] === true) return index;
  }
  return -1;
}

export function validateThresholds(thresholds: RegimeThresholds): void {
  const { activeZ, shockZ, shockRisePoints, bridgePoints, transitionRadius, transitionMinPoints, transitionMaxPoints } =
    thresholds;
  if (!Number.isFinite(activeZ) || !Number.isFinite(shockZ) || shockZ < activeZ) {
    throw new RangeError('regime thresholds: activeZ and shockZ must be finite with shockZ >= activeZ');
  }
  if (!(thresholds.spikeDeparture > 0) || !Number.isFinite(thresholds.spikeDeparture)) {
    throw new RangeError('regime thresholds: spikeDeparture must be a positive finite number');
  }
  for (const count of [
    shockRisePoints,
    bridgePoints,
    thresholds.minEpisodePoints,
    transitionRadius,
    transitionMinPoints,
    transitionMaxPoints,
    thresholds.shockMaxPoints,
  ]) {
    if (!Number.isSafeInteger(count) || count < 0) {
      throw new RangeError('regime thresholds: point counts must be non-negative integers');
    }
  }
}

/**
 * One regime per point:
 *  - TRANSITION: in a sustained episode (>= transitionMinPoints elevated points) with an engine
 *    changepoint inside it or at most transitionRadius points before it, the points from
 *    transitionRadius before that changepoint to transitionMaxPoints after it;
 *  - SHOCK: an extreme point (z >= shockZ) of a sudden episode (calm to extreme within
 *    shockRisePoints points, no transition in it), at most shockMaxPoints from its start;
 *  - ACTIVE: any other elevated point (z >= activeZ);
 *  - HEALTHY: everything else, including episodes of fewer than minEpisodePoints elevated points
 *    without an extreme one.
 */
export function classifyRegimes(
  input: RegimeInput,
  thresholds: RegimeThresholds = DEFAULT_REGIME_THRESHOLDS,
): Regime[] {
  validateThresholds(thresholds);
  const { zScores, changePoints } = input;
  const warmupPoints = input.warmupPoints ?? 0;
  if (!Number.isSafeInteger(warmupPoints) || warmupPoints < 0) {
    throw new RangeError('regimes: warmupPoints must be a non-negative integer');
  }
  if (changePoints && changePoints.length !== zScores.length) {
    throw new RangeError(`regimes: ${changePoints.length} changepoint flags for ${zScores.length} z-scores`);
  }
  const regimes = new Array<Regime>(zScores.length).fill('HEALTHY');

  for (const episode of findEpisodes(zScores, thresholds, warmupPoints)) {
    let elevatedPoints = 0;
    let firstExtreme = -1;
    for (let index = episode.start; index <= episode.end; index++) {
      if (isElevated(zScores[index], thresholds)) elevatedPoints += 1;
      if (firstExtreme < 0 && isExtreme(zScores[index], thresholds)) firstExtreme = index;
    }

    // TRANSITION covers the episode from transitionRadius points before the changepoint to
    // transitionMaxPoints after it; the rest of the episode is judged like any other.
    if (elevatedPoints < thresholds.minEpisodePoints && firstExtreme < 0) continue;

    let transitionStart = episode.end + 1;
    let transitionEnd = episode.end;
    const changePoint = firstChangePoint(changePoints, episode.start - thresholds.transitionRadius, episode.end);
    if (changePoint >= 0 && elevatedPoints >= thresholds.transitionMinPoints) {
      transitionStart = Math.max(episode.start, changePoint - thresholds.transitionRadius);
      transitionEnd = Math.min(episode.end, changePoint + thresholds.transitionMaxPoints);
    }

    // The last calm point before the episode is start - 1, so the rise takes firstExtreme - start + 1
    // points. An episode with a transition is a change of state, never a shock.
    const hasTransition = transitionStart <= transitionEnd;
    const sudden =
      !hasTransition && firstExtreme >= 0 && firstExtreme - episode.start + 1 <= thresholds.shockRisePoints;
    const shockEnd = episode.start + thresholds.shockMaxPoints - 1;
    for (let index = episode.start; index <= episode.end; index++) {
      if (index >= transitionStart && index <= transitionEnd) {
        regimes[index] = 'TRANSITION';
        continue;
      }
      const z = zScores[index];
      if (!isElevated(z, thresholds)) continue;
      regimes[index] = sudden && index <= shockEnd && isExtreme(z, thresholds) ? 'SHOCK' : 'ACTIVE';
    }
  }
  return regimes;
}

/** The regimes of a series without a baseline: nothing to compare with. */
export function unknownRegimes(length: number): Regime[] {
  return new Array<Regime>(length).fill('UNKNOWN');
}

export function countRegimes(regimes: readonly Regime[]): RegimeCounts {
  const counts: RegimeCounts = { HEALTHY: 0, ACTIVE: 0, TRANSITION: 0, SHOCK: 0, UNKNOWN: 0 };
  for (const regime of regimes) counts[regime] += 1;
  return counts;
}

/**
 * z-scores of energies against a reference mean and standard deviation. A standard deviation
 * below `minStd` (default 1e-9 or 1e-6 of the mean, whichever is larger) is raised to it, so a
 * constant reference gives large but finite scores.
 */
export function zScoresOf(energies: ArrayLike<number>, mean: number, std: number, minStd?: number): Float64Array {
  const floor = minStd ?? Math.max(1e-9, Math.abs(mean) * 1e-6);
  const scale = Number.isFinite(std) && std > floor ? std : floor;
  const out = new Float64Array(energies.length);
  for (let index = 0; index < energies.length; index++) out[index] = ((energies[index] ?? 0) - mean) / scale;
  return out;
}

/**
 * The regime of a point whose departure holds (flagged, its level or spread away from the
 * healthy state): out of its healthy state, whatever the regime rules say point by point, so at
 * least ACTIVE.
 */
export function heldRegime(regime: Regime): Regime {
  return regime === 'HEALTHY' || regime === 'UNKNOWN' ? 'ACTIVE' : regime;
}

/** The regimes with heldRegime where `held` is true. */
export function activeWhere(regimes: readonly Regime[], held: readonly boolean[]): Regime[] {
  return regimes.map((regime, index) => (held[index] === true ? heldRegime(regime) : regime));
}
