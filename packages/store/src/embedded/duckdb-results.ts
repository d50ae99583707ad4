// An embedded result store that survives restarts: the results table in a DuckDB file of its own
// under the data directory (`results.duckdb`, beside the embedded store's `platform.duckdb`). The
// same contract as ClickHouse's: each point once per (org, machine, ts), the later `writtenAtMs`
// winning (an upsert here, where ClickHouse merges and reads with FINAL). Every value is bound
// ($1, $2, ...); no SQL is built from caller input. One statement at a time on the one connection.
import type { DuckDBAppender, DuckDBValue } from '@duckdb/node-api';
import type { ResultQuery, ResultRow, ResultStore, StoredMachineSummary } from '@adp/streaming';
import { StreamingError } from '@adp/streaming/errors';
import { appendJudgedPoint, embeddedUnavailable, stagedUpsert, JUDGED_POINT_COLUMNS_SQL, judgedPointOf, openDuckDbFile } from './duckdb-file.js';
import { isEpochMs, machineSummaryFromRow, RESULT_COLUMNS, validateResultQuery, validateResultRows } from '../result-rows.js';
import { channelPrefixOf, checkMachineRef } from '@adp/streaming/series-ids';
import { REGIMES } from '@adp/streaming/schemas';

export interface DuckDbResultStoreOptions {
  /** Directory of the file; created (mode 0700) when absent. */
  readonly dataDir: string;
  /** Default `results.duckdb`. */
  readonly fileName?: string;
}


const SCHEMA = `CREATE TABLE IF NOT EXISTS results (
  org_id VARCHAR NOT NULL,
  machine_id VARCHAR NOT NULL,
  ts_ms BIGINT NOT NULL,
  ${JUDGED_POINT_COLUMNS_SQL},
  energy DOUBLE,
  z_score DOUBLE,
  regime VARCHAR NOT NULL,
  model_version VARCHAR NOT NULL,
  written_at_ms BIGINT NOT NULL,
  PRIMARY KEY (org_id, machine_id, ts_ms)
)`;

/** One row in RESULT_COLUMNS' order (the staging table's). */
function appendRow(appender: DuckDBAppender, row: ResultRow): void {
  appender.appendVarchar(row.orgId);
  appender.appendVarchar(row.machineId);
  appender.appendBigInt(BigInt(row.tsMs));
  appendJudgedPoint(appender, row);
  if (row.energy === null) appender.appendNull();
  else appender.appendDouble(row.energy);
  if (row.zScore === null) appender.appendNull();
  else appender.appendDouble(row.zScore);
  appender.appendVarchar(row.regime);
  appender.appendVarchar(row.modelVersion);
  appender.appendBigInt(BigInt(row.writtenAtMs));
  appender.endRow();
}



function fromRow(row: Record<string, DuckDBValue>): ResultRow {
  const num = (value: DuckDBValue | undefined) => Number(value);
  const nullable = (value: DuckDBValue | undefined) => (value === null || value === undefined ? null : Number(value));
  return {
    orgId: String(row['org_id']),
    machineId: String(row['machine_id']),
    tsMs: num(row['ts_ms']),
    ...judgedPointOf(row),
    energy: nullable(row['energy']),
    zScore: nullable(row['z_score']),
    regime: String(row['regime']) as ResultRow['regime'],
    modelVersion: String(row['model_version']),
    writtenAtMs: num(row['written_at_ms']),
  };
}

export async function createDuckDbResultStore(options: DuckDbResultStoreOptions): Promise<ResultStore> {
  const file = await openDuckDbFile(options.dataDir, options.fileName ?? 'results.duckdb', SCHEMA, 'the result store');
  const { filePath, connection, serial, assertOpen } = file;
  const updates = RESULT_COLUMNS.filter((c) => !['org_id', 'machine_id', 'ts_ms'].includes(c))
    .map((c) => `${c} = excluded.${c}`)
    .join(', ');
  const upsert = await stagedUpsert(
    file,
    'results',
    RESULT_COLUMNS,
    `ON CONFLICT (org_id, machine_id, ts_ms) DO UPDATE SET ${updates} WHERE excluded.written_at_ms >= results.written_at_ms`,
  );


  return {
    async insert(rows: readonly ResultRow[]): Promise<void> {
      assertOpen();
      if (rows.length === 0) return;
      validateResultRows(rows);
      // One row per key in a statement (an upsert cannot touch a row twice): the latest write.
      const latest = new Map<string, ResultRow>();
      for (const row of rows) {
        const key = `${row.orgId}\u0000${row.machineId}\u0000${row.tsMs}`;
        const seen = latest.get(key);
        if (!seen || row.writtenAtMs >= seen.writtenAtMs) latest.set(key, row);
      }
      const unique = [...latest.values()];
      await upsert((appender) => {
        for (const row of unique) appendRow(appender, row);
      }, `inserting ${unique.length} results into ${filePath}`);
    },

    async query(query: ResultQuery): Promise<ResultRow[]> {
      assertOpen();
      validateResultQuery(query);
      const where = ['org_id = $1', 'machine_id = $2'];
      const values: DuckDBValue[] = [query.orgId, query.machineId];
      const bound = (value: number) => {
        values.push(value);
        return `CAST($${values.length} AS BIGINT)`;
      };
      if (query.fromMs !== undefined) where.push(`ts_ms >= ${bound(query.fromMs)}`);
      if (query.toMs !== undefined) where.push(`ts_ms < ${bound(query.toMs)}`);
      if (query.afterTsMs !== undefined) where.push(`ts_ms > ${bound(query.afterTsMs)}`);
      const limit = bound(query.limit);
      return serial(async () => {
        try {
          const reader = await connection.runAndReadAll(
            `SELECT ${RESULT_COLUMNS.join(', ')} FROM results WHERE ${where.join(' AND ')} ORDER BY ts_ms LIMIT ${limit}`,
            values,
          );
          return reader.getRowObjects().map(fromRow);
        } catch (cause) {
          throw embeddedUnavailable(`reading results of ${query.machineId}`, cause);
        }
      });
    },

    async machines(orgId: string): Promise<StoredMachineSummary[]> {
      assertOpen();
      return serial(async () => {
        try {
          const reader = await connection.runAndReadAll(
            `SELECT machine_id, count(*) AS points, count(*) FILTER (WHERE is_anomaly) AS anomalies,
                    min(ts_ms) AS first_ts_ms, max(ts_ms) AS last_ts_ms,
                    ${REGIMES.map((regime, i) => `count(*) FILTER (WHERE regime = $${i + 2}) AS regime_${regime}`).join(', ')}
             FROM results WHERE org_id = $1 GROUP BY machine_id ORDER BY machine_id`,
            [orgId, ...REGIMES],
          );
          return reader.getRowObjects().map(machineSummaryFromRow);
        } catch (cause) {
          throw embeddedUnavailable('summarising machines', cause);
        }
      });
    },

    // An in-process file: a failure shows on the query that meets it, not in a probe.
    async ping(): Promise<void> {},

    async deleteMachine(orgId: string, machineId: string): Promise<boolean> {
      assertOpen();
      checkMachineRef(orgId, machineId, 'deleteMachine');
      const prefix = channelPrefixOf(machineId);
      // starts_with, not LIKE: '_' is a wildcard there and common in machine ids.
      const where =
        prefix === null ? 'org_id = $1 AND machine_id = $2' : 'org_id = $1 AND (machine_id = $2 OR starts_with(machine_id, $3))';
      const values: DuckDBValue[] = prefix === null ? [orgId, machineId] : [orgId, machineId, prefix];
      return serial(async () => {
        try {
          const result = await connection.run(`DELETE FROM results WHERE ${where}`, values);
          return result.rowsChanged > 0;
        } catch (cause) {
          throw embeddedUnavailable(`deleting the results of ${machineId}`, cause);
        }
      });
    },

    async deleteBefore(beforeMs: number): Promise<void> {
      assertOpen();
      if (!isEpochMs(beforeMs)) throw new StreamingError('VALUE_INVALID', 'deleteBefore: beforeMs is not an epoch-milliseconds integer');
      await serial(async () => {
        try {
          await connection.run('DELETE FROM results WHERE ts_ms < CAST($1 AS BIGINT)', [beforeMs]);
        } catch (cause) {
          throw embeddedUnavailable('deleting results past their retention', cause);
        }
      });
    },

    close: () => file.close(),
  };
}
