// Deterministic CSV files for the browser tests and the dashboard benchmark.

/** A small linear congruential generator: the same numbers on every run and machine. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

export interface CsvSeries {
  readonly csv: string;
  readonly points: readonly { timestamp: string; value: number }[];
}

/**
 * `count` minutely points from 2025-06-01T10:00Z of a 60-minute cycle with a little noise,
 * +`spike` at each index in `spikes`, and +`shift` from index `shiftAt` on.
 */
export function cycleCsv(
  count: number,
  options: { seed?: number; spikes?: readonly number[]; spike?: number; shiftAt?: number; shift?: number } = {},
): CsvSeries {
  const next = random(options.seed ?? 4);
  const spikes = new Set(options.spikes ?? []);
  const start = Date.UTC(2025, 5, 1, 10, 0);
  const points = Array.from({ length: count }, (_, i) => ({
    timestamp: new Date(start + i * 60_000).toISOString(),
    value: Math.round((50 + 5 * Math.sin((2 * Math.PI * i) / 60) + (next() - 0.5) * 0.6 + (spikes.has(i) ? (options.spike ?? 15) : 0) + (options.shiftAt !== undefined && i >= options.shiftAt ? (options.shift ?? 0) : 0)) * 100) / 100,
  }));
  return { points, csv: `timestamp,value\n${points.map((p) => `${p.timestamp.replace('.000Z', 'Z')},${p.value}`).join('\n')}\n` };
}

/** `count` minutely rows of two channels (`temp`, `rpm`) on cycles of their own, as a multivariate CSV. */
export function multivariateCsv(count: number, options: { seed?: number } = {}): { readonly csv: string } {
  const next = random(options.seed ?? 5);
  const start = Date.UTC(2025, 5, 1, 10, 0);
  const rows = Array.from({ length: count }, (_, i) => {
    const temp = Math.round((60 + 3 * Math.sin((2 * Math.PI * i) / 45) + (next() - 0.5) * 0.4) * 100) / 100;
    const rpm = Math.round(1500 + 40 * Math.cos((2 * Math.PI * i) / 30) + (next() - 0.5) * 6);
    return `${new Date(start + i * 60_000).toISOString().replace('.000Z', 'Z')},${temp},${rpm}`;
  });
  return { csv: `timestamp,temp,rpm\n${rows.join('\n')}\n` };
}
