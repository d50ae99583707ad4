// Small synthetic series for the CLI tests: a clean seasonal signal with known spikes.

export interface SyntheticOptions {
  readonly points: number;
  readonly period: number;
  /** Indexes that get a large upward jump. */
  readonly spikes?: readonly number[];
  /** Index from which the level is shifted up by `shiftBy`. */
  readonly shiftAt?: number;
  readonly shiftBy?: number;
}

/** Deterministic small noise, so tests do not depend on a random generator. */
function wobble(i: number): number {
  return Math.sin(i * 12.9898) * 0.3;
}

export function syntheticValues(opts: SyntheticOptions): number[] {
  const values: number[] = [];
  for (let i = 0; i < opts.points; i++) {
    let v = 100 + 10 * Math.sin((2 * Math.PI * i) / opts.period) + wobble(i);
    if (opts.spikes?.includes(i)) v += 80;
    if (opts.shiftAt !== undefined && i >= opts.shiftAt) v += opts.shiftBy ?? 40;
    values.push(Number(v.toFixed(3)));
  }
  return values;
}

/** Hourly ISO timestamps from 2024-01-01. */
export function hourlyTimestamps(points: number): string[] {
  const start = Date.UTC(2024, 0, 1);
  return Array.from({ length: points }, (_, i) => new Date(start + i * 3_600_000).toISOString());
}

export function syntheticCsv(opts: SyntheticOptions, eol = '\n'): string {
  const values = syntheticValues(opts);
  const timestamps = hourlyTimestamps(opts.points);
  return ['timestamp,value', ...values.map((v, i) => `${timestamps[i]},${v}`)].join(eol) + eol;
}
