// The usage port in the embedded database (table `usage_by_kind_daily`): increments are
// group-committed on the embedded database's queue, so a burst of requests costs one write.
import type { DuckDBPreparedStatement } from '@duckdb/node-api';
import { StoreError } from '../errors.js';
import { organizationUsage, type ApiKeyKind, type OrganizationUsage, type UsageQuery, type UsageStore } from '../types.js';
import { closedError, describe } from '../database.js';
import { EmbeddedAdapter, type EmbeddedDatabase } from './duckdb-database.js';

interface UsageIncrement {
  readonly orgId: string;
  readonly keyKind: ApiKeyKind;
  readonly endpoint: string;
  readonly day: string;
  points: number;
  calls: number;
}

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

/** Batch sizes (distinct organization, endpoint and day keys) whose usage upsert stays prepared. */
const USAGE_PREPARED_MAX = 8;

/** The usage upsert for `rows` increments: $1..$6 the first row's org, key kind, endpoint, day, points, calls, and so on. */
function usageUpsertSql(rows: number): string {
  const values = Array.from(
    { length: rows },
    (_, k) => `($${6 * k + 1}, $${6 * k + 2}, $${6 * k + 3}, CAST($${6 * k + 4} AS DATE), $${6 * k + 5}, $${6 * k + 6})`,
  );
  return `INSERT INTO usage_by_kind_daily (org_id, key_kind, endpoint, day, points, calls)
            VALUES ${values.join(', ')}
            ON CONFLICT (org_id, key_kind, endpoint, day) DO UPDATE
            SET points = usage_by_kind_daily.points + excluded.points, calls = usage_by_kind_daily.calls + excluded.calls`;
}

export class DuckDBUsageStore extends EmbeddedAdapter implements UsageStore {
  private usageBatch = new Map<string, UsageIncrement>();
  private usageWaiters: Waiter[] = [];
  private usageFlushScheduled = false;
  /**
   * The usage upsert prepared once per batch size (up to USAGE_PREPARED_MAX keys): preparing it
   * again for every flush cost a second round trip to the database, as much as the upsert itself.
   */
  private readonly usageUpserts = new Map<number, DuckDBPreparedStatement>();
  /** The update of one existing (organization, endpoint, day) row: a lone request's flush, the usual case. */
  private usageUpdate: DuckDBPreparedStatement | undefined;

  constructor(db: EmbeddedDatabase) {
    super(db);
    db.onClose(() => {
      for (const upsert of this.usageUpserts.values()) upsert.destroySync();
      this.usageUpserts.clear();
      this.usageUpdate?.destroySync();
      this.usageUpdate = undefined;
    });
  }

  recordUsage(orgId: string, endpoint: string, points: number, keyKind: ApiKeyKind = 'live'): Promise<void> {
    if (this.db.closed) return Promise.reject(closedError('recordUsage'));
    if (!orgId || !endpoint || !Number.isSafeInteger(points) || points < 0 || (keyKind !== 'live' && keyKind !== 'test')) {
      return Promise.reject(
        new StoreError(
          'STORE_INVALID_ARGUMENT',
          'recordUsage',
          'orgId and endpoint must be non-empty, points a non-negative integer and keyKind live or test',
        ),
      );
    }
    const day = this.db.now().toISOString().slice(0, 10);
    // JSON keeps the composite key unambiguous whatever characters the parts contain.
    const batchKey = JSON.stringify([orgId, keyKind, endpoint, day]);
    const increment = this.usageBatch.get(batchKey);
    if (increment) {
      increment.points += points;
      increment.calls += 1;
    } else {
      this.usageBatch.set(batchKey, { orgId, keyKind, endpoint, day, points, calls: 1 });
    }
    const written = new Promise<void>((resolve, reject) => this.usageWaiters.push({ resolve, reject }));
    if (!this.usageFlushScheduled) {
      this.usageFlushScheduled = true;
      void this.db.queue.run(() => this.flushUsage());
    }
    return written;
  }

  usageFor(orgId: string, query: UsageQuery = {}): Promise<OrganizationUsage> {
    return this.op('usageFor', async () => {
      const sinceDay = query.since === undefined ? '0001-01-01' : utcDay('usageFor', query.since);
      const reader = await this.connection.runAndReadAll(
        `SELECT endpoint, CAST(sum(points) AS BIGINT) AS points, CAST(sum(calls) AS BIGINT) AS calls
           FROM usage_by_kind_daily
          WHERE org_id = $1 AND ($2 = '' OR key_kind = $2) AND day >= CAST($3 AS DATE)
          GROUP BY endpoint ORDER BY endpoint`,
        [orgId, query.keyKind ?? '', sinceDay],
      );
      const byEndpoint = reader.getRowObjects().map((row) => ({
        endpoint: String(row['endpoint']),
        points: Number(row['points']),
        calls: Number(row['calls']),
      }));
      return organizationUsage(orgId, byEndpoint);
    });
  }

  private async flushUsage(): Promise<void> {
    const batch = [...this.usageBatch.values()];
    const waiters = this.usageWaiters;
    this.usageBatch = new Map();
    this.usageWaiters = [];
    this.usageFlushScheduled = false;
    if (batch.length === 0) {
      for (const waiter of waiters) waiter.resolve();
      return;
    }
    try {
      // A lone key whose row exists already (the same organization, endpoint and day as an earlier
      // call): one UPDATE, about a third of an upsert's cost in DuckDB, which checks its key index
      // for the conflict. No row changed: the key is new today, and the upsert below adds it.
      if (batch.length === 1) {
        const [only] = batch as [UsageIncrement];
        this.usageUpdate ??= await this.connection.prepare(
          `UPDATE usage_by_kind_daily SET points = points + $5, calls = calls + $6
             WHERE org_id = $1 AND key_kind = $2 AND endpoint = $3 AND day = CAST($4 AS DATE)`,
        );
        this.usageUpdate.bind([only.orgId, only.keyKind, only.endpoint, only.day, BigInt(only.points), BigInt(only.calls)]);
        if ((await this.usageUpdate.run()).rowsChanged === 1) {
          for (const waiter of waiters) waiter.resolve();
          return;
        }
      }
      // One statement, atomic on its own (autocommit), prepared once per batch size: BEGIN, an
      // upsert per key (each prepared anew) and COMMIT took about twice as long for a single
      // request's increment. The batch holds each (org, endpoint, day) once, as ON CONFLICT
      // requires.
      const reused = this.usageUpserts.get(batch.length);
      const upsert = reused ?? (await this.connection.prepare(usageUpsertSql(batch.length)));
      try {
        upsert.bind(
          batch.flatMap((increment) => [
            increment.orgId,
            increment.keyKind,
            increment.endpoint,
            increment.day,
            BigInt(increment.points),
            BigInt(increment.calls),
          ]),
        );
        await upsert.run();
      } finally {
        if (reused === undefined) {
          if (batch.length <= USAGE_PREPARED_MAX) this.usageUpserts.set(batch.length, upsert);
          else upsert.destroySync();
        }
      }
      for (const waiter of waiters) waiter.resolve();
    } catch (cause) {
      const error = new StoreError('STORE_QUERY_FAILED', 'recordUsage', describe(cause), { cause });
      for (const waiter of waiters) waiter.reject(error);
    }
  }
}

/** The UTC day (YYYY-MM-DD) of `at`. */
function utcDay(operation: string, at: Date): string {
  if (!Number.isFinite(at.getTime())) throw new StoreError('STORE_INVALID_ARGUMENT', operation, 'dates must be valid');
  return at.toISOString().slice(0, 10);
}
