// Summaries of timing samples.

/** The q-quantile (0..1) by the nearest-rank method: always a value that was observed. */
export function quantile(sortedAscending: readonly number[], q: number): number {
  if (sortedAscending.length === 0) return Number.NaN;
  const rank = Math.ceil(q * sortedAscending.length);
  return sortedAscending[Math.min(sortedAscending.length - 1, Math.max(0, rank - 1))] as number;
}

export interface LatencySummary {
  readonly samples: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly meanMs: number;
  readonly minMs: number;
  readonly maxMs: number;
}

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

export function summarize(durationsMs: readonly number[]): LatencySummary {
  const sorted = [...durationsMs].sort((a, b) => a - b);
  const mean = sorted.reduce((s, x) => s + x, 0) / Math.max(1, sorted.length);
  return {
    samples: sorted.length,
    p50Ms: round(quantile(sorted, 0.5)),
    p99Ms: round(quantile(sorted, 0.99)),
    meanMs: round(mean),
    minMs: round(sorted[0] ?? Number.NaN),
    maxMs: round(sorted[sorted.length - 1] ?? Number.NaN),
  };
}

export { round };
