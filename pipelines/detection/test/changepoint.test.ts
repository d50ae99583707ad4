import { describe, expect, it } from 'vitest';
import {
  DEFAULT_STABLE_TREND_WINDOW,
  defaultChangePointThreshold,
  detectChangePointSeries,
  effectiveStableTrendWindow,
  type ChangePointResult,
} from '../src/index.js';
import { gaussian, gridInput, indicesWhere, noiseSeries, plainInput, sineSeries } from './helpers.js';

function expectNear(found: number[], injected: number[], tolerance = 3): void {
  expect(found).toHaveLength(injected.length);
  injected.forEach((at, k) => expect(Math.abs(found[k]! - at), `shift at ${at}, found ${found[k]}`).toBeLessThanOrEqual(tolerance));
}

function expectWellFormed(result: ChangePointResult, n: number, threshold: number): void {
  expect(result.isChangePoint).toHaveLength(n);
  expect(result.confidenceScores).toHaveLength(n);
  for (let i = 0; i < n; i++) {
    const c = result.confidenceScores[i]!;
    expect(c).toBeGreaterThanOrEqual(0);
    expect(c).toBeLessThanOrEqual(1);
    if (result.isChangePoint[i]) expect(c).toBeGreaterThanOrEqual(threshold);
  }
}

function shifted(values: number[], shifts: [number, number][]): number[] {
  const out = [...values];
  for (const [at, by] of shifts) for (let i = at; i < out.length; i++) out[i]! += by;
  return out;
}

describe('detectChangePointSeries', () => {
  it('finds level shifts up and down within a few points', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const values = shifted(noiseSeries(600, seed), [[200, 5], [400, -8]]);
      for (const input of [plainInput(values), gridInput(values, { granularity: 'daily' })]) {
        const result = detectChangePointSeries(input, {});
        expect(result.period).toBe(0);
        expectNear(indicesWhere(result.isChangePoint), [200, 400]);
        expectWellFormed(result, values.length, 0.9);
      }
    }
  });

  it('finds a level shift under a daily cycle', () => {
    for (const seed of [1, 2, 3]) {
      const values = shifted(sineSeries(24 * 30, { period: 24, noise: 1, seed }), [[300, 4]]);
      const result = detectChangePointSeries(gridInput(values), {});
      expect(result.period).toBe(24);
      expectNear(indicesWhere(result.isChangePoint), [300]);
      expectWellFormed(result, values.length, 0.91);
    }
  });

  it('finds none on stationary series: noise, a daily cycle, AR(1) noise, a steady trend', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const draw = gaussian(seed);
      let level = 0;
      const ar = Array.from({ length: 2000 }, () => (level = 0.8 * level + draw()));
      const trend = Array.from({ length: 500 }, (_, i) => 0.05 * i + draw());
      const cases = [
        plainInput(noiseSeries(2000, seed)),
        gridInput(noiseSeries(2000, seed), { granularity: 'daily' }),
        gridInput(sineSeries(24 * 30, { period: 24, noise: 1, seed })),
        gridInput(ar, { granularity: 'daily' }),
        plainInput(trend),
      ];
      for (const input of cases) {
        const result = detectChangePointSeries(input, {});
        expect(indicesWhere(result.isChangePoint), `seed ${seed}`).toEqual([]);
        expectWellFormed(result, input.values.length, 0.9);
      }
    }
  });

  it('takes stableTrendWindow as the gradient window: short windows separate close shifts', () => {
    const values = shifted(noiseSeries(300, 7, 0, 0.5), [[100, 6], [130, -6], [160, 6]]);
    const narrow = detectChangePointSeries(plainInput(values), { stableTrendWindow: 10 });
    expectNear(indicesWhere(narrow.isChangePoint), [100, 130, 160]);
    // A window wider than the spacing blurs them: the ±k local-maximum rule keeps at most the
    // largest within reach.
    const wide = detectChangePointSeries(plainInput(values), { stableTrendWindow: 40 });
    expect(indicesWhere(wide.isChangePoint).length).toBeLessThan(3);
  });

  it('keeps changepoints at least a period apart and honours the threshold', () => {
    const values = shifted(sineSeries(24 * 40, { period: 24, noise: 1, seed: 9 }), [[240, 5], [500, -3], [700, 8]]);
    const input = gridInput(values);
    const loose = detectChangePointSeries(input, { threshold: 0.5 });
    const strict = detectChangePointSeries(input, { threshold: 0.99 });
    const looseAt = indicesWhere(loose.isChangePoint);
    const strictAt = indicesWhere(strict.isChangePoint);
    for (const i of strictAt) expect(looseAt).toContain(i);
    for (let k = 1; k < looseAt.length; k++) expect(looseAt[k]! - looseAt[k - 1]!).toBeGreaterThanOrEqual(24);
    expectNear(looseAt, [240, 500, 700]);
    expectWellFormed(strict, values.length, 0.99);
  });

  it('on the vendor v1.1 example (5-minute counter, period 0) finds the two largest jumps', () => {
    // The jumps at 95 (+406k) and 225 (+650k) of the vendor's 257-point series, rebuilt here as
    // a flat-stepped counter with the same shape of plateaus and small increments.
    const draw = gaussian(3);
    const values = Array.from({ length: 257 }, (_, i) => {
      let v = 1_650_000 + i * 50 + 1000 * draw();
      if (i >= 26) v += 130_000;
      if (i >= 95) v += 406_000;
      if (i >= 113) v -= 134_000;
      if (i >= 133) v -= 272_000;
      if (i >= 181) v += 313_000;
      if (i >= 225) v += 650_000;
      return v;
    });
    const input = gridInput(values, { granularity: 'minutely', customInterval: 5 });
    const result = detectChangePointSeries(input, { period: 0, stableTrendWindow: 10, threshold: 0.99 });
    const found = indicesWhere(result.isChangePoint);
    expect(found).toContain(95);
    expect(found).toContain(225);
    expectWellFormed(result, 257, 0.99);
  });

  it('uses the vendor defaults per granularity, capped to the series', () => {
    expect(defaultChangePointThreshold('hourly')).toBe(0.91);
    expect(defaultChangePointThreshold('daily')).toBe(0.9);
    expect(DEFAULT_STABLE_TREND_WINDOW.minutely).toBe(72);
    expect(effectiveStableTrendWindow('minutely', 8640)).toBe(72);
    expect(effectiveStableTrendWindow('none', 257)).toBe(12);
    expect(effectiveStableTrendWindow('none', 50)).toBe(5);
    expect(effectiveStableTrendWindow('hourly', 100, 10)).toBe(10);
  });

  it('never reports imputed points and maps results back to input order', () => {
    const full = shifted(noiseSeries(400, 4), [[200, 6]]);
    const missing = new Set([50, 51, 52, 300]);
    const input = gridInput(full, { missing, granularity: 'daily', imputeMode: 'linear' });
    const result = detectChangePointSeries(input, {});
    expectWellFormed(result, full.length - missing.size, 0.9);
    // Input index of slot 200 is 197 (three slots before it are missing).
    expectNear(indicesWhere(result.isChangePoint), [197]);
  });
});
