// Realistic synthetic series for the benchmark, fully determined by a seed.
import { seededRandom } from '@adp/detection';

export { seededRandom };

function gaussian(random: () => number): number {
  // Box-Muller; 1 - u keeps the logarithm finite.
  const u = 1 - random();
  const v = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

export interface BenchSeries {
  readonly timestampsMs: number[];
  readonly values: number[];
  /** Indexes of the injected spikes and the level shift, for the record. */
  readonly spikes: number[];
  readonly levelShiftAt: number | null;
}

export interface SeriesShape {
  readonly points: number;
  /** Points per seasonal cycle (288 = one day of 5-minute data). */
  readonly period: number;
  readonly stepMs: number;
  readonly seed: number;
  /** Spikes per 10,000 points. */
  readonly spikeRate?: number;
  /** Shift the level up from this fraction of the series on (none when absent). */
  readonly levelShiftFraction?: number;
}

/**
 * Daily seasonality with a second harmonic, a weekly swell, a slow trend, Gaussian noise, a few
 * spikes and dips of 6-10 noise-sigmas, and optionally a level shift: the shape of real metrics.
 */
export function benchSeries(shape: SeriesShape): BenchSeries {
  const random = seededRandom(shape.seed);
  const start = Date.UTC(2024, 0, 1);
  const timestampsMs: number[] = [];
  const values: number[] = [];
  const spikes: number[] = [];
  const noiseSigma = 2;
  const levelShiftAt =
    shape.levelShiftFraction === undefined ? null : Math.floor(shape.points * shape.levelShiftFraction);
  const spikeProbability = (shape.spikeRate ?? 5) / 10_000;
  for (let i = 0; i < shape.points; i++) {
    const phase = (2 * Math.PI * i) / shape.period;
    let v =
      100 +
      20 * Math.sin(phase) +
      6 * Math.sin(2 * phase + 0.7) +
      4 * Math.sin(phase / 7) +
      0.002 * i +
      noiseSigma * gaussian(random);
    if (levelShiftAt !== null && i >= levelShiftAt) v += 25;
    if (i > shape.period && random() < spikeProbability) {
      v += (random() < 0.5 ? -1 : 1) * noiseSigma * (6 + 4 * random());
      spikes.push(i);
    }
    timestampsMs.push(start + i * shape.stepMs);
    values.push(Math.round(v * 1000) / 1000);
  }
  return { timestampsMs, values, spikes, levelShiftAt };
}
