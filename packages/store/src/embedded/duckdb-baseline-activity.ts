// Baseline activity in the embedded database (table `baseline_activity`, migration 9). The writes
// are functions the baselines and machines adapters call inside their own transactions, so a
// baseline never changes without its activity changing with it.
import type { DuckDBConnection } from '@duckdb/node-api';
import {
  sortIntervals,
  validateActivityRange,
  type BaselineActivityInterval,
  type BaselineActivityStore,
} from '../baseline-activity.js';
import { EmbeddedAdapter, toNumberOrNull } from './duckdb-database.js';

export class DuckDBBaselineActivityStore extends EmbeddedAdapter implements BaselineActivityStore {
  activeIntervals(orgId: string, fromMs: number, toMs: number): Promise<readonly BaselineActivityInterval[]> {
    return this.op('activeIntervals', async () => {
      validateActivityRange(orgId, fromMs, toMs);
      const reader = await this.connection.runAndReadAll(
        `SELECT machine_id, active_from_ms, active_until_ms FROM baseline_activity
           WHERE org_id = $1 AND active_from_ms < $3
             AND (active_from_ms >= $2 OR active_until_ms IS NULL OR active_until_ms > $2)`,
        [orgId, BigInt(fromMs), BigInt(toMs)],
      );
      return sortIntervals(
        reader.getRowObjects().map((row) => ({
          machineId: String(row['machine_id']),
          activeFromMs: Number(row['active_from_ms']),
          activeUntilMs: toNumberOrNull(row['active_until_ms']),
        })),
      );
    });
  }
}

/**
 * Opens an interval at `nowMs` unless one is open (a replaced baseline stays in the interval it
 * started). A deletion and re-creation in the same millisecond reopen that interval.
 */
export async function startActivity(connection: DuckDBConnection, orgId: string, machineId: string, nowMs: bigint): Promise<void> {
  await connection.run(
    `INSERT INTO baseline_activity (org_id, machine_id, active_from_ms, active_until_ms)
       SELECT $1, $2, $3, NULL
       WHERE NOT EXISTS (
         SELECT 1 FROM baseline_activity WHERE org_id = $1 AND machine_id = $2 AND active_until_ms IS NULL)
       ON CONFLICT (org_id, machine_id, active_from_ms) DO UPDATE SET active_until_ms = NULL`,
    [orgId, machineId, nowMs],
  );
}

/** Closes the machine's open interval at `nowMs`; nothing when none is open. */
export async function stopActivity(connection: DuckDBConnection, orgId: string, machineId: string, nowMs: bigint): Promise<void> {
  await connection.run(
    'UPDATE baseline_activity SET active_until_ms = $3 WHERE org_id = $1 AND machine_id = $2 AND active_until_ms IS NULL',
    [orgId, machineId, nowMs],
  );
}
