// The baselines port in the embedded database (table `baselines`, and the `machines` row whose
// counters a new baseline restarts), on the embedded database's connection and queue.
import { DOUBLE, DuckDBBlobValue, type DuckDBConnection, type DuckDBType, type DuckDBValue } from '@duckdb/node-api';
import { StoreError } from '../errors.js';
import { decodeShapeReference, encodeShapeReference, validateMachineModel, validateShapeReference } from '../shape-reference.js';
import type { BaselineRecord, BaselineStore, NewBaseline } from '../types.js';
import { startActivity } from './duckdb-baseline-activity.js';
import { EmbeddedAdapter, toDate, toNumberOrNull, toStringOrNull, type Row } from './duckdb-database.js';

const BASELINE_COLUMNS =
  'org_id, machine_id, baseline_id, label, granularity, sensitivity, energy_mean, energy_std, energy_p99, ' +
  'num_windows, series_length, finetune_status, finetune_final_loss, finetune_epochs_run, finetune_epochs_max, ' +
  'finetune_early_stopped, finetune_windows, finetune_duration_seconds, predictor_weights, normalisation_center, ' +
  'normalisation_scale, channels, shape_reference, machine_model, epoch_ms(created_at) AS created_ms, epoch_ms(updated_at) AS updated_ms';

export class DuckDBBaselineStore extends EmbeddedAdapter implements BaselineStore {
  upsertBaseline(orgId: string, baseline: NewBaseline): Promise<BaselineRecord> {
    return this.op('upsertBaseline', async () => {
      validateBaseline(orgId, baseline);
      const now = this.nowMs();
      return this.transaction(async () => {
        await this.connection.run(
          `INSERT INTO machines (org_id, machine_id, first_seen_at, counters_since, detections_since, points_since)
             VALUES ($1, $2, epoch_ms(CAST($3 AS BIGINT)), epoch_ms(CAST($3 AS BIGINT)), 0, 0)
             ON CONFLICT (org_id, machine_id) DO UPDATE
             SET counters_since = excluded.counters_since, detections_since = 0, points_since = 0`,
          [orgId, baseline.machineId, now],
        );
        const { stats, fineTuneStats: tune } = baseline;
        const values = [
          orgId,
          baseline.machineId,
          baseline.baselineId,
          baseline.label,
          baseline.granularity,
          baseline.sensitivity,
          stats.energyMean,
          stats.energyStd,
          stats.energyP99,
          BigInt(stats.numWindows),
          BigInt(stats.seriesLength),
          tune.status,
          tune.finalLoss,
          tune.epochsRun,
          tune.epochsMax,
          tune.earlyStopped,
          BigInt(tune.windows),
          tune.durationSeconds,
          baseline.predictorWeights === null ? null : new DuckDBBlobValue(baseline.predictorWeights),
          baseline.normalisation?.center ?? null,
          baseline.normalisation?.scale ?? null,
          baseline.channels ? JSON.stringify(baseline.channels) : null,
          blobOrNull(encodeShapeReference(baseline.shapeReference)),
          baseline.machineModel ?? null,
          now,
        ];
        // An UPDATE of the row that is there, else an INSERT: DuckDB's INSERT ... ON CONFLICT DO
        // UPDATE measured 2 to 3 times slower with a channel's 1.8 MB of weights. One queue, one
        // transaction: nothing lands between the look-up and the write.
        const existing = await this.connection.runAndReadAll('SELECT 1 FROM baselines WHERE org_id = $1 AND machine_id = $2', [orgId, baseline.machineId]);
        await this.connection.run(existing.currentRowCount > 0 ? BASELINE_UPDATE : BASELINE_INSERT, values, BASELINE_PARAMETER_TYPES);
        await startActivity(this.connection, orgId, baseline.machineId, now);
        const record = await baselineOf(this.connection, orgId, baseline.machineId);
        if (!record) throw new Error('baseline missing right after upsert');
        return record;
      });
    });
  }

  getBaseline(orgId: string, machineId: string): Promise<BaselineRecord | null> {
    return this.op('getBaseline', () => baselineOf(this.connection, orgId, machineId));
  }
}

/** The machine's baseline with its weights, or null; for the ports that show it beside other state. */
export async function baselineOf(connection: DuckDBConnection, orgId: string, machineId: string): Promise<BaselineRecord | null> {
  const reader = await connection.runAndReadAll(
    `SELECT ${BASELINE_COLUMNS} FROM baselines WHERE org_id = $1 AND machine_id = $2`,
    [orgId, machineId],
  );
  const row = reader.getRowObjects()[0];
  return row ? toBaseline(row) : null;
}

const BASELINE_INSERT_COLUMNS = BASELINE_COLUMNS.replace(
  'epoch_ms(created_at) AS created_ms, epoch_ms(updated_at) AS updated_ms',
  'created_at, updated_at',
);

/** The columns a baseline's write binds, $1 to $24 in this order ($25 is the write's time). */
const BASELINE_VALUE_COLUMNS = BASELINE_INSERT_COLUMNS.split(', ').slice(0, 24);

const BASELINE_INSERT = `INSERT INTO baselines (${BASELINE_INSERT_COLUMNS})
  VALUES (${BASELINE_VALUE_COLUMNS.map((_, index) => `$${index + 1}`).join(', ')}, epoch_ms(CAST($25 AS BIGINT)), epoch_ms(CAST($25 AS BIGINT)))`;

/** A replacement keeps the key and `created_at`; every other column is the new baseline's. */
const BASELINE_UPDATE = `UPDATE baselines SET ${BASELINE_VALUE_COLUMNS.slice(2)
  .map((column, index) => `${column} = $${index + 3}`)
  .join(', ')}, updated_at = epoch_ms(CAST($25 AS BIGINT)) WHERE org_id = $1 AND machine_id = $2`;

/**
 * The upsert's DOUBLE parameters ($7-$9 statistics, $13 final loss, $18 duration, $20-$21
 * normalisation) bound as DOUBLE: the client binds an integer-valued number as INTEGER or BIGINT,
 * which fails past the int64 range (a mean energy of 1e20). Other parameters keep their own types.
 */
const BASELINE_PARAMETER_TYPES: DuckDBType[] = [];

for (const parameter of [7, 8, 9, 13, 18, 20, 21]) BASELINE_PARAMETER_TYPES[parameter - 1] = DOUBLE;

function validateBaseline(orgId: string, baseline: NewBaseline): void {
  const fail = (problem: string): never => {
    throw new StoreError('STORE_INVALID_ARGUMENT', 'upsertBaseline', problem);
  };
  if (!orgId || !baseline.machineId || !baseline.baselineId) fail('orgId, machineId and baselineId must be non-empty');
  const { stats, fineTuneStats } = baseline;
  for (const value of [stats.energyMean, stats.energyStd, stats.energyP99, fineTuneStats.durationSeconds]) {
    if (!Number.isFinite(value)) fail('energy statistics and durations must be finite numbers');
  }
  for (const value of [stats.numWindows, stats.seriesLength, fineTuneStats.epochsRun, fineTuneStats.epochsMax, fineTuneStats.windows]) {
    if (!Number.isSafeInteger(value) || value < 0) fail('counts must be non-negative integers');
  }
  if ((baseline.predictorWeights === null) !== (baseline.normalisation === null)) {
    fail('predictor weights and normalisation come together');
  }
  const channels = baseline.channels;
  if (channels != null && (!Array.isArray(channels) || channels.length === 0 || !channels.every((name) => typeof name === 'string' && name !== ''))) {
    fail('channels must be null or a non-empty list of non-empty names');
  }
  validateShapeReference('upsertBaseline', baseline.shapeReference);
  validateMachineModel('upsertBaseline', baseline.machineModel);
}

function blobOrNull(bytes: Uint8Array | null): DuckDBBlobValue | null {
  return bytes === null ? null : new DuckDBBlobValue(bytes);
}

/** The channels column: a JSON array of names written by upsertBaseline, or NULL. */
export function toChannels(value: DuckDBValue | undefined): string[] | null {
  if (value === null || value === undefined) return null;
  const parsed: unknown = JSON.parse(String(value));
  return Array.isArray(parsed) ? parsed.map(String) : null;
}

function toBaseline(row: Row): BaselineRecord {
  const weights = row['predictor_weights'];
  const shape = row['shape_reference'];
  const center = toNumberOrNull(row['normalisation_center']);
  const scale = toNumberOrNull(row['normalisation_scale']);
  return {
    orgId: String(row['org_id']),
    machineId: String(row['machine_id']),
    baselineId: String(row['baseline_id']),
    label: toStringOrNull(row['label']),
    granularity: toStringOrNull(row['granularity']),
    sensitivity: toNumberOrNull(row['sensitivity']),
    stats: {
      energyMean: Number(row['energy_mean']),
      energyStd: Number(row['energy_std']),
      energyP99: Number(row['energy_p99']),
      numWindows: Number(row['num_windows']),
      seriesLength: Number(row['series_length']),
    },
    fineTuneStats: {
      status: row['finetune_status'] === 'completed' ? 'completed' : 'skipped',
      finalLoss: toNumberOrNull(row['finetune_final_loss']),
      epochsRun: Number(row['finetune_epochs_run']),
      epochsMax: Number(row['finetune_epochs_max']),
      earlyStopped: row['finetune_early_stopped'] === true,
      windows: Number(row['finetune_windows']),
      durationSeconds: Number(row['finetune_duration_seconds']),
    },
    predictorWeights: weights instanceof DuckDBBlobValue ? weights.bytes : null,
    normalisation: center === null || scale === null ? null : { center, scale },
    createdAt: toDate(row['created_ms']) ?? new Date(0),
    updatedAt: toDate(row['updated_ms']) ?? new Date(0),
    channels: toChannels(row['channels']),
    shapeReference: decodeShapeReference(shape instanceof DuckDBBlobValue ? shape.bytes : null),
    machineModel: toStringOrNull(row['machine_model']),
  };
}
