// Spectral residual (Ren et al., "Time-Series Anomaly Detection Service at Microsoft", KDD 2019),
// run in streaming form: every point is scored from a trailing window that ends at it.
import type { StreamingDetector } from '../detectors.js';
import { fft, isPowerOfTwo } from './fft.js';

export interface SpectralResidualOptions {
  /** Transform length, a power of two: the trailing real points plus the extrapolated ones. */
  readonly fftLength: number;
  /** Points extrapolated after the current one so it is not at the window's edge (paper: 5). */
  readonly extendPoints: number;
  /** Preceding points whose gradients estimate the extrapolation (paper: m = 5). */
  readonly gradientPoints: number;
  /** Width of the moving average over the log amplitude spectrum (paper: q = 3). */
  readonly averagingWidth: number;
  /** Preceding saliency values the current one is compared with (paper: z = 21). */
  readonly localPoints: number;
  /** Flag when (S - mean S) / mean S exceeds this (paper: tau = 3). */
  readonly threshold: number;
}

export const SPECTRAL_RESIDUAL_DEFAULTS: SpectralResidualOptions = {
  fftLength: 256,
  extendPoints: 5,
  gradientPoints: 5,
  averagingWidth: 3,
  localPoints: 21,
  threshold: 3,
};

const TINY = 1e-12;

/**
 * Saliency map of `x` (length a power of two): |IFFT(exp(R + iP))| with R the spectral residual
 * log A - mean_q(log A) and P the phase. `re`/`im`/`logAmp` are scratch arrays of x's length.
 */
export function saliencyMap(
  x: Float64Array,
  averagingWidth: number,
  re: Float64Array = new Float64Array(x.length),
  im: Float64Array = new Float64Array(x.length),
  logAmp: Float64Array = new Float64Array(x.length),
): Float64Array {
  const n = x.length;
  re.set(x);
  im.fill(0);
  fft(re, im);
  for (let k = 0; k < n; k += 1) {
    logAmp[k] = Math.log(Math.max(Math.hypot(re[k] as number, im[k] as number), TINY));
  }
  const half = Math.floor(averagingWidth / 2);
  for (let k = 0; k < n; k += 1) {
    const amp = Math.hypot(re[k] as number, im[k] as number);
    if (amp <= TINY) {
      re[k] = 0;
      im[k] = 0;
      continue;
    }
    let sum = 0;
    let count = 0;
    for (let j = Math.max(0, k - half); j <= Math.min(n - 1, k + half); j += 1) {
      sum += logAmp[j] as number;
      count += 1;
    }
    const residual = (logAmp[k] as number) - sum / count;
    // exp(R + iP) = exp(R) * (re + i im) / |re + i im|.
    const scale = Math.exp(residual) / amp;
    re[k] = (re[k] as number) * scale;
    im[k] = (im[k] as number) * scale;
  }
  fft(re, im, true);
  const out = new Float64Array(n);
  for (let k = 0; k < n; k += 1) out[k] = Math.hypot(re[k] as number, im[k] as number);
  return out;
}

export function spectralResidual(
  options: SpectralResidualOptions = SPECTRAL_RESIDUAL_DEFAULTS,
): StreamingDetector {
  const { fftLength, extendPoints, gradientPoints, averagingWidth, localPoints, threshold } = options;
  const realPoints = fftLength - extendPoints;
  if (!isPowerOfTwo(fftLength) || realPoints <= localPoints + gradientPoints + 1) {
    throw new RangeError('fftLength must be a power of two well above extendPoints + localPoints');
  }
  return {
    name: 'spectral residual',
    flags(values) {
      const out = values.map(() => false);
      const x = new Float64Array(fftLength);
      const re = new Float64Array(fftLength);
      const im = new Float64Array(fftLength);
      const logAmp = new Float64Array(fftLength);
      const current = realPoints - 1;
      for (let i = realPoints - 1; i < values.length; i += 1) {
        for (let j = 0; j < realPoints; j += 1) x[j] = values[i - realPoints + 1 + j] as number;
        // Extrapolate the paper's way (x_{n+1} = x_{n-m+1} + mean gradient * m) but from the point
        // before the current one, as Microsoft's reference implementation does: extrapolating from
        // the current point would continue its own jump and hide it (a spike becomes a step).
        const last = current - 1;
        let gradient = 0;
        for (let k = 1; k <= gradientPoints; k += 1) {
          gradient += ((x[last] as number) - (x[last - k] as number)) / k;
        }
        gradient /= gradientPoints;
        const estimate = (x[last - gradientPoints + 1] as number) + gradient * gradientPoints;
        x.fill(estimate, realPoints);
        const s = saliencyMap(x, averagingWidth, re, im, logAmp);
        let local = 0;
        for (let j = current - localPoints; j < current; j += 1) local += s[j] as number;
        local /= localPoints;
        const score = ((s[current] as number) - local) / Math.max(local, TINY);
        out[i] = score > threshold;
      }
      return out;
    },
  };
}
