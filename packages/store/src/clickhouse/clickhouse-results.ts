// The scale-out result store: `{database}.results` in ClickHouse (schemas/clickhouse/0001_results.sql).
// Inserts are RowBinary bodies (./row-binary.ts: every double stored bit for bit, which
// text formats do not guarantee); the insert resolves when the server has written the block, which
// is what lets the worker commit its offsets after it. Replayed rows are harmless: the table is a ReplacingMergeTree on
// (org_id, machine_id, ts_ms) versioned by written_at_ms, and every read here uses FINAL. Reads
// interpolate only the validated database name, escaped string literals and checked integers:
// 18.16 has no server-side query parameters. Deletions (a deleted machine, retention) are
// `ALTER TABLE ... DELETE WHERE` mutations, which 18.16 runs in the background: a machine's
// deletion waits, bounded, for the table's mutations to finish, so its results stop being served
// by the time it answers (18.16 has no `mutations_sync`).
import { Readable } from 'node:stream';
import { clickHouseError, judgedPointOfRecord, openClickHouse } from './client.js';
import type { JudgedPointRecord } from '../judged-point.js';
import { encodeResultRowsRowBinary } from './row-binary.js';
import type { ResultQuery, ResultRow, ResultStore, StoredMachineSummary } from '@adp/streaming';
import { StreamingError } from '@adp/streaming/errors';
import { isEpochMs, machineSummaryFromRow, RESULT_COLUMNS, validateResultQuery, validateResultRows } from '../result-rows.js';
import { channelPrefixOf, checkMachineRef } from '@adp/streaming/series-ids';
import { REGIMES } from '@adp/streaming/schemas';
import { sqlInteger, sqlString } from './sql.js';
import { retrying, stopRetrying, type RetryPolicy } from '@adp/streaming/retry';

export interface ClickHouseResultStoreOptions {
  /** `http://host:8123`. */
  readonly url: string;
  /** Database holding `results`; a plain identifier. Default `adp`. */
  readonly database?: string;
  readonly username?: string;
  readonly password?: string;
  /** Apply schemas/clickhouse/ migrations before the first use. Default true. */
  readonly migrate?: boolean;
  /** Per-request timeout, ms. Default 30000. */
  readonly requestTimeoutMs?: number;
  /**
   * Longest wait, ms, for a machine's deletion mutation to finish before deleteMachine resolves
   * anyway (the rows then disappear when it does). Default 30000.
   */
  readonly mutationWaitMs?: number;
}

/** Longest a readiness ping waits for ClickHouse, ms. */
const PING_TIMEOUT_MS = 2_000;
/** Asking whether a deletion's mutation is done: soon at first (small tables finish in ms), then every 500 ms. */
const MUTATION_POLL: RetryPolicy = { initialDelayMs: 20, multiplier: 2, maxDelayMs: 500, jitter: false };

/** A row as JSONEachRow reads it (64-bit integers as numbers: below 2^53 here). */
interface ResultRecord extends JudgedPointRecord {
  org_id: string;
  machine_id: string;
  ts_ms: number;
  energy: number | null;
  z_score: number | null;
  regime: ResultRow['regime'];
  model_version: string;
  written_at_ms: number;
}

function fromRecord(record: ResultRecord): ResultRow {
  return {
    orgId: record.org_id,
    machineId: record.machine_id,
    tsMs: Number(record.ts_ms),
    ...judgedPointOfRecord(record),
    energy: record.energy,
    zScore: record.z_score,
    regime: record.regime,
    modelVersion: record.model_version,
    writtenAtMs: Number(record.written_at_ms),
  };
}

/**
 * Connects, migrates (unless `migrate: false`) and returns the store. Throws INVALID_IDENTIFIER for
 * a bad database name and the migration runner's errors.
 */
export async function createClickHouseResultStore(options: ClickHouseResultStoreOptions): Promise<ResultStore> {
  const { client, database } = await openClickHouse({
    ...options,
    database: options.database ?? 'adp',
    requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
  });
  const table = `${database}.results`;
  let closed = false;

  function assertOpen(): void {
    if (closed) throw new StreamingError('STREAMING_CLOSED', 'the ClickHouse result store is closed');
  }

  async function select<T>(query: string, what: string): Promise<T[]> {
    try {
      const result = await client.query({ query, format: 'JSONEachRow' });
      return await result.json<T>();
    } catch (error) {
      throw clickHouseError(error, what, database);
    }
  }

  async function mutate(statement: string, what: string): Promise<void> {
    try {
      await client.command({ query: statement });
    } catch (error) {
      throw clickHouseError(error, what, database);
    }
  }

  /** Waits until the results table has no mutation left to do, or `maxWaitMs` has passed. */
  async function mutationsDone(maxWaitMs: number): Promise<void> {
    const stillPending = new Error('mutations pending');
    try {
      await retrying(
        async () => {
          const pending = await select<{ n: number }>(
            `SELECT count() AS n FROM system.mutations
             WHERE database = ${sqlString(database)} AND table = 'results' AND is_done = 0`,
            'waiting for a deletion',
          ).catch(stopRetrying);
          if (Number(pending[0]?.n ?? 0) > 0) throw stillPending;
        },
        { policy: MUTATION_POLL, maxElapsedMs: maxWaitMs },
      );
    } catch (error) {
      // Out of time with mutations left: they finish in the background.
      if (error !== stillPending) throw error;
    }
  }

  return {
    async insert(rows: readonly ResultRow[]): Promise<void> {
      assertOpen();
      if (rows.length === 0) return;
      validateResultRows(rows);
      try {
        // The response arrives once the server has written the block; reading it to the end
        // frees the connection for the next request.
        const result = await client.exec({
          query: `INSERT INTO ${table} (${RESULT_COLUMNS.join(', ')}) FORMAT RowBinary`,
          values: Readable.from([encodeResultRowsRowBinary(rows)]),
        });
        for await (const _ of result.stream) {
          // The body of an INSERT's answer is empty.
        }
      } catch (error) {
        throw clickHouseError(error, `inserting ${rows.length} results into ${table}`, database);
      }
    },

    async query(query: ResultQuery): Promise<ResultRow[]> {
      assertOpen();
      validateResultQuery(query);
      const where = [
        `org_id = ${sqlString(query.orgId)}`,
        `machine_id = ${sqlString(query.machineId)}`,
      ];
      if (query.fromMs !== undefined) where.push(`ts_ms >= ${sqlInteger(query.fromMs, 'query')}`);
      if (query.toMs !== undefined) where.push(`ts_ms < ${sqlInteger(query.toMs, 'query')}`);
      if (query.afterTsMs !== undefined) where.push(`ts_ms > ${sqlInteger(query.afterTsMs, 'query')}`);
      const records = await select<ResultRecord>(
        `SELECT ${RESULT_COLUMNS.join(', ')} FROM ${table} FINAL WHERE ${where.join(' AND ')}
         ORDER BY ts_ms LIMIT ${sqlInteger(query.limit, 'query')}`,
        `reading results of ${query.machineId}`,
      );
      return records.map(fromRecord);
    },

    async machines(orgId: string): Promise<StoredMachineSummary[]> {
      assertOpen();
      if (typeof orgId !== 'string' || orgId.length === 0) {
        throw new StreamingError('VALUE_INVALID', 'machines: orgId is empty');
      }
      const rows = await select<Record<string, string | number>>(
        `SELECT machine_id, count() AS points, countIf(is_anomaly = 1) AS anomalies,
                min(ts_ms) AS first_ts_ms, max(ts_ms) AS last_ts_ms,
                ${REGIMES.map((regime) => `countIf(regime = '${regime}') AS regime_${regime}`).join(', ')}
         FROM ${table} FINAL WHERE org_id = ${sqlString(orgId)}
         GROUP BY machine_id ORDER BY machine_id`,
        'summarising machines',
      );
      return rows.map(machineSummaryFromRow);
    },

    async ping(): Promise<void> {
      assertOpen();
      // A SELECT rather than /ping: it proves the credentials too. Bounded: a probe must answer soon.
      const result = await client
        .ping({ select: true, abort_signal: AbortSignal.timeout(PING_TIMEOUT_MS) })
        .catch((error: unknown) => ({ success: false as const, error }));
      if (!result.success) throw clickHouseError(result.error, 'pinging', database);
    },

    async deleteMachine(orgId: string, machineId: string): Promise<boolean> {
      assertOpen();
      checkMachineRef(orgId, machineId, 'deleteMachine');
      const prefix = channelPrefixOf(machineId);
      // substring over bytes against the prefix's byte length: no LIKE wildcards to escape.
      const series =
        prefix === null
          ? `machine_id = ${sqlString(machineId)}`
          : `(machine_id = ${sqlString(machineId)} OR substring(machine_id, 1, ${Buffer.byteLength(prefix)}) = ${sqlString(prefix)})`;
      const where = `org_id = ${sqlString(orgId)} AND ${series}`;
      const counted = await select<{ n: number }>(`SELECT count() AS n FROM ${table} WHERE ${where}`, `counting the results of ${machineId}`);
      if (Number(counted[0]?.n ?? 0) === 0) return false;
      await mutate(`ALTER TABLE ${table} DELETE WHERE ${where}`, `deleting the results of ${machineId}`);
      await mutationsDone(options.mutationWaitMs ?? 30_000);
      return true;
    },

    async deleteBefore(beforeMs: number): Promise<void> {
      assertOpen();
      if (!isEpochMs(beforeMs)) throw new StreamingError('VALUE_INVALID', 'deleteBefore: beforeMs is not an epoch-milliseconds integer');
      const where = `ts_ms < ${sqlInteger(beforeMs, 'deleteBefore')}`;
      // A mutation rewrites every part it touches: none when nothing is due.
      const counted = await select<{ n: number }>(`SELECT count() AS n FROM ${table} WHERE ${where}`, 'counting results past their retention');
      if (Number(counted[0]?.n ?? 0) === 0) return;
      await mutate(`ALTER TABLE ${table} DELETE WHERE ${where}`, 'deleting results past their retention');
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await client.close();
    },
  };
}
