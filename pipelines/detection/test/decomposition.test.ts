import { describe, expect, it } from 'vitest';
import { cycleMedianScale, FEW_CYCLES, fitHistory, fitSeasonal, movingAverageResiduals, movingAverageResidualsInto, prefixSums } from '../src/decomposition.js';
import { robustScale, scaleFloor } from '../src/robust.js';
import { gaussian } from './helpers.js';

function medianOf(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const h = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[h]! : (sorted[h - 1]! + sorted[h]!) / 2;
}

function grid(n: number): { slots: Float64Array; imputed: Uint8Array } {
  return { slots: Float64Array.from({ length: n }, (_, i) => i), imputed: new Uint8Array(n) };
}

/** A daily cycle of `period` points (low night, high day) with Gaussian noise of sd 1. */
function dailyCycles(n: number, period: number, seed: number): Float64Array {
  const draw = gaussian(seed);
  return Float64Array.from({ length: n }, (_, i) => ((i % period) < period / 2 ? 20 : 60) + draw());
}

describe('fitSeasonal: each point over the other cycles', () => {
  it('writes the median of the other points of its phase, centred as the profile', () => {
    const period = 7;
    const n = 7 * 4 + 3;
    const draw = gaussian(3);
    const detrended = Float64Array.from({ length: n }, () => draw());
    const { slots, imputed } = grid(n);
    const others = new Float64Array(n);
    const fit = fitSeasonal(detrended, slots, imputed, period, true, others);
    for (let i = 0; i < n; i++) {
      const k = i % period;
      const phase: number[] = [];
      const rest: number[] = [];
      for (let j = k; j < n; j += period) {
        phase.push(detrended[j]!);
        if (j !== i) rest.push(detrended[j]!);
      }
      // profile[k] = the phase's median − the centre.
      const centre = medianOf(phase) - fit.profile[k]!;
      expect(others[i]).toBeCloseTo(medianOf(rest) - centre, 12);
    }
  });

  it('gives an imputed point, and a point alone in its phase, the profile value', () => {
    const period = 5;
    const n = 12; // phases 0 and 1 have three points, the rest two
    const detrended = Float64Array.from({ length: n }, (_, i) => Math.sin(i) * 3);
    const { slots, imputed } = grid(n);
    imputed[7] = 1; // phase 2 keeps a single observed point, 2
    const others = new Float64Array(n);
    const fit = fitSeasonal(detrended, slots, imputed, period, true, others);
    expect(others[7]).toBe(fit.profile[2]);
    expect(others[2]).toBe(fit.profile[2]);
    expect(others[3]).not.toBe(fit.profile[3]);
  });
});

describe('fitHistory: few cycles are deseasonalised point by point', () => {
  it(`returns each point's value over the other cycles below ${FEW_CYCLES} cycles, and none from there on`, () => {
    const period = 40;
    const few = dailyCycles(FEW_CYCLES * period - 1, period, 5);
    const enough = dailyCycles(FEW_CYCLES * period, period, 5);
    const a = grid(few.length);
    const b = grid(enough.length);
    const fitted = fitHistory(few, a.slots, a.imputed, period);
    expect(fitted.pointSeasonal).not.toBeNull();
    expect(fitHistory(enough, b.slots, b.imputed, period).pointSeasonal).toBeNull();
    expect(fitHistory(few, a.slots, a.imputed, 0).pointSeasonal).toBeNull();
    // The worker's judge between refits keeps the profile: it asks for none.
    expect(fitHistory(few, a.slots, a.imputed, period, false).pointSeasonal).toBeNull();
    expect(fitHistory(few, a.slots, a.imputed, period, false).profile).toEqual(fitted.profile);
    // The same values fitSeasonal writes for the one-period moving average's residuals.
    const others = new Float64Array(few.length);
    fitSeasonal(movingAverageResiduals(few, period), a.slots, a.imputed, period, true, others);
    expect(Array.from(fitted.pointSeasonal!)).toEqual(Array.from(others));
  });
});

describe('movingAverageResidualsInto', () => {
  it('equals movingAverageResiduals from the prefix sums, for windows shorter and longer than the series', () => {
    const draw = gaussian(9);
    const values = Float64Array.from({ length: 50 }, () => draw());
    const prefix = prefixSums(values);
    for (const window of [1, 7, 24, 50, 80]) {
      const out = movingAverageResidualsInto(values, prefix, window, new Float64Array(50));
      expect(Array.from(out)).toEqual(Array.from(movingAverageResiduals(values, window)));
    }
  });
});

describe('cycleMedianScale: the seasonal noise when one cycle is anomalous', () => {
  const period = 96;
  const n = 4 * period;
  const { slots, imputed } = grid(n);

  it('stays near the clean cycles while the moving-average fit widens', () => {
    const clean = dailyCycles(n, period, 11);
    const odd = clean.slice();
    // The third cycle's day stays at night level (a missed daily rise).
    for (let i = 2 * period + period / 2; i < 3 * period; i++) odd[i] = odd[i]! - 40;
    const scaleOf = (x: Float64Array): number => robustScale(fitHistory(x, slots, imputed, period).scaleResiduals, scaleFloor(x));
    const cleanCycles = cycleMedianScale(clean, slots, imputed, period, scaleFloor(clean));
    const oddCycles = cycleMedianScale(odd, slots, imputed, period, scaleFloor(odd));
    // Noise sd 1: leave-one-out residuals of three others spread about 1.2.
    expect(cleanCycles).toBeGreaterThan(0.8);
    expect(cleanCycles).toBeLessThan(1.6);
    expect(oddCycles).toBeLessThan(1.2 * cleanCycles);
    expect(scaleOf(odd)).toBeGreaterThan(2 * scaleOf(clean));
  });

  it('is +Infinity without a full cycle', () => {
    const x = dailyCycles(period - 1, period, 2);
    const g = grid(x.length);
    expect(cycleMedianScale(x, g.slots, g.imputed, period, 1e-9)).toBe(Number.POSITIVE_INFINITY);
    expect(cycleMedianScale(new Float64Array(0), new Float64Array(0), new Uint8Array(0), period, 1e-9)).toBe(Number.POSITIVE_INFINITY);
  });
});
