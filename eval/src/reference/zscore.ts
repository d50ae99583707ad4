import type { StreamingDetector } from '../detectors.js';

export interface RollingZScoreOptions {
  /** Trailing points the mean and standard deviation come from (excluding the current one). */
  readonly windowPoints: number;
  /** Flag when |x - mean| / sd exceeds this. */
  readonly threshold: number;
}

export const ROLLING_ZSCORE_DEFAULTS: RollingZScoreOptions = { windowPoints: 288, threshold: 3 };

/**
 * The textbook baseline: each point's z-score against the trailing window before it. No flags
 * until the window is full. A zero-variance window flags any value that differs from it.
 */
export function rollingZScore(options: RollingZScoreOptions = ROLLING_ZSCORE_DEFAULTS): StreamingDetector {
  const { windowPoints: w, threshold } = options;
  if (!(Number.isInteger(w) && w >= 2)) throw new RangeError('windowPoints must be an integer >= 2');
  return {
    name: 'rolling z-score',
    flags(values) {
      const out = values.map(() => false);
      for (let i = w; i < values.length; i += 1) {
        // Two passes over the window: exact enough for values near 1e9 (sums of squares are not).
        let mean = 0;
        for (let j = i - w; j < i; j += 1) mean += values[j] as number;
        mean /= w;
        let ss = 0;
        for (let j = i - w; j < i; j += 1) {
          const d = (values[j] as number) - mean;
          ss += d * d;
        }
        const sd = Math.sqrt(ss / (w - 1));
        const deviation = Math.abs((values[i] as number) - mean);
        out[i] = sd > 0 ? deviation / sd > threshold : deviation > 1e-12 * (1 + Math.abs(mean));
      }
      return out;
    },
  };
}
