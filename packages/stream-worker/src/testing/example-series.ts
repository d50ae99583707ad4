// Example fleets for the example producer, the streaming benchmarks and the integration tests: a
// smooth wave with noise per machine and spikes at known indices, deterministic for a seed.
import { REFRACTORY_POINTS, seededRandom } from '@adp/detection';

export interface ExampleSeries {
  readonly machineId: string;
  readonly timestampsMs: number[];
  readonly values: number[];
  /** Indices of the injected spikes. */
  readonly spikes: number[];
}

/** `points` points for each of `machines` machines, with `spikes` spikes each, spread over the second half. */
export function exampleSeries(options: {
  readonly points: number;
  readonly machines: number;
  readonly spikes: number;
  readonly endMs: number;
  readonly stepMs: number;
  readonly seed?: number;
}): ExampleSeries[] {
  // Deterministic (mulberry32), so a run can be repeated.
  const next = seededRandom(options.seed ?? 7);
  return Array.from({ length: options.machines }, (_, m) => {
    // Spread over the second half, one per equal stretch (jittered inside its middle third, less
    // where the stretch is short), so no spike falls in the shadow of another (the engine does
    // not re-alarm within REFRACTORY_POINTS of an event) where the stretches are longer than that.
    const spikes = new Set<number>();
    const half = Math.floor(options.points / 2);
    const count = Math.min(options.spikes, options.points - half);
    const stretch = (options.points - half) / Math.max(1, count);
    const jitter = Math.min(stretch / 3, Math.max(0, stretch - REFRACTORY_POINTS - 1));
    for (let k = 0; k < count; k++) {
      spikes.add(half + Math.floor(stretch * (k + 0.5) + jitter * (next() - 0.5)));
    }
    const level = 40 + 20 * next();
    const amplitude = 2 + 3 * next();
    const values: number[] = [];
    const timestampsMs: number[] = [];
    for (let i = 0; i < options.points; i++) {
      const noise = (next() - 0.5) * 0.6;
      const spike = spikes.has(i) ? amplitude * 8 * (next() < 0.5 ? -1 : 1) : 0;
      values.push(level + amplitude * Math.sin((2 * Math.PI * i) / 48) + noise + spike);
      timestampsMs.push(options.endMs - (options.points - 1 - i) * options.stepMs);
    }
    return { machineId: `machine-${String(m + 1).padStart(3, '0')}`, timestampsMs, values, spikes: [...spikes].sort((a, b) => a - b) };
  });
}
