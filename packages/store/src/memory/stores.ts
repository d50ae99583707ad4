// The embedded result store and checkpoint store: the contracts' semantics in memory, for
// `npm start` (one process) and for unit tests. Nothing survives a restart; the DuckDB, ClickHouse
// and Redis implementations are the durable ones.
import type { CheckpointStore, ResultQuery, ResultRow, ResultStore, StoredMachineSummary } from '@adp/streaming';
import { StreamingError } from '@adp/streaming/errors';
import { checkMachineRef, isCheckpointOfMachine, isSeriesOfMachine } from '@adp/streaming/series-ids';
import { emptyRegimeCounts, isEpochMs, validateResultQuery, validateResultRows } from '../result-rows.js';

interface MachineRows {
  /** tsMs ascending, each once. */
  readonly timestamps: number[];
  readonly rows: Map<number, ResultRow>;
  anomalies: number;
  readonly regimeCounts: Record<ResultRow['regime'], number>;
}

/** First index in ascending `values` whose value is >= target (or > target with `strict`). */
function lowerBound(values: readonly number[], target: number, strict = false): number {
  let low = 0;
  let high = values.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    const value = values[mid]!;
    if (value < target || (strict && value === target)) low = mid + 1;
    else high = mid;
  }
  return low;
}

/**
 * Results in memory, latest write winning per (org, machine, tsMs) as ReplacingMergeTree with
 * FINAL does: the row with the higher `writtenAtMs`, or the later insert on a tie.
 */
export function createMemoryResultStore(): ResultStore {
  const byOrg = new Map<string, Map<string, MachineRows>>();
  let closed = false;

  function assertOpen(): void {
    if (closed) throw new StreamingError('STREAMING_CLOSED', 'the result store is closed');
  }

  return {
    async insert(rows: readonly ResultRow[]): Promise<void> {
      assertOpen();
      validateResultRows(rows);
      for (const row of rows) {
        let machines = byOrg.get(row.orgId);
        if (!machines) byOrg.set(row.orgId, (machines = new Map()));
        let machine = machines.get(row.machineId);
        if (!machine) {
          machine = { timestamps: [], rows: new Map(), anomalies: 0, regimeCounts: emptyRegimeCounts() };
          machines.set(row.machineId, machine);
        }
        const stored = { ...row };
        const previous = machine.rows.get(row.tsMs);
        if (previous) {
          if (previous.writtenAtMs > row.writtenAtMs) continue;
          if (previous.isAnomaly) machine.anomalies--;
          machine.regimeCounts[previous.regime]--;
        } else {
          const last = machine.timestamps[machine.timestamps.length - 1];
          if (last === undefined || row.tsMs > last) machine.timestamps.push(row.tsMs);
          else machine.timestamps.splice(lowerBound(machine.timestamps, row.tsMs), 0, row.tsMs);
        }
        machine.rows.set(row.tsMs, stored);
        if (stored.isAnomaly) machine.anomalies++;
        machine.regimeCounts[stored.regime]++;
      }
    },

    async query(query: ResultQuery): Promise<ResultRow[]> {
      assertOpen();
      validateResultQuery(query);
      const machine = byOrg.get(query.orgId)?.get(query.machineId);
      if (!machine) return [];
      let start = 0;
      if (query.fromMs !== undefined) start = Math.max(start, lowerBound(machine.timestamps, query.fromMs));
      if (query.afterTsMs !== undefined) start = Math.max(start, lowerBound(machine.timestamps, query.afterTsMs, true));
      const end = query.toMs === undefined ? machine.timestamps.length : lowerBound(machine.timestamps, query.toMs);
      const out: ResultRow[] = [];
      for (let i = start; i < end && out.length < query.limit; i++) {
        out.push({ ...machine.rows.get(machine.timestamps[i]!)! });
      }
      return out;
    },

    async machines(orgId: string): Promise<StoredMachineSummary[]> {
      assertOpen();
      const machines = byOrg.get(orgId);
      if (!machines) return [];
      return [...machines.entries()]
        .filter(([, machine]) => machine.timestamps.length > 0)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([machineId, machine]) => ({
          machineId,
          points: machine.timestamps.length,
          anomalies: machine.anomalies,
          firstTsMs: machine.timestamps[0]!,
          lastTsMs: machine.timestamps[machine.timestamps.length - 1]!,
          regimeCounts: { ...machine.regimeCounts },
        }));
    },

    async ping(): Promise<void> {},

    async deleteMachine(orgId: string, machineId: string): Promise<boolean> {
      assertOpen();
      checkMachineRef(orgId, machineId, 'deleteMachine');
      const machines = byOrg.get(orgId);
      if (!machines) return false;
      let any = false;
      for (const [seriesId, machine] of [...machines]) {
        if (!isSeriesOfMachine(seriesId, machineId)) continue;
        any ||= machine.timestamps.length > 0;
        machines.delete(seriesId);
      }
      return any;
    },

    async deleteBefore(beforeMs: number): Promise<void> {
      assertOpen();
      if (!isEpochMs(beforeMs)) throw new StreamingError('VALUE_INVALID', 'deleteBefore: beforeMs is not an epoch-milliseconds integer');
      for (const machines of byOrg.values()) {
        for (const machine of machines.values()) {
          const cut = lowerBound(machine.timestamps, beforeMs);
          for (const tsMs of machine.timestamps.splice(0, cut)) {
            const row = machine.rows.get(tsMs)!;
            machine.rows.delete(tsMs);
            if (row.isAnomaly) machine.anomalies--;
            machine.regimeCounts[row.regime]--;
          }
        }
      }
    },

    async close(): Promise<void> {
      closed = true;
    },
  };
}

/** Checkpoints in memory (copies in and out, so a caller's later edits to a Buffer do not leak in). */
export function createMemoryCheckpointStore(): CheckpointStore {
  const entries = new Map<string, Buffer>();
  return {
    async load(keys: readonly string[]): Promise<Map<string, Buffer>> {
      const found = new Map<string, Buffer>();
      for (const key of keys) {
        const value = entries.get(key);
        if (value) found.set(key, Buffer.from(value));
      }
      return found;
    },
    async save(batch: ReadonlyMap<string, Buffer>): Promise<void> {
      for (const [key, value] of batch) entries.set(key, Buffer.from(value));
    },
    async ping(): Promise<void> {},

    async deleteMachine(orgId: string, machineId: string): Promise<number> {
      checkMachineRef(orgId, machineId, 'deleteMachine');
      let removed = 0;
      for (const key of [...entries.keys()]) {
        if (isCheckpointOfMachine(key, orgId, machineId) && entries.delete(key)) removed++;
      }
      return removed;
    },
    async close(): Promise<void> {},
  };
}
