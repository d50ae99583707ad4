// Synthetic series for the engine's tests: fixed seeds, so every run sees the same noise.
import type { Granularity, ImputeMode, SeriesInput } from '../src/index.js';
import { seededRandom } from '../src/random.js';

export { seededRandom };

/** Standard normal draws (Box–Muller) from a seeded PRNG. */
export function gaussian(seed: number): () => number {
  const random = seededRandom(seed);
  return () => {
    const u = Math.max(random(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
  };
}

export interface SineOptions {
  readonly period: number;
  readonly amplitude?: number;
  readonly noise?: number;
  readonly level?: number;
  readonly trendPerPoint?: number;
  readonly seed?: number;
}

/** level + trend + amplitude × sin(2πi/period) + Gaussian noise. */
export function sineSeries(n: number, o: SineOptions): number[] {
  const draw = gaussian(o.seed ?? 1);
  const amplitude = o.amplitude ?? 10;
  const noise = o.noise ?? 1;
  const level = o.level ?? 100;
  const trend = o.trendPerPoint ?? 0;
  return Array.from({ length: n }, (_, i) => level + trend * i + amplitude * Math.sin((2 * Math.PI * i) / o.period) + noise * draw());
}

/** White noise around a level. */
export function noiseSeries(n: number, seed: number, level = 100, sd = 1): number[] {
  const draw = gaussian(seed);
  return Array.from({ length: n }, () => level + sd * draw());
}

const STEP_MS: Partial<Record<Granularity, number>> = {
  weekly: 604_800_000,
  daily: 86_400_000,
  hourly: 3_600_000,
  minutely: 60_000,
  secondly: 1000,
  microsecond: 1,
};

export interface InputOptions {
  readonly granularity?: Granularity;
  readonly customInterval?: number;
  readonly imputeMode?: ImputeMode;
  readonly imputeFixedValue?: number;
  readonly startMs?: number;
  /** Slots to leave out (gaps); values keep their positions. */
  readonly missing?: ReadonlySet<number>;
}

/** A gridded SeriesInput from values at consecutive slots, minus the `missing` ones. */
export function gridInput(values: readonly number[], o: InputOptions = {}): SeriesInput {
  const granularity = o.granularity ?? 'hourly';
  const customInterval = o.customInterval ?? 1;
  const step = (STEP_MS[granularity] ?? 3_600_000) * customInterval;
  const start = o.startMs ?? Date.UTC(2024, 0, 1);
  const timestampsMs: number[] = [];
  const kept: number[] = [];
  values.forEach((v, i) => {
    if (o.missing?.has(i)) return;
    timestampsMs.push(start + i * step);
    kept.push(v);
  });
  const base = { timestampsMs, values: kept, granularity, customInterval, imputeMode: o.imputeMode ?? 'auto' };
  return o.imputeFixedValue === undefined ? base : { ...base, imputeFixedValue: o.imputeFixedValue };
}

/** A series without a grid (granularity none). */
export function plainInput(values: readonly number[]): SeriesInput {
  return { timestampsMs: null, values, granularity: 'none', customInterval: 1, imputeMode: 'auto' };
}

export function indicesWhere(flags: readonly boolean[]): number[] {
  return flags.flatMap((f, i) => (f ? [i] : []));
}
