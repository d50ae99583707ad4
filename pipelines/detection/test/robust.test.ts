import { describe, expect, it } from 'vitest';
import { median, medianInPlace, medianOf, quantile, robustScale, runningMedian, selectInPlace, SHOULDER_QUANTILE, shoulderScale } from '../src/robust.js';
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

describe('medianOf', () => {
  it("equals medianInPlace's median on every kind of input, leaving the values untouched", () => {
    const random = seededRandom(20261207);
    const makers: Array<(i: number, n: number) => number> = [
      () => random() * 100 - 50,
      () => Math.floor(random() * 4), // heavy ties: the middle ranks share a bucket
      (i) => i, // sorted
      (i, n) => n - i, // reversed
      () => 5, // constant: no range to bucket
      (i) => Math.sin(i / 7) + random(), // a cycle with noise
      () => (random() < 0.01 ? 1e12 : random()), // far outliers: nearly every point in one bucket
      () => (random() < 0.5 ? -0 : 0) + (random() < 0.3 ? 1 : 0), // signed zeros
      (i) => (i % 101 === 7 ? Number.NaN : random()), // NaN: quickselect's order, as before
      (i) => (i === 3 ? Number.POSITIVE_INFINITY : random()), // an infinite range
      () => 1e-300 * random(), // a range too narrow to scale: quickselect
    ];
    for (let t = 0; t < 2500; t++) {
      const n = 1 + Math.floor(random() * (t % 5 === 0 ? 5000 : 1200));
      const make = makers[t % makers.length]!;
      const a = Float64Array.from({ length: n }, (_, i) => make(i, n));
      const before = Float64Array.from(a);
      const expected = medianInPlace(Float64Array.from(a));
      const value = medianOf(a);
      expect(Object.is(value, expected) || value === expected, `case ${t} (n ${n}): ${value} against ${expected}`).toBe(true);
      expect(a.every((x, i) => Object.is(x, before[i])), `case ${t}: values untouched`).toBe(true);
    }
  });
});

describe('shoulderScale', () => {
  it('agrees with the MAD on Gaussian noise, and the MAD wins when the shoulders are narrow', () => {
    const random = seededRandom(7);
    const gaussian = Float64Array.from({ length: 20_000 }, () => Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random()));
    const mad = robustScale(gaussian, 1e-9);
    expect(mad).toBeCloseTo(1, 1);
    expect(shoulderScale(gaussian, 1e-9)).toBeGreaterThanOrEqual(mad);
    expect(shoulderScale(gaussian, 1e-9) / mad).toBeLessThan(1.03);
    // Uniform noise: the MAD (0.5 × 1.4826 = 0.741) is above the shoulders' 0.8 / 1.2816 = 0.624.
    const uniform = Float64Array.from({ length: 20_001 }, (_, i) => -1 + (2 * i) / 20_000);
    expect(shoulderScale(uniform, 1e-9)).toBeCloseTo(robustScale(uniform, 1e-9), 12);
  });

  it('follows the shoulders of readings quantized to a few levels, where the MAD collapses', () => {
    // 60 % at 0, 25 % at +1, 15 % at -1: median 0, MAD 0 (the mean-deviation fallback gives 0.5);
    // the 0.8-quantile of |x| is 1, so the scale is 1 / 1.2816.
    const values = Float64Array.from({ length: 1000 }, (_, i) => (i % 20 < 12 ? 0 : i % 20 < 17 ? 1 : -1));
    expect(robustScale(values, 1e-9)).toBeCloseTo(0.4 * 1.2533, 12);
    expect(SHOULDER_QUANTILE).toBe(0.8);
    expect(shoulderScale(values, 1e-9)).toBeCloseTo(1 / 1.2815515655446004, 12);
  });

  it('is not moved by outliers on up to a fifth of the points, and keeps the floor', () => {
    const base = Float64Array.from({ length: 1000 }, (_, i) => Math.sin(i * 0.7) * 0.1);
    const clean = shoulderScale(base, 1e-9);
    const spiked = base.slice();
    for (let i = 0; i < 150; i++) spiked[i * 6] = 1e6;
    expect(shoulderScale(spiked, 1e-9)).toBeLessThan(clean * 1.6);
    expect(shoulderScale(new Float64Array(50).fill(3), 0.25)).toBe(0.25);
    expect(shoulderScale(new Float64Array(0), 0.5)).toBe(0.5);
  });
});

describe('runningMedian', () => {
  /** The median of x[from, to) by sorting, leaving out index `skip` (the mean of the middle two of an even count). */
  function sortedMedian(x: Float64Array, from: number, to: number, skip = -1): number {
    const v = Array.from(x.subarray(from, to)).filter((_, k) => from + k !== skip).sort((a, b) => a - b);
    const h = v.length >> 1;
    return v.length % 2 === 1 ? v[h]! : (v[h - 1]! + v[h]!) / 2;
  }

  it('equals the sorted median of every centred window, and of it without the point (leaveOut), on every kind of input', () => {
    const random = seededRandom(31);
    const makers: Array<(i: number) => number> = [
      () => random() * 10,
      () => Math.floor(random() * 3), // heavy ties
      (i) => i * 0.5, // rising
      (i) => Math.sin(i / 5) + (i === 40 ? 50 : 0), // a cycle and a spike
    ];
    for (const make of makers) {
      for (const [n, w] of [[200, 25], [200, 7], [120, 41], [30, 29], [5, 3]] as const) {
        const x = Float64Array.from({ length: n }, (_, i) => make(i));
        const leaveOut = new Float64Array(n);
        const out = runningMedian(x, w, 'clamp', leaveOut);
        const half = (w - 1) >> 1;
        for (let c = half; c + half < n; c++) {
          expect(out[c]).toBe(sortedMedian(x, c - half, c + half + 1));
          expect(leaveOut[c]).toBe(sortedMedian(x, c - half, c + half + 1, c));
        }
        // Clamped edges: the first and last full windows' medians; the edge points' leaveOut is that value.
        for (let i = 0; i < half; i++) {
          expect(out[i]).toBe(out[half]);
          expect(out[n - 1 - i]).toBe(out[n - 1 - half]);
          expect(leaveOut[i]).toBe(out[i]);
        }
      }
    }
  });

  it("draws the edges along a Theil-Sen line with 'line', and shrinks the window to the series", () => {
    const x = Float64Array.from({ length: 50 }, (_, i) => 3 + 2 * i);
    const out = runningMedian(x, 11, 'line');
    // On a straight line every window's median is its centre, and the edge lines are that line.
    for (let i = 0; i < 50; i++) expect(out[i]).toBeCloseTo(3 + 2 * i, 9);
    // A window longer than the series becomes the longest odd one that fits (7 of 8 points).
    // Centres 3 and 4 only: the first window's median (4) to their left, the last one's (5) to their right.
    const short = Float64Array.from([1, 7, 3, 5, 2, 6, 4, 100]);
    expect(Array.from(runningMedian(short, 99, 'clamp'))).toEqual([4, 4, 4, 4, 5, 5, 5, 5]);
    expect(runningMedian(new Float64Array(0), 5, 'clamp').length).toBe(0);
  });
});
