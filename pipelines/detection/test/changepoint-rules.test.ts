// The seed's four changepoint rules, checked on the pipeline's own intermediate values, and
// the significance machinery that chooses among the candidates.
import { describe, expect, it } from 'vitest';
import {
  analyseChangePoints,
  defaultChangePointThreshold,
  detectChangePointSeries,
  familyConfidence,
  normalUpperTail,
  type ChangePointAnalysis,
  type ChangePointOptions,
  type SeriesInput,
} from '../src/index.js';
import { gaussian, gridInput, indicesWhere, noiseSeries, plainInput, sineSeries } from './helpers.js';

function shifted(values: number[], shifts: [number, number][]): number[] {
  const out = [...values];
  for (const [at, by] of shifts) for (let i = at; i < out.length; i++) out[i]! += by;
  return out;
}

/** The 95th percentile (linear interpolation) of |g| over the points where g is defined. */
function percentile95(a: ChangePointAnalysis): number {
  const m = a.errors.length;
  const sizes: number[] = [];
  for (let i = a.k; i <= m - a.k; i++) if (a.imputed[i] === 0) sizes.push(Math.abs(a.gradient[i]!));
  sizes.sort((x, y) => x - y);
  const at = 0.95 * (sizes.length - 1);
  const low = Math.floor(at);
  const high = Math.min(sizes.length - 1, low + 1);
  return sizes[low]! + (at - low) * (sizes[high]! - sizes[low]!);
}

/** Checks every rule of the seed on an analysis, recomputing the gradient from e. */
function expectSeedRules(a: ChangePointAnalysis): void {
  const m = a.errors.length;
  const k = a.k;
  // The gradient is the seed's formula over e, where both windows fit.
  const mean = (from: number, to: number): number => {
    let sum = 0;
    for (let j = from; j < to; j++) sum += a.errors[j]!;
    return sum / (to - from);
  };
  for (let i = k; i <= m - k; i += Math.max(1, Math.floor(m / 200))) {
    expect(a.gradient[i]!).toBeCloseTo(mean(i, i + k) - mean(i - k, i), 6);
  }
  const cutoff = percentile95(a);
  const found = indicesWhere(Array.from(a.isChange, (v) => v === 1));
  for (const i of found) {
    // 1. |gradient| above the 95th percentile of all gradients.
    expect(Math.abs(a.gradient[i]!), `gradient at ${i}`).toBeGreaterThan(cutoff);
    // 2. a local maximum of |gradient| (within ±radius, radius >= 1).
    expect(a.radius).toBeGreaterThanOrEqual(1);
    for (let j = Math.max(k, i - a.radius); j <= Math.min(m - k, i + a.radius); j++) {
      expect(Math.abs(a.gradient[j]!), `neighbour ${j} of ${i}`).toBeLessThanOrEqual(Math.abs(a.gradient[i]!));
    }
    // 3. confidence >= threshold.
    expect(a.confidence[i]!).toBeGreaterThanOrEqual(a.threshold);
    expect(a.imputed[i]).toBe(0);
  }
  // 4. at least max(period, 1) points from the previous changepoint.
  expect(a.spacing).toBe(Math.max(a.period, 1));
  for (let c = 1; c < found.length; c++) expect(found[c]! - found[c - 1]!).toBeGreaterThanOrEqual(a.spacing);
  // Every confidence in [0, 1].
  for (let i = 0; i < m; i++) {
    expect(a.confidence[i]!).toBeGreaterThanOrEqual(0);
    expect(a.confidence[i]!).toBeLessThanOrEqual(1);
  }
}

function cases(): { name: string; input: SeriesInput; opts: ChangePointOptions }[] {
  const draw = gaussian(11);
  const walk: number[] = [];
  let level = 0;
  for (let i = 0; i < 400; i++) walk.push((level += draw()));
  const out: { name: string; input: SeriesInput; opts: ChangePointOptions }[] = [];
  const series: [string, SeriesInput][] = [
    ['shifts', plainInput(shifted(noiseSeries(600, 1), [[200, 5], [400, -8]]))],
    ['close shifts', plainInput(shifted(noiseSeries(300, 7, 0, 0.5), [[100, 6], [130, -6], [160, 6]]))],
    ['daily cycle', gridInput(shifted(sineSeries(24 * 30, { period: 24, noise: 1, seed: 3 }), [[300, 4]]))],
    ['short', plainInput(shifted(noiseSeries(30, 4), [[15, 4]]))],
    ['random walk', plainInput(walk)],
    ['trend and shift', plainInput(shifted(Array.from({ length: 300 }, (_, i) => 0.1 * i + draw()), [[150, 6]]))],
    ['gaps', gridInput(shifted(noiseSeries(400, 4), [[200, 6]]), { missing: new Set([50, 51, 199, 300]), granularity: 'daily', imputeMode: 'linear' })],
  ];
  const variants: ChangePointOptions[] = [
    {},
    { threshold: 0.5 },
    { threshold: 0.99, stableTrendWindow: 8 },
    { components: { refine: false } },
    { components: { detrend: false } },
    { components: { splitTrend: false } },
  ];
  for (const [name, input] of series) for (const opts of variants) out.push({ name: `${name} ${JSON.stringify(opts)}`, input, opts });
  return out;
}

describe('changepoint rules', () => {
  it('every changepoint obeys the seed: 95th percentile, local maximum, threshold, spacing; confidences in [0, 1]', () => {
    let total = 0;
    for (const { name, input, opts } of cases()) {
      const analysis = analyseChangePoints(input, opts);
      expect(analysis.threshold, name).toBe(opts.threshold ?? defaultChangePointThreshold(input.granularity));
      expectSeedRules(analysis);
      total += analysis.isChange.reduce((s, v) => s + v, 0);
    }
    expect(total).toBeGreaterThan(20); // the rules were exercised, not vacuously true
  });

  it('analyseChangePoints and detectChangePointSeries agree', () => {
    const input = gridInput(shifted(noiseSeries(400, 4), [[200, 6]]), { missing: new Set([50, 300]), granularity: 'daily' });
    const analysis = analyseChangePoints(input, {});
    const result = detectChangePointSeries(input, {});
    for (let i = 0; i < input.values.length; i++) {
      const j = analysis.inputIndex[i]!;
      expect(result.isChangePoint[i]).toBe(analysis.isChange[j] === 1);
      expect(result.confidenceScores[i]).toBe(analysis.confidence[j]);
    }
  });

  it('a trend, straight or bending, is not a change; a shift on a trend is', () => {
    // Threshold 0.9 allows a false alarm on one series in ten (1 − threshold, family-wise), so
    // this counts them over many series rather than asking for none on a few. (Curves far from
    // a parabola over a segment, e.g. many-fold exponential growth with little noise, can still
    // show a "step" near an end: README.md, "Changepoints", limits.)
    let alarms = 0;
    let cases = 0;
    for (let seed = 1; seed <= 15; seed++) {
      const draw = gaussian(seed);
      const line = Array.from({ length: 400 }, (_, i) => 100 + 0.2 * i + draw());
      const bend = Array.from({ length: 400 }, (_, i) => 100 + 0.0005 * (i - 50) ** 2 + draw());
      for (const values of [line, bend]) {
        cases++;
        if (indicesWhere(detectChangePointSeries(plainInput(values), {}).isChangePoint).length > 0) alarms++;
      }
      if (seed <= 5) {
        const stepped = shifted(line, [[250, 8]]);
        const found = indicesWhere(detectChangePointSeries(plainInput(stepped), {}).isChangePoint);
        expect(found, `seed ${seed}`).toHaveLength(1);
        expect(Math.abs(found[0]! - 250)).toBeLessThanOrEqual(3);
      }
    }
    expect(alarms / cases).toBeLessThanOrEqual(0.1);
    // Without the curve in the split test, the same trends would be cut into steps.
    const draw = gaussian(1);
    const steep = Array.from({ length: 400 }, (_, i) => 100 + 0.0005 * (i - 50) ** 2 + draw());
    const bare = detectChangePointSeries(plainInput(steep), { components: { splitTrend: false, detrend: false } });
    expect(indicesWhere(bare.isChangePoint).length).toBeGreaterThan(0);
  });

  it('finds a level shift in a short series (50 points) at the default window of 5', () => {
    for (const seed of [1, 2, 3, 4]) {
      const values = shifted(noiseSeries(50, seed), [[30, 4]]);
      const found = indicesWhere(detectChangePointSeries(plainInput(values), {}).isChangePoint);
      expect(found, `seed ${seed}`).toHaveLength(1);
      expect(Math.abs(found[0]! - 30)).toBeLessThanOrEqual(2);
    }
  });

  it('threshold is the family-wise confidence: fewer false alarms on noise as it rises', () => {
    let loose = 0;
    let strict = 0;
    for (let seed = 1; seed <= 40; seed++) {
      const input = plainInput(noiseSeries(200, 100 + seed));
      loose += indicesWhere(detectChangePointSeries(input, { threshold: 0.3 }).isChangePoint).length > 0 ? 1 : 0;
      strict += indicesWhere(detectChangePointSeries(input, { threshold: 0.9 }).isChangePoint).length > 0 ? 1 : 0;
    }
    expect(strict).toBeLessThanOrEqual(loose);
    expect(strict / 40).toBeLessThanOrEqual(0.1); // at most the 10 % that threshold 0.9 allows
    expect(loose).toBeGreaterThan(strict);
  });
});

describe('long windows (noise estimated on block means)', () => {
  it('finds shifts under a daily cycle of 288 five-minute points, and none without them', () => {
    for (const seed of [1, 2]) {
      const base = sineSeries(8640, { period: 288, noise: 1, seed });
      const input = (values: number[]) => gridInput(values, { granularity: 'minutely', customInterval: 5 });
      const calm = detectChangePointSeries(input(base), {});
      expect(calm.period).toBe(288);
      expect(indicesWhere(calm.isChangePoint), `seed ${seed}`).toEqual([]);
      const stepped = detectChangePointSeries(input(shifted(base, [[3000, 3], [6000, -3]])), {});
      const found = indicesWhere(stepped.isChangePoint);
      expect(found).toHaveLength(2);
      expect(Math.abs(found[0]! - 3000)).toBeLessThanOrEqual(5);
      expect(Math.abs(found[1]! - 6000)).toBeLessThanOrEqual(5);
      expectSeedRules(analyseChangePoints(input(shifted(base, [[3000, 3], [6000, -3]])), {}));
    }
  });
});

describe('familyConfidence and normalUpperTail', () => {
  it('matches the normal tail', () => {
    expect(normalUpperTail(0)).toBeCloseTo(0.5, 7);
    expect(normalUpperTail(1.959964)).toBeCloseTo(0.025, 6);
    expect(normalUpperTail(3)).toBeCloseTo(0.0013499, 6);
    expect(normalUpperTail(6) / 9.8659e-10).toBeCloseTo(1, 4);
  });

  it('is in [0, 1], rises with z and falls with the number of tests', () => {
    let previous = -1;
    for (let z = 0; z <= 10; z += 0.25) {
      const c = familyConfidence(z, 20);
      expect(c).toBeGreaterThanOrEqual(0);
      expect(c).toBeLessThanOrEqual(1);
      expect(c).toBeGreaterThanOrEqual(previous);
      previous = c;
      expect(familyConfidence(z, 200)).toBeLessThanOrEqual(c);
    }
    expect(familyConfidence(0, 1)).toBe(0);
    // One test at z = 1.645 (two-sided p = 0.1): confidence 0.9.
    expect(familyConfidence(1.644854, 1)).toBeCloseTo(0.9, 5);
  });
});
