// The baselines port in ClickHouse: store_baselines (a ReplacingMergeTree by version, real numbers
// as exact text, weights and shape reference as base64), and the store_machines row whose counters a
// new baseline restarts. The reads of both rows live here; the machines port uses them too.
import { randomUUID } from 'node:crypto';
import { copyShapeReference, decodeShapeReference, encodeShapeReference } from '../shape-reference.js';
import type { BaselineRecord, BaselineStore, NewBaseline } from '../types.js';
import { startActivity } from './clickhouse-baseline-activity.js';
import { ClickHouseAdapter, type ClickHouseDatabase, type Versioned } from './clickhouse-database.js';
import { sqlString } from './sql.js';
import { validateBaseline } from './validation.js';

export interface MachineRow {
  incarnation: string;
  first_seen_at_ms: number;
  counters_since_ms: number;
  deleted: number;
  version: number;
}

interface BaselineRow {
  org_id: string;
  machine_id: string;
  baseline_id: string;
  label: string | null;
  granularity: string | null;
  sensitivity: string | null;
  energy_mean: string;
  energy_std: string;
  energy_p99: string;
  num_windows: number;
  series_length: number;
  finetune_status: string;
  finetune_final_loss: string | null;
  finetune_epochs_run: number;
  finetune_epochs_max: number;
  finetune_early_stopped: number;
  finetune_windows: number;
  finetune_duration_seconds: string;
  predictor_weights_base64: string | null;
  normalisation_center: string | null;
  normalisation_scale: string | null;
  channels: string | null;
  shape_reference_base64: string | null;
  machine_model: string | null;
  created_at_ms: number;
  updated_at_ms: number;
  deleted: number;
  version: number;
}

const BASELINE_FIELDS =
  'org_id, machine_id, baseline_id, label, granularity, sensitivity, energy_mean, energy_std, energy_p99, ' +
  'num_windows, series_length, finetune_status, finetune_final_loss, finetune_epochs_run, ' +
  'finetune_epochs_max, finetune_early_stopped, finetune_windows, finetune_duration_seconds, predictor_weights_base64, ' +
  'normalisation_center, normalisation_scale, channels, shape_reference_base64, machine_model, created_at_ms, updated_at_ms, deleted, version';

export class ClickHouseBaselineStore extends ClickHouseAdapter implements BaselineStore {
  upsertBaseline(orgId: string, baseline: NewBaseline): Promise<BaselineRecord> {
    return this.op('upsertBaseline', async (operation) => {
      validateBaseline(orgId, baseline);
      const [machine, previous] = await Promise.all([
        machineOf(this.db, operation, orgId, baseline.machineId),
        baselineOf(this.db, operation, orgId, baseline.machineId),
      ]);
      const nowMs = this.nowMs();
      // The machine first: a crash between the two inserts leaves restarted counters beside the old
      // baseline, which is harmless; the other order could leave a baseline without its machine.
      await this.insert(operation, this.t.machines, [
        {
          org_id: orgId,
          machine_id: baseline.machineId,
          incarnation: machine.live?.incarnation ?? randomUUID(),
          first_seen_at_ms: machine.live?.first_seen_at_ms ?? nowMs,
          counters_since_ms: nowMs,
          deleted: 0,
          version: this.clock.next(machine.version),
        },
      ]);
      const record: BaselineRecord = {
        ...baseline,
        orgId,
        predictorWeights: baseline.predictorWeights === null ? null : new Uint8Array(baseline.predictorWeights),
        createdAt: previous.live?.createdAt ?? new Date(nowMs),
        updatedAt: new Date(nowMs),
        channels: baseline.channels ? [...baseline.channels] : null,
        shapeReference: copyShapeReference(baseline.shapeReference),
        machineModel: baseline.machineModel ?? null,
      };
      await this.insert(operation, this.t.baselines, [baselineRow(record, this.clock.next(previous.version))]);
      await startActivity(this.db, operation, orgId, baseline.machineId, nowMs);
      return record;
    });
  }

  getBaseline(orgId: string, machineId: string): Promise<BaselineRecord | null> {
    return this.op('getBaseline', async (operation) => (await baselineOf(this.db, operation, orgId, machineId)).live);
  }
}

export async function machineOf(db: ClickHouseDatabase, operation: string, orgId: string, machineId: string): Promise<Versioned<MachineRow>> {
  const [row] = await db.rows<MachineRow>(
    operation,
    `SELECT incarnation, first_seen_at_ms, counters_since_ms, deleted, version FROM ${db.t.machines} FINAL
      WHERE org_id = ${sqlString(orgId)} AND machine_id = ${sqlString(machineId)}`,
  );
  if (!row) return { live: null, version: 0 };
  const version = Number(row.version);
  return { live: row.deleted === 0 ? { ...row, version } : null, version };
}

export async function baselineOf(db: ClickHouseDatabase, operation: string, orgId: string, machineId: string): Promise<Versioned<BaselineRecord>> {
  // The newest version of the one key, not FINAL: a baseline row carries megabytes (the predictor's
  // weights, the shape reference), and FINAL's cost grows with the whole table's parts. Versions of
  // a key only grow, so the newest row is the one FINAL would keep.
  const [row] = await db.rows<BaselineRow>(
    operation,
    `SELECT ${BASELINE_FIELDS} FROM ${db.t.baselines}
      WHERE org_id = ${sqlString(orgId)} AND machine_id = ${sqlString(machineId)}
      ORDER BY version DESC LIMIT 1`,
  );
  if (!row) return { live: null, version: 0 };
  return { live: row.deleted === 0 ? toBaseline(row) : null, version: Number(row.version) };
}

/** A real number as exact text: JavaScript's shortest round-trip form, keeping the sign of zero. */
function exactText(value: number): string {
  return Object.is(value, -0) ? '-0' : String(value);
}

function exactTextOrNull(value: number | null): string | null {
  return value === null ? null : exactText(value);
}

function numberOrNull(text: string | null): number | null {
  return text === null ? null : Number(text);
}

function baselineRow(record: BaselineRecord, version: number): Record<string, unknown> {
  const { stats, fineTuneStats: tune } = record;
  return {
    org_id: record.orgId,
    machine_id: record.machineId,
    baseline_id: record.baselineId,
    label: record.label,
    granularity: record.granularity,
    sensitivity: exactTextOrNull(record.sensitivity),
    energy_mean: exactText(stats.energyMean),
    energy_std: exactText(stats.energyStd),
    energy_p99: exactText(stats.energyP99),
    num_windows: stats.numWindows,
    series_length: stats.seriesLength,
    finetune_status: tune.status,
    finetune_final_loss: exactTextOrNull(tune.finalLoss),
    finetune_epochs_run: tune.epochsRun,
    finetune_epochs_max: tune.epochsMax,
    finetune_early_stopped: tune.earlyStopped ? 1 : 0,
    finetune_windows: tune.windows,
    finetune_duration_seconds: exactText(tune.durationSeconds),
    predictor_weights_base64:
      record.predictorWeights === null
        ? null
        : Buffer.from(record.predictorWeights.buffer, record.predictorWeights.byteOffset, record.predictorWeights.byteLength).toString('base64'),
    normalisation_center: exactTextOrNull(record.normalisation?.center ?? null),
    normalisation_scale: exactTextOrNull(record.normalisation?.scale ?? null),
    channels: record.channels ? JSON.stringify(record.channels) : null,
    shape_reference_base64: base64OrNull(encodeShapeReference(record.shapeReference)),
    machine_model: record.machineModel ?? null,
    created_at_ms: record.createdAt.getTime(),
    updated_at_ms: record.updatedAt.getTime(),
    deleted: 0,
    version,
  };
}

/** The row that hides a deleted baseline; its weights are gone from disk once the parts merge. */
export function baselineTombstone(orgId: string, machineId: string, version: number): Record<string, unknown> {
  return {
    org_id: orgId,
    machine_id: machineId,
    baseline_id: '',
    label: null,
    granularity: null,
    sensitivity: null,
    energy_mean: '0',
    energy_std: '0',
    energy_p99: '0',
    num_windows: 0,
    series_length: 0,
    finetune_status: 'skipped',
    finetune_final_loss: null,
    finetune_epochs_run: 0,
    finetune_epochs_max: 0,
    finetune_early_stopped: 0,
    finetune_windows: 0,
    finetune_duration_seconds: '0',
    predictor_weights_base64: null,
    normalisation_center: null,
    normalisation_scale: null,
    channels: null,
    shape_reference_base64: null,
    machine_model: null,
    created_at_ms: 0,
    updated_at_ms: 0,
    deleted: 1,
    version,
  };
}

function toBaseline(row: BaselineRow): BaselineRecord {
  const center = numberOrNull(row.normalisation_center);
  const scale = numberOrNull(row.normalisation_scale);
  return {
    orgId: row.org_id,
    machineId: row.machine_id,
    baselineId: row.baseline_id,
    label: row.label,
    granularity: row.granularity,
    sensitivity: numberOrNull(row.sensitivity),
    stats: {
      energyMean: Number(row.energy_mean),
      energyStd: Number(row.energy_std),
      energyP99: Number(row.energy_p99),
      numWindows: Number(row.num_windows),
      seriesLength: Number(row.series_length),
    },
    fineTuneStats: {
      status: row.finetune_status === 'completed' ? 'completed' : 'skipped',
      finalLoss: numberOrNull(row.finetune_final_loss),
      epochsRun: Number(row.finetune_epochs_run),
      epochsMax: Number(row.finetune_epochs_max),
      earlyStopped: row.finetune_early_stopped === 1,
      windows: Number(row.finetune_windows),
      durationSeconds: Number(row.finetune_duration_seconds),
    },
    predictorWeights: row.predictor_weights_base64 === null ? null : new Uint8Array(Buffer.from(row.predictor_weights_base64, 'base64')),
    normalisation: center === null || scale === null ? null : { center, scale },
    createdAt: new Date(Number(row.created_at_ms)),
    updatedAt: new Date(Number(row.updated_at_ms)),
    channels: channelsOf(row.channels),
    shapeReference: decodeShapeReference(row.shape_reference_base64 === null ? null : new Uint8Array(Buffer.from(row.shape_reference_base64, 'base64'))),
    machineModel: row.machine_model ?? null,
  };
}

function base64OrNull(bytes: Uint8Array | null): string | null {
  return bytes === null ? null : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** The channels column: a JSON array of names written by upsertBaseline, or NULL. */
export function channelsOf(text: string | null): string[] | null {
  if (text === null) return null;
  const parsed: unknown = JSON.parse(text);
  return Array.isArray(parsed) ? parsed.map(String) : null;
}
