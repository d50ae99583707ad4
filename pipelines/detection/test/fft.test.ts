import { describe, expect, it } from 'vitest';
import { autocorrelation, fft } from '../src/fft.js';
import { seededRandom } from '../src/random.js';

/** The DFT by its definition, O(n²): X_k = Σ x_j e^{∓2πi jk/n}. */
function naiveDft(re: Float64Array, im: Float64Array, inverse: boolean): { re: Float64Array; im: Float64Array } {
  const n = re.length;
  const outRe = new Float64Array(n);
  const outIm = new Float64Array(n);
  const sign = inverse ? 1 : -1;
  for (let k = 0; k < n; k++) {
    let sumRe = 0;
    let sumIm = 0;
    for (let j = 0; j < n; j++) {
      const angle = (sign * 2 * Math.PI * ((j * k) % n)) / n;
      sumRe += re[j]! * Math.cos(angle) - im[j]! * Math.sin(angle);
      sumIm += re[j]! * Math.sin(angle) + im[j]! * Math.cos(angle);
    }
    outRe[k] = sumRe;
    outIm[k] = sumIm;
  }
  return { re: outRe, im: outIm };
}

function randomVector(n: number, random: () => number): Float64Array {
  return Float64Array.from({ length: n }, () => random() * 2 - 1);
}

describe('fft', () => {
  it('equals the DFT by definition, forward and inverse, for lengths 1 to 512', () => {
    const random = seededRandom(20261122);
    for (const n of [1, 2, 4, 8, 16, 64, 512]) {
      for (const inverse of [false, true]) {
        const re = randomVector(n, random);
        const im = randomVector(n, random);
        const expected = naiveDft(re, im, inverse);
        fft(re, im, inverse);
        for (let k = 0; k < n; k++) {
          expect(re[k]!).toBeCloseTo(expected.re[k]!, 9);
          expect(im[k]!).toBeCloseTo(expected.im[k]!, 9);
        }
      }
    }
  });

  it('gives bit-identical answers on repeated calls of one length (the kept twiddle tables) and past the kept lengths', () => {
    const random = seededRandom(7);
    for (const n of [256, 1 << 17]) {
      const re = randomVector(n, random);
      const im = randomVector(n, random);
      const first = [Float64Array.from(re), Float64Array.from(im)] as const;
      fft(first[0], first[1], false);
      // Another length and the inverse in between, then the same transform again.
      fft(new Float64Array(64), new Float64Array(64), true);
      const again = [Float64Array.from(re), Float64Array.from(im)] as const;
      fft(again[0], again[1], false);
      expect(again[0]).toEqual(first[0]);
      expect(again[1]).toEqual(first[1]);
      // Forward then inverse gives n × the input back.
      fft(again[0], again[1], true);
      for (let k = 0; k < n; k += 997) {
        expect(again[0][k]! / n).toBeCloseTo(re[k]!, 9);
        expect(again[1][k]! / n).toBeCloseTo(im[k]!, 9);
      }
    }
  });

  it('refuses a length that is not a power of two, or two arrays of different lengths', () => {
    expect(() => fft(new Float64Array(6), new Float64Array(6), false)).toThrow(/FFT length 6 is not a power of two/);
    expect(() => fft(new Float64Array(8), new Float64Array(4), false)).toThrow(RangeError);
  });
});

describe('autocorrelation', () => {
  it('equals the biased sample autocorrelation summed directly', () => {
    const random = seededRandom(11);
    for (const n of [2, 3, 17, 288, 1000]) {
      const x = Array.from({ length: n }, (_, i) => Math.sin((2 * Math.PI * i) / 24) + random());
      const mean = x.reduce((a, b) => a + b, 0) / n;
      const c = (lag: number): number => {
        let s = 0;
        for (let i = 0; i + lag < n; i++) s += (x[i]! - mean) * (x[i + lag]! - mean);
        return s;
      };
      const r = autocorrelation(x);
      expect(r.length).toBe(n);
      expect(r[0]).toBeCloseTo(1, 12);
      for (let lag = 0; lag < n; lag++) expect(r[lag]!).toBeCloseTo(c(lag) / c(0), 10);
    }
  });

  it('is all zeros for a constant series and empty for an empty one', () => {
    expect(Array.from(autocorrelation([4, 4, 4, 4]))).toEqual([0, 0, 0, 0]);
    expect(autocorrelation([]).length).toBe(0);
  });
});
