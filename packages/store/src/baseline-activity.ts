// The baseline activity port: when each machine's baseline was active, from its creation (or its
// re-creation after a deletion) until the baseline or the machine was deleted. Kept after the
// machine is gone, so that what a past hour is billed for does not depend on what exists when the
// hour is exported. Only the baselines and machines ports write it, inside the writes that change a
// baseline; this port only reads. Adapters: embedded/duckdb-baseline-activity.ts,
// clickhouse/clickhouse-baseline-activity.ts.
import { StoreError } from './errors.js';

/** One stretch of time during which a machine had a baseline: [activeFromMs, activeUntilMs). */
export interface BaselineActivityInterval {
  readonly machineId: string;
  /** Epoch ms the baseline became active. */
  readonly activeFromMs: number;
  /** Epoch ms it stopped (baseline or machine deleted); null while it is still active. */
  readonly activeUntilMs: number | null;
}

export interface BaselineActivityStore {
  /**
   * The organization's intervals that overlap [fromMs, toMs), by machine id then start. An interval
   * overlaps when it starts before `toMs` and either starts at or after `fromMs` (even one that
   * ended the millisecond it began) or ends after `fromMs` (or has not ended).
   */
  activeIntervals(orgId: string, fromMs: number, toMs: number): Promise<readonly BaselineActivityInterval[]>;
}

export function validateActivityRange(orgId: string, fromMs: number, toMs: number): void {
  if (!orgId || !Number.isSafeInteger(fromMs) || !Number.isSafeInteger(toMs) || fromMs > toMs) {
    throw new StoreError('STORE_INVALID_ARGUMENT', 'activeIntervals', 'an organization and whole epoch ms with fromMs <= toMs are required');
  }
}

/** Whether the interval overlaps [fromMs, toMs), as `activeIntervals` selects. */
export function overlapsRange(interval: BaselineActivityInterval, fromMs: number, toMs: number): boolean {
  const { activeFromMs: start, activeUntilMs: end } = interval;
  return start < toMs && (start >= fromMs || end === null || end > fromMs);
}

/** Sorts intervals by machine id (code-unit order) then start, as the port answers them. */
export function sortIntervals(intervals: BaselineActivityInterval[]): BaselineActivityInterval[] {
  return intervals.sort((a, b) =>
    a.machineId < b.machineId ? -1 : a.machineId > b.machineId ? 1 : a.activeFromMs - b.activeFromMs,
  );
}
