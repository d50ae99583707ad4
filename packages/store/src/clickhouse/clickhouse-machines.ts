// The machines port in ClickHouse: store_machines (a ReplacingMergeTree by version, deletions as
// tombstones) and store_machine_detections (plain rows, group-committed; counters are aggregates
// over the rows of the machine's current incarnation and counters generation).
import { randomUUID } from 'node:crypto';
import { RECENT_DETECTIONS_KEPT } from '../constants.js';
import type { DeleteMachineResult, MachineDetection, MachineStatusRecord, MachineStore, MachineSummary, RegimeCounts } from '../types.js';
import { stopActivity } from './clickhouse-baseline-activity.js';
import { baselineOf, baselineTombstone, channelsOf, machineOf } from './clickhouse-baselines.js';
import { ClickHouseAdapter, type ClickHouseDatabase } from './clickhouse-database.js';
import type { InsertBatcher } from './insert-batcher.js';
import { sqlInteger, sqlString } from './sql.js';
import { validateDetection } from './validation.js';

interface DetectionRow {
  detected_at_ms: number;
  points: number;
  with_baseline: number;
  regime_healthy: number;
  regime_active: number;
  regime_transition: number;
  regime_shock: number;
  regime_unknown: number;
}

export class ClickHouseMachineStore extends ClickHouseAdapter implements MachineStore {
  /** Detections are on the request path: group-committed. */
  private readonly detectionInserts: InsertBatcher;

  constructor(db: ClickHouseDatabase) {
    super(db);
    this.detectionInserts = db.batcher('recordDetection', db.t.detections);
  }

  listMachines(orgId: string): Promise<readonly MachineSummary[]> {
    return this.op('listMachines', async (operation) => {
      // FINAL filters only on sorting-key columns; `deleted` is looked at afterwards, because a
      // condition on it inside FINAL could drop a tombstone before it hides the row it replaces.
      const [machines, baselines] = await Promise.all([
        this.rows<{ machine_id: string; first_seen_at_ms: number; deleted: number }>(
          operation,
          `SELECT machine_id, first_seen_at_ms, deleted FROM ${this.t.machines} FINAL
            WHERE org_id = ${sqlString(orgId)} ORDER BY machine_id`,
        ),
        this.rows<{ machine_id: string; created_at_ms: number; num_windows: number; label: string | null; channels: string | null; deleted: number }>(
          operation,
          `SELECT machine_id, created_at_ms, num_windows, label, channels, deleted FROM ${this.t.baselines} FINAL
            WHERE org_id = ${sqlString(orgId)}`,
        ),
      ]);
      const baselineOf = new Map(baselines.filter((row) => row.deleted === 0).map((row) => [row.machine_id, row]));
      return machines
        .filter((row) => row.deleted === 0)
        .map((row) => {
          const baseline = baselineOf.get(row.machine_id);
          return {
            machineId: row.machine_id,
            firstSeenAt: new Date(row.first_seen_at_ms),
            baselineCreatedAt: baseline ? new Date(baseline.created_at_ms) : null,
            numWindows: baseline ? Number(baseline.num_windows) : null,
            label: baseline ? baseline.label : null,
            channels: baseline ? channelsOf(baseline.channels) : null,
          };
        });
    });
  }

  deleteMachine(orgId: string, machineId: string): Promise<DeleteMachineResult> {
    return this.op('deleteMachine', async (operation) => {
      const [machine, baseline] = await Promise.all([
        machineOf(this.db, operation, orgId, machineId),
        baselineOf(this.db, operation, orgId, machineId),
      ]);
      await stopActivity(this.db, operation, orgId, machineId, this.nowMs());
      // The baseline first: a crash in between leaves a machine without a baseline (it then lists
      // as seen-only), never a deleted machine whose baseline a later machine of that id inherits.
      if (baseline.live) {
        await this.insert(operation, this.t.baselines, [baselineTombstone(orgId, machineId, this.clock.next(baseline.version))]);
      }
      if (machine.live) {
        await this.insert(operation, this.t.machines, [
          { ...machine.live, org_id: orgId, machine_id: machineId, deleted: 1, version: this.clock.next(machine.version) },
        ]);
      }
      return { deleted: machine.live !== null, baselineDeleted: baseline.live !== null };
    });
  }

  recordDetection(orgId: string, machineId: string, detection: MachineDetection): Promise<void> {
    return this.op('recordDetection', async (operation) => {
      validateDetection(orgId, machineId, detection);
      const machine = await machineOf(this.db, operation, orgId, machineId);
      const nowMs = this.nowMs();
      let live = machine.live;
      if (!live) {
        live = {
          incarnation: randomUUID(),
          first_seen_at_ms: nowMs,
          counters_since_ms: nowMs,
          deleted: 0,
          version: this.clock.next(machine.version),
        };
        await this.insert(operation, this.t.machines, [{ org_id: orgId, machine_id: machineId, ...live }]);
      }
      const counts = detection.regimeCounts;
      await this.detectionInserts.add({
          org_id: orgId,
          machine_id: machineId,
          incarnation: live.incarnation,
          machine_version: live.version,
          detected_at_ms: nowMs,
          version: this.clock.next(),
          points: detection.points,
          with_baseline: detection.withBaseline ? 1 : 0,
          regime_healthy: counts.HEALTHY,
          regime_active: counts.ACTIVE,
          regime_transition: counts.TRANSITION,
          regime_shock: counts.SHOCK,
          regime_unknown: counts.UNKNOWN,
      });
    });
  }

  machineStatus(orgId: string, machineId: string): Promise<MachineStatusRecord | null> {
    return this.op('machineStatus', async (operation) => {
      const machine = (await machineOf(this.db, operation, orgId, machineId)).live;
      if (!machine) return null;
      const where = `org_id = ${sqlString(orgId)} AND machine_id = ${sqlString(machineId)}
        AND incarnation = ${sqlString(machine.incarnation)}`;
      const [baseline, counters, recent] = await Promise.all([
        baselineOf(this.db, operation, orgId, machineId),
        this.rows<{ detections: number; points_since: number; total: number; last_ms: number }>(
          operation,
          `SELECT countIf(machine_version = ${sqlInteger(machine.version)}) AS detections,
                  sumIf(points, machine_version = ${sqlInteger(machine.version)}) AS points_since,
                  count() AS total, max(detected_at_ms) AS last_ms
             FROM ${this.t.detections} WHERE ${where}`,
        ),
        this.rows<DetectionRow>(
          operation,
          `SELECT detected_at_ms, points, with_baseline, regime_healthy, regime_active, regime_transition,
                  regime_shock, regime_unknown
             FROM ${this.t.detections} WHERE ${where}
            ORDER BY detected_at_ms DESC, version DESC LIMIT ${sqlInteger(RECENT_DETECTIONS_KEPT)}`,
        ),
      ]);
      const summary = counters[0];
      return {
        machineId,
        firstSeenAt: new Date(machine.first_seen_at_ms),
        baseline: baseline.live,
        countersSince: new Date(machine.counters_since_ms),
        detectionsSince: Number(summary?.detections ?? 0),
        pointsSince: Number(summary?.points_since ?? 0),
        lastDetectionAt: summary && Number(summary.total) > 0 ? new Date(Number(summary.last_ms)) : null,
        recentDetections: recent.map((row) => ({
          at: new Date(Number(row.detected_at_ms)),
          points: Number(row.points),
          withBaseline: row.with_baseline === 1,
          regimeCounts: regimeCountsOf(row),
        })),
      };
    });
  }
}

function regimeCountsOf(row: DetectionRow): RegimeCounts {
  return {
    HEALTHY: Number(row.regime_healthy),
    ACTIVE: Number(row.regime_active),
    TRANSITION: Number(row.regime_transition),
    SHOCK: Number(row.regime_shock),
    UNKNOWN: Number(row.regime_unknown),
  };
}
