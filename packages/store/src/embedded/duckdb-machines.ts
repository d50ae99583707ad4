// The machines port in the embedded database (tables `machines`, `machine_detections`, and the
// baseline a deletion removes with its machine), on the embedded database's connection and queue.
import { RECENT_DETECTIONS_KEPT } from '../constants.js';
import { StoreError } from '../errors.js';
import {
  REGIME_NAMES,
  type DeleteMachineResult,
  type MachineDetection,
  type MachineStatusRecord,
  type MachineStore,
  type MachineSummary,
  type RegimeCounts,
} from '../types.js';
import { stopActivity } from './duckdb-baseline-activity.js';
import { baselineOf, toChannels } from './duckdb-baselines.js';
import { EmbeddedAdapter, toDate, toNumberOrNull, toStringOrNull, type Row } from './duckdb-database.js';

export class DuckDBMachineStore extends EmbeddedAdapter implements MachineStore {
  listMachines(orgId: string): Promise<readonly MachineSummary[]> {
    return this.op('listMachines', async () => {
      const reader = await this.connection.runAndReadAll(
        `SELECT m.machine_id, epoch_ms(m.first_seen_at) AS first_seen_ms, epoch_ms(b.created_at) AS baseline_created_ms,
                b.num_windows, b.label, b.channels
           FROM machines m LEFT JOIN baselines b ON b.org_id = m.org_id AND b.machine_id = m.machine_id
           WHERE m.org_id = $1 ORDER BY m.machine_id`,
        [orgId],
      );
      return reader.getRowObjects().map((row) => ({
        machineId: String(row['machine_id']),
        firstSeenAt: toDate(row['first_seen_ms']) ?? new Date(0),
        baselineCreatedAt: toDate(row['baseline_created_ms']),
        numWindows: toNumberOrNull(row['num_windows']),
        label: toStringOrNull(row['label']),
        channels: toChannels(row['channels']),
      }));
    });
  }

  deleteMachine(orgId: string, machineId: string): Promise<DeleteMachineResult> {
    return this.op('deleteMachine', () =>
      this.transaction(async () => {
        await stopActivity(this.connection, orgId, machineId, this.nowMs());
        const baselines = await this.connection.run('DELETE FROM baselines WHERE org_id = $1 AND machine_id = $2', [
          orgId,
          machineId,
        ]);
        await this.connection.run('DELETE FROM machine_detections WHERE org_id = $1 AND machine_id = $2', [
          orgId,
          machineId,
        ]);
        const machines = await this.connection.run('DELETE FROM machines WHERE org_id = $1 AND machine_id = $2', [
          orgId,
          machineId,
        ]);
        return { deleted: machines.rowsChanged > 0, baselineDeleted: baselines.rowsChanged > 0 };
      }),
    );
  }

  recordDetection(orgId: string, machineId: string, detection: MachineDetection): Promise<void> {
    return this.op('recordDetection', async () => {
      if (!orgId || !machineId || !Number.isSafeInteger(detection.points) || detection.points < 0) {
        throw new StoreError(
          'STORE_INVALID_ARGUMENT',
          'recordDetection',
          'orgId and machineId must be non-empty and points a non-negative integer',
        );
      }
      const counts = REGIME_NAMES.map((name) => detection.regimeCounts[name]);
      if (counts.some((count) => !Number.isSafeInteger(count) || count < 0)) {
        throw new StoreError('STORE_INVALID_ARGUMENT', 'recordDetection', 'regime counts must be non-negative integers');
      }
      const now = this.nowMs();
      await this.transaction(async () => {
        await this.connection.run(
          `INSERT INTO machines (org_id, machine_id, first_seen_at, counters_since, detections_since, points_since, last_detection_at)
             VALUES ($1, $2, epoch_ms(CAST($3 AS BIGINT)), epoch_ms(CAST($3 AS BIGINT)), 1, $4, epoch_ms(CAST($3 AS BIGINT)))
             ON CONFLICT (org_id, machine_id) DO UPDATE
             SET detections_since = machines.detections_since + 1,
                 points_since = machines.points_since + excluded.points_since,
                 last_detection_at = excluded.last_detection_at`,
          [orgId, machineId, now, BigInt(detection.points)],
        );
        await this.connection.run(
          `INSERT INTO machine_detections (seq, org_id, machine_id, detected_at, points, with_baseline,
               regime_healthy, regime_active, regime_transition, regime_shock, regime_unknown)
             VALUES (nextval('machine_detection_seq'), $1, $2, epoch_ms(CAST($3 AS BIGINT)), $4, $5, $6, $7, $8, $9, $10)`,
          [orgId, machineId, now, BigInt(detection.points), detection.withBaseline, ...counts.map((count) => BigInt(count))],
        );
        await this.connection.run(
          `DELETE FROM machine_detections
             WHERE org_id = $1 AND machine_id = $2 AND seq NOT IN (
               SELECT seq FROM machine_detections WHERE org_id = $1 AND machine_id = $2 ORDER BY seq DESC LIMIT $3)`,
          [orgId, machineId, RECENT_DETECTIONS_KEPT],
        );
      });
    });
  }

  machineStatus(orgId: string, machineId: string): Promise<MachineStatusRecord | null> {
    return this.op('machineStatus', async () => {
      const reader = await this.connection.runAndReadAll(
        `SELECT epoch_ms(first_seen_at) AS first_seen_ms, epoch_ms(counters_since) AS since_ms, detections_since,
                points_since, epoch_ms(last_detection_at) AS last_ms
           FROM machines WHERE org_id = $1 AND machine_id = $2`,
        [orgId, machineId],
      );
      const row = reader.getRowObjects()[0];
      if (!row) return null;
      const recent = await this.connection.runAndReadAll(
        `SELECT epoch_ms(detected_at) AS at_ms, points, with_baseline, regime_healthy, regime_active,
                regime_transition, regime_shock, regime_unknown
           FROM machine_detections WHERE org_id = $1 AND machine_id = $2 ORDER BY seq DESC LIMIT $3`,
        [orgId, machineId, RECENT_DETECTIONS_KEPT],
      );
      return {
        machineId,
        firstSeenAt: toDate(row['first_seen_ms']) ?? new Date(0),
        baseline: await baselineOf(this.connection, orgId, machineId),
        countersSince: toDate(row['since_ms']) ?? new Date(0),
        detectionsSince: Number(row['detections_since']),
        pointsSince: Number(row['points_since']),
        lastDetectionAt: toDate(row['last_ms']),
        recentDetections: recent.getRowObjects().map((detection) => ({
          at: toDate(detection['at_ms']) ?? new Date(0),
          points: Number(detection['points']),
          withBaseline: detection['with_baseline'] === true,
          regimeCounts: regimeCountsOf(detection),
        })),
      };
    });
  }
}

function regimeCountsOf(row: Row): RegimeCounts {
  return {
    HEALTHY: Number(row['regime_healthy']),
    ACTIVE: Number(row['regime_active']),
    TRANSITION: Number(row['regime_transition']),
    SHOCK: Number(row['regime_shock']),
    UNKNOWN: Number(row['regime_unknown']),
  };
}
