// The scale-out database under every ClickHouse port: every API replica and worker opens it on the
// same ClickHouse database, so they share organizations, keys, usage, baselines and machines. Runs on ClickHouse 18.16 (CI) and
// current releases: no query parameters, no DateTime64, Bool, TTL or lightweight DELETE/UPDATE.
//
// How values reach SQL: inserts send rows as JSONEachRow bodies (never SQL text); SELECTs
// interpolate strings through `sqlString` (escaped, tested over every byte) and integers through
// `sqlInteger`; the database name is checked by `sqlIdentifier`. The tables are described in
// schemas/clickhouse/0002_store.sql.
//
// ClickHouse has no transactions and no unique constraints. What that means here (also in the
// package README):
//   - check-then-insert is not atomic. Two replicas creating the same organization at once both
//     insert; the row with the higher version wins and one caller may have been handed the other's
//     name. Two replicas creating the same API key at once both report `created: true`, but they
//     write the same key id (derived from the hash), so it is still one key that one revocation
//     revokes. Two revocations at once both answer `true`.
//   - the first-start bootstrap is guarded by claims (see `completeBootstrap`): at most one replica
//     issues keys. Replicas that keep colliding give up after a few attempts (null, nothing issued)
//     and a replica that died holding a claim blocks others for BOOTSTRAP_CLAIM_WINDOW_MS; either way
//     the organization stays unbootstrapped and the next start repairs it. The guarantee assumes one
//     ClickHouse server (an acknowledged insert is visible to the next SELECT), which is what the
//     scale-out configuration runs; with Replicated tables use insert_quorum and
//     select_sequential_consistency.
//   - a multi-row change (a baseline write: machine row, then baseline row; a deletion: two
//     tombstones) can be cut halfway by a crash. The order is chosen so that a half-done write leaves
//     a usable state (a machine with restarted counters and its old baseline).
//   - a detection recorded while another replica rewrites the machine's baseline is counted against
//     the counters generation it read, so it may fall outside the restarted counters.
//   - usage, detections and key uses are group-committed (InsertBatcher). An insert that fails is not
//     retried (a retry after a lost acknowledgement would count twice); the promises of every call
//     in that batch reject instead.
import type { ClickHouseClient } from '@clickhouse/client';
import { StreamingError } from '@adp/streaming/errors';
import { StoreDatabase, closedError, describe } from '../database.js';
import { StoreError, type StoreErrorCode } from '../errors.js';
import { openClickHouse } from './client.js';
import { clickHouseFailure } from './failures.js';
import { InsertBatcher } from './insert-batcher.js';
import { VersionClock } from './version-clock.js';

export interface ClickHouseStoreOptions {
  /** ClickHouse's HTTP interface, e.g. `http://127.0.0.1:8123`. */
  readonly url: string;
  /**
   * Database of the store's tables: created when absent and migrated at open with every file in
   * `migrationsDir`. A plain identifier (`[A-Za-z_][A-Za-z0-9_]{0,62}`); anything else is refused.
   */
  readonly database: string;
  /** Default `default`. */
  readonly username?: string;
  /** Default empty. */
  readonly password?: string;
  /** Longest a query or insert may take, in ms, before it fails as STORE_UNAVAILABLE. Default 10 000. */
  readonly requestTimeoutMs?: number;
  /** Longest `ping()` waits, in ms. Default 2 000: a readiness probe must answer quickly. */
  readonly pingTimeoutMs?: number;
  /**
   * Least time between two inserts into the same table from this process, ms, for the writes on the
   * request path (usage, detections, key use); what arrives meanwhile goes into the next insert.
   * Default 25: an idle store writes at once, a busy one makes at most 40 parts a second per table
   * (ClickHouse refuses inserts once a partition has 300 unmerged parts) at the cost of up to 25 ms
   * on the requests that wait. 0 inserts back to back.
   */
  readonly minInsertIntervalMs?: number;
  /** Where the migrations are. Default: schemas/clickhouse/ of this repository. */
  readonly migrationsDir?: string;
  /** Clock for the recorded times (created, used, revoked, detected) and usage days (UTC). Default: the system clock. */
  readonly now?: () => Date;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

const DEFAULT_PING_TIMEOUT_MS = 2_000;

const DEFAULT_MIN_INSERT_INTERVAL_MS = 25;

/** Connects to `options.database`, creating and migrating it when needed. */
export async function openClickHouseDatabase(options: ClickHouseStoreOptions): Promise<ClickHouseDatabase> {
  const durations = {
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    pingTimeoutMs: options.pingTimeoutMs ?? DEFAULT_PING_TIMEOUT_MS,
    minInsertIntervalMs: options.minInsertIntervalMs ?? DEFAULT_MIN_INSERT_INTERVAL_MS,
  };
  for (const [name, value] of Object.entries(durations)) {
    const least = name === 'minInsertIntervalMs' ? 0 : 1;
    if (!Number.isFinite(value) || value < least) {
      throw new StoreError('STORE_INVALID_ARGUMENT', 'open', `${name} must be a finite number of ms, at least ${least}`);
    }
  }
  let opened: Awaited<ReturnType<typeof openClickHouse>>;
  try {
    opened = await openClickHouse({ ...options, requestTimeoutMs: durations.requestTimeoutMs });
  } catch (cause) {
    // A bad name or URL is the caller's. A refused or edited migration is a deployment error, not
    // an outage, but either way the store cannot serve; STORE_UNAVAILABLE keeps the API answering
    // 503 while it is fixed.
    if (cause instanceof StreamingError && (cause.code === 'INVALID_IDENTIFIER' || cause.code === 'VALUE_INVALID')) {
      throw new StoreError('STORE_INVALID_ARGUMENT', 'open', describe(cause), { cause });
    }
    const where = cause instanceof StreamingError ? ` (${cause.code})` : '';
    throw new StoreError('STORE_UNAVAILABLE', 'open', `cannot migrate ${options.database}${where}: ${describe(cause)}`, { cause });
  }
  return new ClickHouseDatabase(
    opened.client,
    opened.database,
    durations.pingTimeoutMs,
    options.now ?? (() => new Date()),
    durations.minInsertIntervalMs,
  );
}

/** An entity's latest row under FINAL: the live state (null when absent or deleted) and the version to write after. */
export interface Versioned<T> {
  readonly live: T | null;
  readonly version: number;
}

/** The client, the table names, the version clock and the store's lifecycle, shared by the ClickHouse ports. */
export class ClickHouseDatabase extends StoreDatabase {
  readonly clock = new VersionClock();
  private readonly inFlight = new Set<Promise<unknown>>();
  readonly t: Readonly<Record<
    | 'organizations'
    | 'claims'
    | 'keys'
    | 'usage'
    | 'usageByKind'
    | 'machines'
    | 'baselines'
    | 'baselineActivity'
    | 'detections'
    | 'audit'
    | 'meteringCalls'
    | 'meteringLedger'
    | 'users'
    | 'sessions'
    | 'marketplaceCustomers'
    | 'alerting',
    string
  >>;

  constructor(
    private readonly client: ClickHouseClient,
    database: string,
    private readonly pingTimeoutMs: number,
    readonly now: () => Date,
    private readonly minInsertIntervalMs: number,
  ) {
    super();
    this.t = {
      organizations: `${database}.store_organizations`,
      claims: `${database}.store_bootstrap_claims`,
      keys: `${database}.store_api_keys`,
      usage: `${database}.store_usage_daily`,
      usageByKind: `${database}.store_usage_by_kind_daily`,
      machines: `${database}.store_machines`,
      baselines: `${database}.store_baselines`,
      baselineActivity: `${database}.store_baseline_activity`,
      detections: `${database}.store_machine_detections`,
      audit: `${database}.store_audit_events`,
      meteringCalls: `${database}.store_metering_hourly_calls`,
      meteringLedger: `${database}.store_metering_ledger`,
      users: `${database}.store_user_accounts`,
      sessions: `${database}.store_dashboard_sessions`,
      marketplaceCustomers: `${database}.store_marketplace_customers`,
      alerting: `${database}.store_alerting`,
    };
  }

  /** Group commit for `table`, for the writes on the request path; its flushes are waited for on close. */
  batcher(operation: string, table: string): InsertBatcher {
    return new InsertBatcher((rows) => this.insert(operation, table, rows), this.minInsertIntervalMs, (flush) => this.track(flush));
  }

  ping(): Promise<void> {
    return this.op('ping', async (operation) => {
      // A SELECT, not the /ping endpoint: it proves the credentials work too, and costs as little.
      const result = await this.client.ping({ select: true, abort_signal: AbortSignal.timeout(this.pingTimeoutMs) });
      if (!result.success) throw storeErrorFrom(operation, result.error);
    });
  }

  protected async shutdown(): Promise<void> {
    try {
      // Writes accepted before close wait in a batcher or are in flight; both are tracked.
      while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    } finally {
      await this.client.close();
    }
  }

  track<T>(promise: Promise<T>): Promise<T> {
    this.inFlight.add(promise);
    const forget = () => this.inFlight.delete(promise);
    promise.then(forget, forget);
    return promise;
  }

  /** Runs `task`, refusing after close, and turns every failure into a StoreError. */
  op<T>(operation: string, task: (operation: string) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(closedError(operation));
    return this.track(
      (async () => {
        try {
          return await task(operation);
        } catch (cause) {
          if (cause instanceof StoreError) throw cause;
          throw new StoreError('STORE_QUERY_FAILED', operation, describe(cause), { cause });
        }
      })(),
    );
  }

  async rows<T>(operation: string, query: string): Promise<T[]> {
    try {
      const result = await this.client.query({ query, format: 'JSONEachRow' });
      return await result.json<T>();
    } catch (cause) {
      throw storeErrorFrom(operation, cause);
    }
  }

  async insert(operation: string, table: string, values: readonly Record<string, unknown>[]): Promise<void> {
    try {
      // JSONEachRow always: the client's default format is unknown to 18.16.
      await this.client.insert({ table, values: [...values], format: 'JSONEachRow' });
    } catch (cause) {
      throw storeErrorFrom(operation, cause);
    }
  }

  /** A statement without a result set (INSERT ... SELECT). */
  async command(operation: string, query: string): Promise<void> {
    try {
      await this.client.command({ query });
    } catch (cause) {
      throw storeErrorFrom(operation, cause);
    }
  }

  /** The version of a row written now (`clock`). */
  nextVersion(): number {
    return this.clock.next();
  }

  nowMs(): number {
    const ms = this.now().getTime();
    if (!Number.isSafeInteger(ms)) throw new StoreError('STORE_INVALID_ARGUMENT', 'now', 'the clock returned an invalid date');
    return ms;
  }
}

/**
 * What the port adapters that do not extend `ClickHouseAdapter` (accounts, audit, metering, daily
 * usage, alerting) borrow from the database: its close-aware runner, reads, inserts, statements and
 * version clock. The database is one; a narrower one can stand in for it.
 */
export type ClickHouseAccess = Pick<ClickHouseDatabase, 'op' | 'rows' | 'insert' | 'command' | 'nextVersion'>;

/**
 * What every ClickHouse port adapter starts from: the shared database's close-aware `op`, reads,
 * inserts, table names, version clock and clock, under the names the adapters' queries use.
 */
export abstract class ClickHouseAdapter {
  constructor(protected readonly db: ClickHouseDatabase) {}

  protected get t(): ClickHouseDatabase['t'] {
    return this.db.t;
  }

  protected get clock(): VersionClock {
    return this.db.clock;
  }

  protected op<T>(operation: string, task: (operation: string) => Promise<T>): Promise<T> {
    return this.db.op(operation, task);
  }

  protected rows<T>(operation: string, query: string): Promise<T[]> {
    return this.db.rows<T>(operation, query);
  }

  protected insert(operation: string, table: string, values: readonly Record<string, unknown>[]): Promise<void> {
    return this.db.insert(operation, table, values);
  }

  protected nowMs(): number {
    return this.db.nowMs();
  }
}

/**
 * A failed query or insert as a StoreError. ClickHouse answered with an error code (from
 * ClickHouseError, or on 18.16 only in the message text): STORE_QUERY_FAILED. No answer at all
 * (refused, reset, timed out): STORE_UNAVAILABLE. Both are retriable and the API answers 503.
 */
export function storeErrorFrom(operation: string, cause: unknown): StoreError {
  if (cause instanceof StoreError) return cause;
  const { serverCode, message } = clickHouseFailure(cause);
  const code: StoreErrorCode = serverCode === undefined ? 'STORE_UNAVAILABLE' : 'STORE_QUERY_FAILED';
  return new StoreError(code, operation, message, { cause });
}
