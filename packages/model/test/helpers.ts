// Synthetic "machine" series for the model tests: deterministic, no I/O.
import { seededRandom } from '@adp/detection';

/** Seeded uniform [0, 1) (mulberry32). */
export const seeded = seededRandom;

/** A healthy machine: daily-like period of 24 points plus a faster harmonic and small noise. */
export function healthySeries(points: number, seed: number, offset = 0): number[] {
  const random = seeded(seed);
  return Array.from({ length: points }, (_, i) => {
    const t = i + offset;
    return 40 + 6 * Math.sin((2 * Math.PI * t) / 24) + 1.5 * Math.sin((2 * Math.PI * t) / 6) + (random() - 0.5) * 0.8;
  });
}

export function mean(values: ArrayLike<number>, from = 0): number {
  let sum = 0;
  for (let i = from; i < values.length; i++) sum += values[i] ?? 0;
  return sum / Math.max(1, values.length - from);
}
