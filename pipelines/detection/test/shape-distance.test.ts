import { describe, expect, it } from 'vitest';
import { seededRandom } from '../src/random.js';
import {
  FALLBACK_SHAPE_LENGTH,
  MAX_SHAPE_REFERENCE_POINTS,
  nearestNeighbourDistances,
  nearestNeighbourDistancesInSlices,
  shapeReferenceInSlices,
  shapeScoresInSlices,
  shapeLength,
  shapeReferenceOf,
  shapeScores,
  trailingShapeScores,
  trailingShapeScorer,
} from '../src/shape-distance.js';
import { bandHolding, baselineFindsOrdinary, learnedOverride, learnedScores, learnedSeverity } from '../src/learned.js';

/** The distance by definition: z-normalise both windows, then Euclid. */
function bruteForce(query: number[], reference: number[], m: number, exclusion = 0): number[] {
  const norm = (x: number[], start: number): number[] | null => {
    const w = x.slice(start, start + m);
    const mean = w.reduce((s, v) => s + v, 0) / m;
    const sd = Math.sqrt(w.reduce((s, v) => s + (v - mean) ** 2, 0) / m);
    return sd < 1e-9 ? null : w.map((v) => (v - mean) / sd);
  };
  const out: number[] = [];
  for (let i = 0; i + m <= query.length; i++) {
    const a = norm(query, i);
    let best = Number.POSITIVE_INFINITY;
    for (let j = 0; j + m <= reference.length; j++) {
      if (exclusion > 0 && Math.abs(i - j) < exclusion) continue;
      const b = norm(reference, j);
      const d = a === null || b === null ? (a === b ? 0 : Math.sqrt(m)) : Math.sqrt(a.reduce((s, v, t) => s + (v - b[t]!) ** 2, 0));
      best = Math.min(best, d);
    }
    out.push(best);
  }
  return out;
}

function noisySine(n: number, period: number, seed: number, offset = 0): number[] {
  const random = seededRandom(seed);
  return Array.from({ length: n }, (_, i) => offset + Math.sin((2 * Math.PI * i) / period) + 0.1 * (random() - 0.5));
}

describe('nearestNeighbourDistances', () => {
  it('matches the definition on random data, joined and self-joined', () => {
    const random = seededRandom(7);
    const query = Array.from({ length: 700 }, () => random());
    const reference = Array.from({ length: 600 }, () => random() * 3 + 10);
    const joined = nearestNeighbourDistances(query, reference, 20);
    bruteForce(query, reference, 20).forEach((d, i) => expect(joined[i]).toBeCloseTo(d, 6));
    const self = nearestNeighbourDistances(reference, reference, 20, 5);
    bruteForce(reference, reference, 20, 5).forEach((d, i) => expect(self[i]).toBeCloseTo(d, 6));
  });

  it('keeps its precision on a large offset and across the running products refresh', () => {
    const reference = noisySine(1500, 50, 1, 1e6);
    const query = noisySine(1200, 50, 2, 1e6);
    const joined = nearestNeighbourDistances(query, reference, 50);
    bruteForce(query, reference, 50).forEach((d, i) => expect(joined[i]).toBeCloseTo(d, 4));
  });

  it('matches the definition where its fresh rows are cross-correlations by FFT (long subsequences)', () => {
    // 200-point subsequences of a 1,000-point reference: the fresh rows (0, 512, 1024) go by FFT.
    const reference = noisySine(1000, 200, 3, 1e6);
    const query = noisySine(1300, 200, 4, 1e6).map((v, i) => (i >= 700 && i < 760 ? v + 0.8 : v));
    const joined = nearestNeighbourDistances(query, reference, 200);
    bruteForce(query, reference, 200).forEach((d, i) => expect(joined[i]).toBeCloseTo(d, 6));
    const self = nearestNeighbourDistances(reference, reference, 200, 50);
    bruteForce(reference, reference, 200, 50).forEach((d, i) => expect(self[i]).toBeCloseTo(d, 6));
  });

  it('puts constant windows 0 apart from each other and sqrt(m) from varying ones', () => {
    const flat = new Array<number>(40).fill(3);
    const wave = noisySine(40, 10, 3);
    expect(Array.from(nearestNeighbourDistances(flat, flat, 8))).toEqual(new Array(33).fill(0));
    nearestNeighbourDistances(flat, wave, 8).forEach((d) => expect(d).toBeCloseTo(Math.sqrt(8), 9));
    const mixed = [...wave, ...flat];
    const expected = bruteForce(wave, mixed, 8);
    nearestNeighbourDistances(wave, mixed, 8).forEach((d, i) => expect(d).toBeCloseTo(expected[i]!, 5));
  });

  it('answers nothing for a query shorter than one subsequence', () => {
    expect(nearestNeighbourDistances([1, 2, 3], [1, 2, 3, 4, 5], 4)).toHaveLength(0);
  });
});

describe('shapeLength', () => {
  it('is the dominant cycle within its bounds, else the fallback', () => {
    expect(shapeLength(noisySine(3000, 60, 4))).toBe(60);
    const random = seededRandom(5);
    const noise = Array.from({ length: 3000 }, () => random());
    const length = shapeLength(noise);
    expect(length === FALLBACK_SHAPE_LENGTH || (length >= 16 && length <= 400)).toBe(true);
    expect(shapeLength(noisySine(90, 60, 6))).toBeLessThanOrEqual(30);
  });
});

describe('shapeReferenceOf and shapeScores', () => {
  it('scores a healthy continuation near 0 and a changed shape far above it', () => {
    const healthy = noisySine(4000, 80, 8);
    const reference = shapeReferenceOf(healthy);
    expect(reference).not.toBeNull();
    if (reference === null) return;
    expect(reference.length).toBe(80);
    const next = noisySine(2000, 80, 9);
    // One cycle's shape changes (a square wave of the same range) without leaving the usual range.
    for (let i = 1000; i < 1080; i++) next[i] = Math.sign(Math.sin((2 * Math.PI * i) / 80)) * 0.9;
    const { around, within } = shapeScores(next, reference);
    for (const scores of [around, within]) {
      const peak = scores.indexOf(Math.max(...scores));
      expect(peak).toBeGreaterThanOrEqual(1000 - 40);
      expect(peak).toBeLessThan(1080);
      const quiet = Array.from(scores.slice(100, 800));
      expect(Math.max(...quiet)).toBeLessThan(scores[peak]! / 3);
    }
  });

  it('scores a point within by the most ordinary subsequence containing it, around by the one centred on it', () => {
    const healthy = noisySine(3000, 40, 15);
    const reference = shapeReferenceOf(healthy);
    expect(reference).not.toBeNull();
    if (reference === null) return;
    const next = noisySine(600, 40, 16);
    next[300] = 5;
    const { around, within } = shapeScores(next, reference);
    const distances = nearestNeighbourDistances(next, reference.values, 40);
    const scoreOf = (start: number): number => (distances[start]! - reference.center) / reference.spread;
    for (const i of [0, 10, 39, 299, 300, 301, 579, 599]) {
      expect(around[i]).toBeCloseTo(scoreOf(Math.min(distances.length - 1, Math.max(0, i - 20))), 9);
      let lowest = Number.POSITIVE_INFINITY;
      for (let start = Math.max(0, i - 39); start <= Math.min(i, distances.length - 1); start++) lowest = Math.min(lowest, scoreOf(start));
      // The first 39 points have subsequences after them only: no shape of their own.
      expect(within[i]).toBeCloseTo(i < 39 ? 0 : lowest, 9);
    }
    // The spike's neighbours belong to a subsequence without it; the spike does not.
    expect(within[300]).toBeGreaterThan(3);
    expect(within[299]).toBeLessThan(within[300]! / 3);
    expect(within[301]).toBeLessThan(within[300]! / 3);
    expect(around[290]).toBeGreaterThan(3);
  });

  it('leaves the first points of a request to the subsequences that end at them', () => {
    const reference = shapeReferenceOf(noisySine(3000, 40, 19));
    expect(reference).not.toBeNull();
    if (reference === null) return;
    // A spike 30 points in: every subsequence holding points 0..29 also holds it.
    const next = noisySine(300, 40, 20);
    next[30] = 5;
    const { around, within } = shapeScores(next, reference);
    expect(around[5]).toBeGreaterThan(3);
    expect(Array.from(within.slice(0, 39))).toEqual(new Array(39).fill(0));
    // From point 39 on, the subsequence ending at the point is there: points after the spike are
    // judged by one without it.
    expect(Math.max(...within.slice(39))).toBeLessThan(3);
  });

  it('keeps the last values only, and has none for a series too short', () => {
    const long = noisySine(MAX_SHAPE_REFERENCE_POINTS + 500, 40, 10);
    expect(shapeReferenceOf(long)?.values).toEqual(long.slice(500));
    expect(shapeReferenceOf(noisySine(40, 10, 11))).toBeNull();
  });

  it('gives zeros for a request shorter than one subsequence', () => {
    const reference = shapeReferenceOf(noisySine(2000, 100, 12));
    expect(reference).not.toBeNull();
    if (reference === null) return;
    const { around, within } = shapeScores([1, 2, 3], reference);
    expect(Array.from(around)).toEqual([0, 0, 0]);
    expect(Array.from(within)).toEqual([0, 0, 0]);
  });
});

describe('trailingShapeScores', () => {
  it('scores each new point by the subsequence ending at it, the same whatever context comes before', () => {
    const reference = shapeReferenceOf(noisySine(3000, 50, 13));
    expect(reference).not.toBeNull();
    if (reference === null) return;
    const stream = noisySine(400, 50, 14);
    const whole = nearestNeighbourDistances(stream, reference.values, 50);
    const scores = trailingShapeScores(stream, 300, reference);
    expect(scores).toHaveLength(100);
    scores.forEach((score, k) => expect(score).toBeCloseTo((whole[300 + k - 49]! - reference.center) / reference.spread, 6));
    // Only the last subsequence's points are read: a shorter context gives the same scores.
    const short = trailingShapeScores(stream.slice(300 - 49), 49, reference);
    short.forEach((score, k) => expect(score).toBeCloseTo(scores[k]!, 6));
    // Points without a whole subsequence behind them score 0.
    expect(Array.from(trailingShapeScores(stream.slice(0, 60), 0, reference).slice(0, 49))).toEqual(new Array(49).fill(0));
  });
});

describe('trailingShapeScorer', () => {
  it('scores as trailingShapeScores call after call, carrying on where the values continue and starting afresh where they do not', () => {
    const reference = shapeReferenceOf(noisySine(3000, 50, 13));
    expect(reference).not.toBeNull();
    if (reference === null) return;
    const stream = noisySine(1400, 50, 15);
    const scorer = trailingShapeScorer(reference);
    expect(scorer.reference).toBe(reference);
    // A worker's calls: the kept window (at most 300 points) followed by each batch's new points,
    // batches of 1 to 700 points (more than REFRESH_ROWS rows in one call).
    let kept = 0;
    const batches = [30, 1, 1, 7, 120, 1, 700, 3, 40];
    for (const size of batches) {
      const from = Math.max(0, kept - 300);
      const values = stream.slice(from, kept + size);
      const expected = trailingShapeScores(values, kept - from, reference);
      const got = scorer.scores(values, kept - from);
      expect(got).toHaveLength(size);
      got.forEach((score, k) => expect(score, `point ${kept + k}`).toBeCloseTo(expected[k]!, 6));
      kept += size;
    }
    // Values that do not continue the last call (another series, a window reloaded with other
    // points): scored afresh, the same as without a scorer.
    const other = noisySine(200, 50, 16).map((v) => v * 3 + 7);
    const afresh = scorer.scores(other, 150);
    trailingShapeScores(other, 150, reference).forEach((score, k) => expect(afresh[k]).toBeCloseTo(score, 6));
    // The last point changed, the window before it the same: not a continuation either.
    const changed = stream.slice(kept - 300, kept + 5);
    changed[299] = changed[299]! + 5;
    const again = scorer.scores(stream.slice(kept - 300, kept), 299);
    expect(again[0]).toBeCloseTo(trailingShapeScores(stream.slice(kept - 300, kept), 299, reference)[0]!, 6);
    const edited = scorer.scores(changed, 300);
    trailingShapeScores(changed, 300, reference).forEach((score, k) => expect(edited[k]).toBeCloseTo(score, 6));
    // Points without a whole subsequence up to them score 0, as trailingShapeScores scores them.
    expect(Array.from(trailingShapeScorer(reference).scores(stream.slice(0, 60), 0).slice(0, 49))).toEqual(new Array(49).fill(0));
  });
});

describe('learned scores', () => {
  it('add a shape score above the usual to the z-score, and never take from it', () => {
    expect(Array.from(learnedScores([1, 2, 3, -1], [0.5, -2, 4, 0]))).toEqual([1.5, 2, 7, -1]);
  });

  it('have the severity of the engine rule: 1 - band / score above the band, 0 inside', () => {
    expect(learnedSeverity(4, 4)).toBe(0);
    expect(learnedSeverity(8, 4)).toBeCloseTo(0.5, 12);
    expect(learnedSeverity(Number.NaN, 4)).toBe(0);
    expect(learnedSeverity(-10, 4)).toBe(0);
    expect(learnedSeverity(10, 0)).toBe(0);
  });

  it('find a point ordinary when its score is known and within the band', () => {
    expect(baselineFindsOrdinary(4, 4)).toBe(true);
    expect(baselineFindsOrdinary(-2, 4)).toBe(true);
    expect(baselineFindsOrdinary(4.01, 4)).toBe(false);
    expect(baselineFindsOrdinary(Number.NaN, 4)).toBe(false);
  });

  it('widen an overruled band just past the value, never narrowing it', () => {
    expect(bandHolding(60, 50, 6)).toBeCloseTo(10.1, 12);
    expect(bandHolding(40, 50, 6)).toBeCloseTo(10.1, 12);
    expect(bandHolding(52, 50, 6)).toBe(6);
  });

  it("outrank the engine only with a larger severity, with the band that gives it and the value's side", () => {
    expect(learnedOverride(60, 50, 0.1, 0.6)).toEqual({ severity: 0.6, margin: 4, isPositiveAnomaly: true, isNegativeAnomaly: false });
    const below = learnedOverride(45, 50, 0, 0.2)!;
    expect(below).toMatchObject({ severity: 0.2, isPositiveAnomaly: false, isNegativeAnomaly: true });
    expect(below.margin).toBeCloseTo(4, 12);
    expect(learnedOverride(60, 50, 0.6, 0.6)).toBeNull();
    expect(learnedOverride(50, 50, 0, 0.9)).toBeNull();
    expect(learnedOverride(Number.NaN, 50, 0, 0.9)).toBeNull();
  });
});

describe('joins in slices', () => {
  it('give the same answers as in one go, pausing between blocks of rows', async () => {
    const reference = noisySine(2500, 60, 17);
    const query = noisySine(1800, 60, 18);
    let pauses = 0;
    const pause = async (): Promise<void> => {
      pauses += 1;
      await Promise.resolve();
    };
    const sliced = await nearestNeighbourDistancesInSlices(query, reference, 60, 0, pause);
    expect(Array.from(sliced)).toEqual(Array.from(nearestNeighbourDistances(query, reference, 60)));
    // 1,741 rows in blocks of 512: three pauses between four blocks.
    expect(pauses).toBe(3);
    const syncReference = shapeReferenceOf(reference);
    expect(await shapeReferenceInSlices(reference, pause)).toEqual(syncReference);
    if (syncReference === null) throw new Error('no reference');
    const scores = await shapeScoresInSlices(query, syncReference, pause);
    const direct = shapeScores(query, syncReference);
    expect(Array.from(scores.around)).toEqual(Array.from(direct.around));
    expect(Array.from(scores.within)).toEqual(Array.from(direct.within));
  });
});
