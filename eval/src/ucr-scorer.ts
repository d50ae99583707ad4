// The UCR anomaly archive's top-k accuracy, as ../shared/datasets/ucr_dev/README.md defines it:
// a detector names locations in the test part (trainEnd+1..n, 1-based); with L = end - begin + 1,
// a location P hits when min(begin - L, begin - 100) < P < max(end + L, end + 100). top-1: the
// best-scored point; top-k: any of the k best-scored non-overlapping locations hits.

/** Locations closer than this many points are one location (top-k takes the best of them only). */
export const UCR_EXCLUSION_POINTS = 100;

export interface UcrAnomaly {
  readonly begin: number;
  readonly end: number;
}

/** Whether the 1-based position `p` hits the anomaly. */
export function isUcrHit(p: number, anomaly: UcrAnomaly): boolean {
  const length = anomaly.end - anomaly.begin + 1;
  return Math.min(anomaly.begin - length, anomaly.begin - 100) < p && p < Math.max(anomaly.end + length, anomaly.end + 100);
}

/**
 * The `k` best-scored locations of the test part, best first, as 1-based positions: `scores[i]`
 * is position i + 1's score, only positions after `trainEnd` count, and a location is taken only
 * if it is at least `exclusion` points from every one taken before. Non-finite scores are never
 * taken; ties go to the earlier position.
 */
export function topUcrLocations(scores: ArrayLike<number>, trainEnd: number, k: number, exclusion = UCR_EXCLUSION_POINTS): number[] {
  const candidates: number[] = [];
  for (let index = trainEnd; index < scores.length; index++) {
    if (Number.isFinite(scores[index])) candidates.push(index);
  }
  candidates.sort((a, b) => (scores[b] ?? 0) - (scores[a] ?? 0) || a - b);
  const taken: number[] = [];
  for (const index of candidates) {
    if (taken.length >= k) break;
    const position = index + 1;
    if (taken.every((other) => Math.abs(other - position) >= exclusion)) taken.push(position);
  }
  return taken;
}

/** Whether any of the first `k` locations hits. */
export function ucrHitWithin(locations: readonly number[], k: number, anomaly: UcrAnomaly): boolean {
  return locations.slice(0, k).some((p) => isUcrHit(p, anomaly));
}

export interface UcrSeriesScore {
  readonly id: number;
  /** The three best locations (1-based), best first. */
  readonly locations: readonly number[];
  readonly top1: boolean;
  readonly top3: boolean;
}

export function scoreUcrSeries(id: number, scores: ArrayLike<number>, trainEnd: number, anomaly: UcrAnomaly): UcrSeriesScore {
  const locations = topUcrLocations(scores, trainEnd, 3);
  return { id, locations, top1: ucrHitWithin(locations, 1, anomaly), top3: ucrHitWithin(locations, 3, anomaly) };
}

export interface UcrAccuracy {
  readonly series: number;
  readonly top1: number;
  readonly top3: number;
}

/** Hits over series (0 for no series). */
export function ucrAccuracy(scores: readonly UcrSeriesScore[]): UcrAccuracy {
  const n = scores.length;
  const share = (hits: number): number => (n === 0 ? 0 : hits / n);
  return {
    series: n,
    top1: share(scores.filter((score) => score.top1).length),
    top3: share(scores.filter((score) => score.top3).length),
  };
}

/** Ranking by `scores`, ties by `tiebreak`: one number per point that orders the same way (its rank). */
export function rankedBy(scores: Float64Array, tiebreak: Float64Array | undefined): Float64Array {
  if (tiebreak === undefined) return scores;
  const key = (values: Float64Array, index: number): number => {
    const value = values[index] ?? Number.NaN;
    return Number.isFinite(value) ? value : Number.NEGATIVE_INFINITY;
  };
  const order = Array.from(scores.keys()).filter((index) => Number.isFinite(scores[index]));
  order.sort((a, b) => key(scores, a) - key(scores, b) || key(tiebreak, a) - key(tiebreak, b) || b - a);
  const out = new Float64Array(scores.length).fill(Number.NaN);
  order.forEach((index, rank) => {
    out[index] = rank;
  });
  return out;
}
