// Baseline activity in ClickHouse: store_baseline_activity (a ReplacingMergeTree by version, one row
// per interval keyed by its start). The writes are functions the baselines and machines adapters call
// beside their own inserts: a new baseline's interval opens after the baseline row is written, a
// deletion closes it before the tombstones, so a write cut by a crash bills a machine for less than
// it was monitored, never for more (the next write of that machine's baseline repairs it).
import {
  overlapsRange,
  sortIntervals,
  validateActivityRange,
  type BaselineActivityInterval,
  type BaselineActivityStore,
} from '../baseline-activity.js';
import { ClickHouseAdapter, type ClickHouseDatabase } from './clickhouse-database.js';
import { sqlInteger, sqlString } from './sql.js';

interface ActivityRow {
  machine_id: string;
  active_from_ms: number;
  active_until_ms: number | null;
  version: number;
}

export class ClickHouseBaselineActivityStore extends ClickHouseAdapter implements BaselineActivityStore {
  activeIntervals(orgId: string, fromMs: number, toMs: number): Promise<readonly BaselineActivityInterval[]> {
    return this.op('activeIntervals', async (operation) => {
      validateActivityRange(orgId, fromMs, toMs);
      // Only sorting-key columns inside FINAL; the end is judged on the merged rows.
      const rows = await this.rows<ActivityRow>(
        operation,
        `SELECT machine_id, active_from_ms, active_until_ms, version FROM ${this.t.baselineActivity} FINAL
          WHERE org_id = ${sqlString(orgId, operation)} AND active_from_ms < ${sqlInteger(toMs, operation)}`,
      );
      return sortIntervals(rows.map(toInterval).filter((interval) => overlapsRange(interval, fromMs, toMs)));
    });
  }
}

function toInterval(row: ActivityRow): BaselineActivityInterval {
  return {
    machineId: row.machine_id,
    activeFromMs: Number(row.active_from_ms),
    activeUntilMs: row.active_until_ms === null ? null : Number(row.active_until_ms),
  };
}

async function intervalsOf(db: ClickHouseDatabase, operation: string, orgId: string, machineId: string): Promise<ActivityRow[]> {
  return db.rows<ActivityRow>(
    operation,
    `SELECT machine_id, active_from_ms, active_until_ms, version FROM ${db.t.baselineActivity} FINAL
      WHERE org_id = ${sqlString(orgId, operation)} AND machine_id = ${sqlString(machineId, operation)}`,
  );
}

/**
 * Opens an interval at `nowMs` unless one is open (a replaced baseline stays in the interval it
 * started). A deletion and re-creation in the same millisecond reopen that interval.
 */
export async function startActivity(db: ClickHouseDatabase, operation: string, orgId: string, machineId: string, nowMs: number): Promise<void> {
  const rows = await intervalsOf(db, operation, orgId, machineId);
  if (rows.some((row) => row.active_until_ms === null)) return;
  const basedOn = Math.max(0, ...rows.map((row) => Number(row.version)));
  await db.insert(operation, db.t.baselineActivity, [
    { org_id: orgId, machine_id: machineId, active_from_ms: nowMs, active_until_ms: null, version: db.clock.next(basedOn) },
  ]);
}

/** Closes the machine's open intervals at `nowMs` (two replicas may both have opened one); nothing when none is open. */
export async function stopActivity(db: ClickHouseDatabase, operation: string, orgId: string, machineId: string, nowMs: number): Promise<void> {
  const open = (await intervalsOf(db, operation, orgId, machineId)).filter((row) => row.active_until_ms === null);
  if (open.length === 0) return;
  await db.insert(
    operation,
    db.t.baselineActivity,
    open.map((row) => ({
      org_id: orgId,
      machine_id: machineId,
      active_from_ms: Number(row.active_from_ms),
      active_until_ms: Math.max(nowMs, Number(row.active_from_ms)),
      version: db.clock.next(Number(row.version)),
    })),
  );
}
