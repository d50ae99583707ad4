import { describe, expect, it } from 'vitest';
import type { StreamingDetector } from '../src/detectors.js';
import { fft } from '../src/reference/fft.js';
import { nullDetector, zeroChangePoints } from '../src/reference/null.js';
import { spectralResidual } from '../src/reference/spectral-residual.js';
import { rollingZScore } from '../src/reference/zscore.js';

/** Deterministic pseudo-random numbers in [0, 1) (a linear congruential generator). */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function seasonalWithSpike(n: number, spikeAt: number): number[] {
  const rnd = lcg(7);
  return Array.from({ length: n }, (_, i) => 10 + Math.sin((2 * Math.PI * i) / 24) + 0.05 * rnd() + (i === spikeAt ? 8 : 0));
}

describe('fft', () => {
  it('matches a naive DFT and round-trips', () => {
    const n = 16;
    const rnd = lcg(1);
    const x = Array.from({ length: n }, () => rnd() - 0.5);
    const re = Float64Array.from(x);
    const im = new Float64Array(n);
    fft(re, im);
    for (let k = 0; k < n; k += 1) {
      let sr = 0;
      let si = 0;
      for (let t = 0; t < n; t += 1) {
        sr += (x[t] as number) * Math.cos((-2 * Math.PI * k * t) / n);
        si += (x[t] as number) * Math.sin((-2 * Math.PI * k * t) / n);
      }
      expect(re[k]).toBeCloseTo(sr, 10);
      expect(im[k]).toBeCloseTo(si, 10);
    }
    fft(re, im, true);
    x.forEach((v, t) => expect(re[t]).toBeCloseTo(v, 12));
  });

  it('rejects lengths that are not powers of two', () => {
    expect(() => fft(new Float64Array(12), new Float64Array(12))).toThrow(RangeError);
  });
});

/** No look-ahead: the flags of a prefix equal the prefix of the flags. */
function expectCausal(detector: StreamingDetector, values: readonly number[]): void {
  const full = detector.flags(values);
  for (const k of [300, 301, 350, values.length - 1]) {
    expect(detector.flags(values.slice(0, k))).toEqual(full.slice(0, k));
  }
}

describe('reference detectors', () => {
  const values = seasonalWithSpike(400, 330);

  it('rolling z-score flags the spike, nothing before its window is full, and is causal', () => {
    const flags = rollingZScore({ windowPoints: 48, threshold: 3 }).flags(values);
    expect(flags[330]).toBe(true);
    expect(flags.slice(0, 48).some(Boolean)).toBe(false);
    expect(flags.filter(Boolean).length).toBeLessThan(10);
    expectCausal(rollingZScore({ windowPoints: 48, threshold: 3 }), values);
  });

  it('rolling z-score on a flat window flags any change and nothing else', () => {
    const flat = [...new Array<number>(20).fill(5), 6, 5];
    expect(rollingZScore({ windowPoints: 10, threshold: 3 }).flags(flat).flatMap((f, i) => (f ? [i] : []))).toEqual([20]);
  });

  it('spectral residual flags the spike and is causal', () => {
    const sr = spectralResidual();
    const flags = sr.flags(values);
    expect(flags[330]).toBe(true);
    expect(flags.slice(0, 250).some(Boolean)).toBe(false); // 251 real points needed
    expectCausal(sr, values);
  });

  it('spectral residual stays quiet on a constant series', () => {
    expect(spectralResidual().flags(new Array<number>(400).fill(3)).some(Boolean)).toBe(false);
  });

  it('null and zero never fire', () => {
    expect(nullDetector().flags(values).some(Boolean)).toBe(false);
    expect(zeroChangePoints().changePoints(values)).toEqual([]);
  });
});
