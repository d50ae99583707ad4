// Checks on a ResultRow before any store takes it: the same rules for the embedded store and for
// ClickHouse, where a value that is not what it claims would either be refused by the server after
// the batch is half-built or, worse, be stored. A row that fails is a bug in the caller.
import type { ResultQuery, ResultRow, StoredMachineSummary } from '@adp/streaming';
import { StreamingError } from '@adp/streaming/errors';
import { REGIMES } from '@adp/streaming/schemas';
import { JUDGED_POINT_COLUMN_NAMES } from './judged-point.js';

const REGIME_SET: ReadonlySet<string> = new Set(REGIMES);

function invalid(message: string): never {
  throw new StreamingError('VALUE_INVALID', message);
}

function checkFinite(value: unknown, field: string, index: number): void {
  if (typeof value !== 'number' || !Number.isFinite(value)) invalid(`results[${index}].${field} is not a finite number`);
}

/** An epoch-milliseconds value we accept: an integer in [0, 2^53). */
export function isEpochMs(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** Throws VALUE_INVALID naming the first bad field of the first bad row. */
export function validateResultRows(rows: readonly ResultRow[]): void {
  rows.forEach((row, index) => {
    if (typeof row.orgId !== 'string' || row.orgId.length === 0) invalid(`results[${index}].orgId is empty`);
    if (typeof row.machineId !== 'string' || row.machineId.length === 0) invalid(`results[${index}].machineId is empty`);
    if (!isEpochMs(row.tsMs)) invalid(`results[${index}].tsMs is not an epoch-milliseconds integer`);
    if (!isEpochMs(row.writtenAtMs)) invalid(`results[${index}].writtenAtMs is not an epoch-milliseconds integer`);
    checkFinite(row.value, 'value', index);
    checkFinite(row.expectedValue, 'expectedValue', index);
    checkFinite(row.upperMargin, 'upperMargin', index);
    checkFinite(row.lowerMargin, 'lowerMargin', index);
    checkFinite(row.severity, 'severity', index);
    if (row.energy !== null) checkFinite(row.energy, 'energy', index);
    if (row.zScore !== null) checkFinite(row.zScore, 'zScore', index);
    for (const flag of ['isAnomaly', 'isPositiveAnomaly', 'isNegativeAnomaly'] as const) {
      if (typeof row[flag] !== 'boolean') invalid(`results[${index}].${flag} is not a boolean`);
    }
    if (!REGIME_SET.has(row.regime)) invalid(`results[${index}].regime ${JSON.stringify(row.regime)} is not a Regime`);
    if (typeof row.modelVersion !== 'string') invalid(`results[${index}].modelVersion is not a string`);
  });
}

/** Throws VALUE_INVALID when a query's bounds are not epoch milliseconds or its limit not a positive integer. */
export function validateResultQuery(query: ResultQuery, maxLimit = 100_000): void {
  if (typeof query.orgId !== 'string' || query.orgId.length === 0) invalid('query.orgId is empty');
  if (typeof query.machineId !== 'string' || query.machineId.length === 0) invalid('query.machineId is empty');
  for (const bound of ['fromMs', 'toMs', 'afterTsMs'] as const) {
    const value = query[bound];
    if (value !== undefined && !isEpochMs(value)) invalid(`query.${bound} is not an epoch-milliseconds integer`);
  }
  if (!Number.isSafeInteger(query.limit) || query.limit < 1 || query.limit > maxLimit) {
    invalid(`query.limit must be an integer in 1..${maxLimit}`);
  }
}

/** A summary's regime counts with every regime present. */
export function emptyRegimeCounts(): Record<ResultRow['regime'], number> {
  return { HEALTHY: 0, ACTIVE: 0, TRANSITION: 0, SHOCK: 0, UNKNOWN: 0 };
}

/**
 * A machine's summary from a store's summary row: columns machine_id, points, anomalies,
 * first_ts_ms, last_ts_ms and regime_<REGIME> for each of REGIMES (numbers, numeric
 * strings or bigints, as the stores' clients return them).
 */
export function machineSummaryFromRow(row: Readonly<Record<string, unknown>>): StoredMachineSummary {
  const regimeCounts = emptyRegimeCounts();
  for (const regime of REGIMES) regimeCounts[regime] = Number(row[`regime_${regime}`] ?? 0);
  return {
    machineId: String(row['machine_id']),
    points: Number(row['points']),
    anomalies: Number(row['anomalies']),
    firstTsMs: Number(row['first_ts_ms']),
    lastTsMs: Number(row['last_ts_ms']),
    regimeCounts,
  };
}

/** The results table's columns in schema order (schemas/clickhouse/0001_results.sql; the embedded DuckDB table mirrors it). */
export const RESULT_COLUMNS: readonly string[] = [
  'org_id',
  'machine_id',
  'ts_ms',
  ...JUDGED_POINT_COLUMN_NAMES,
  'energy',
  'z_score',
  'regime',
  'model_version',
  'written_at_ms',
];
