import { describe, expect, it } from 'vitest';
import { median, medianInPlace, quantile, selectInPlace } from '../src/robust.js';
import { seededRandom } from '../src/random.js';

describe('selectInPlace', () => {
  it('finds the k-th smallest value and partitions the range around it, on every kind of input', () => {
    const random = seededRandom(20261122);
    const makers: Array<(i: number, n: number) => number> = [
      () => random() * 100 - 50,
      () => Math.floor(random() * 4), // heavy ties
      (i) => i, // sorted
      (i, n) => n - i, // reversed
      () => 5, // constant
      (i) => Math.sin(i / 7) + random(), // a cycle with noise
    ];
    for (let t = 0; t < 3000; t++) {
      // Mostly short ranges; every tenth long enough for the sampled narrowing (over 600 values).
      const n = 1 + Math.floor(random() * (t % 10 === 0 ? 9000 : 1500));
      const make = makers[t % makers.length]!;
      const a = Float64Array.from({ length: n }, (_, i) => make(i, n));
      const lo = Math.floor(random() * n * 0.2);
      const hi = n - 1 - Math.floor(random() * n * 0.2);
      if (hi < lo) continue;
      const k = lo + Math.floor(random() * (hi - lo + 1));
      const sorted = Float64Array.from(a.subarray(lo, hi + 1)).sort();
      const before = Float64Array.from(a);
      const value = selectInPlace(a, k, lo, hi);
      expect(value, `case ${t}`).toBe(sorted[k - lo]);
      let partitioned = true;
      for (let i = lo; i < k; i++) if (a[i]! > value) partitioned = false;
      for (let i = k + 1; i <= hi; i++) if (a[i]! < value) partitioned = false;
      expect(partitioned, `case ${t}: partitioned around k`).toBe(true);
      // Only the range moved, and it still holds the same values.
      let outsideKept = true;
      for (let i = 0; i < n; i++) if ((i < lo || i > hi) && a[i] !== before[i]) outsideKept = false;
      expect(outsideKept, `case ${t}: outside the range untouched`).toBe(true);
      const after = Float64Array.from(a.subarray(lo, hi + 1)).sort();
      expect(after.every((x, i) => x === sorted[i]), `case ${t}: the same values`).toBe(true);
    }
  });

  it('gives the medians and quantiles of sorted data', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(medianInPlace(new Float64Array(0))).toBeNaN();
    const many = Float64Array.from({ length: 2001 }, (_, i) => (i * 7919) % 2001);
    expect(medianInPlace(Float64Array.from(many))).toBe(1000);
    expect(medianInPlace(Float64Array.from(many.subarray(0, 2000)))).toBe(Float64Array.from(many.subarray(0, 2000)).sort().slice(999, 1001).reduce((x, y) => x + y) / 2);
    expect(quantile(many, 0.25)).toBe(500);
    expect(quantile([0, 10], 0.25)).toBe(2.5);
  });
});
