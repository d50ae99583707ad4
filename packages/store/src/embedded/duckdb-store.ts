// The embedded default: one DuckDB file, one connection, every operation through one queue.
//
// Why one queue: DuckDB allows a single writer per database and a connection must not run two
// statements at once. Serialising is cheap here because each operation is a point query; the one
// hot write, usage metering, is group-committed (all increments that arrive while a commit is in
// flight go into the next transaction), so throughput does not fall to one fsync per request.
//
// Every statement binds its values ($1, $2, ...); no SQL is built from caller input.
import { mkdir } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import { StoreError } from '../errors.js';
import { SerialQueue } from '../serial-queue.js';
import { MIGRATIONS } from './migrations.js';
import type {
  ApiKeyKind,
  ApiKeyRecord,
  CreateApiKeyResult,
  NewApiKey,
  Organization,
  OrganizationUsage,
  Store,
} from '../types.js';

export const DEFAULT_ORGANIZATION_ID = 'org_default';
export const DEFAULT_ORGANIZATION_NAME = 'Default organization';
export const EMBEDDED_STORE_FILE_NAME = 'platform.duckdb';

export interface EmbeddedStoreOptions {
  /** Directory that holds the database file; created (mode 0700) when absent. */
  readonly dataDir: string;
  /** Database file name inside `dataDir`. Default `platform.duckdb`. */
  readonly fileName?: string;
  /** Clock for timestamps and usage days (UTC). Default: the system clock. */
  readonly now?: () => Date;
}

// DuckDB's file lock is per process, so a second instance in the same process would open the same
// file without complaint and the two would overwrite each other. This set refuses that case.
const openDatabaseFiles = new Set<string>();

type Row = Record<string, DuckDBValue>;

/** Opens (creating and migrating when needed) the embedded store under `options.dataDir`. */
export async function openEmbeddedStore(options: EmbeddedStoreOptions): Promise<Store> {
  const filePath = path.resolve(options.dataDir, options.fileName ?? EMBEDDED_STORE_FILE_NAME);
  if (openDatabaseFiles.has(filePath)) {
    throw new StoreError('STORE_UNAVAILABLE', 'open', `${filePath} is already open in this process`);
  }
  openDatabaseFiles.add(filePath);
  let instance: DuckDBInstance | undefined;
  let connection: DuckDBConnection | undefined;
  try {
    await mkdir(path.dirname(filePath), { recursive: true, mode: 0o700 });
    instance = await DuckDBInstance.create(filePath);
    connection = await instance.connect();
    await migrate(connection);
  } catch (cause) {
    connection?.closeSync();
    instance?.closeSync();
    openDatabaseFiles.delete(filePath);
    throw new StoreError('STORE_UNAVAILABLE', 'open', `cannot open ${filePath}: ${describe(cause)}`, { cause });
  }
  return new DuckDBStore(filePath, instance, connection, options.now ?? (() => new Date()));
}

async function migrate(connection: DuckDBConnection): Promise<void> {
  await connection.run(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMP NOT NULL)',
  );
  const reader = await connection.runAndReadAll('SELECT version FROM schema_migrations');
  const applied = new Set(reader.getRowObjects().map((row) => Number(row['version'])));
  for (const migration of MIGRATIONS) {
    if (applied.has(migration.version)) continue;
    await connection.run('BEGIN TRANSACTION');
    try {
      for (const statement of migration.statements) await connection.run(statement);
      await connection.run('INSERT INTO schema_migrations VALUES ($1, current_localtimestamp())', [migration.version]);
      await connection.run('COMMIT');
    } catch (err) {
      await connection.run('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }
}

interface UsageIncrement {
  readonly orgId: string;
  readonly endpoint: string;
  readonly day: string;
  points: number;
  calls: number;
}

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

const KEY_COLUMNS =
  'id, org_id, kind, prefix, key_hash, epoch_ms(created_at) AS created_ms, ' +
  'epoch_ms(last_used_at) AS last_used_ms, epoch_ms(revoked_at) AS revoked_ms';

class DuckDBStore implements Store {
  private readonly queue = new SerialQueue();
  private closed = false;
  private closing: Promise<void> | undefined;
  private usageBatch = new Map<string, UsageIncrement>();
  private usageWaiters: Waiter[] = [];
  private usageFlushScheduled = false;

  constructor(
    private readonly filePath: string,
    private readonly instance: DuckDBInstance,
    private readonly connection: DuckDBConnection,
    private readonly now: () => Date,
  ) {}

  ensureDefaultOrganization(): Promise<Organization> {
    return this.op('ensureDefaultOrganization', async () => {
      await this.connection.run(
        'INSERT INTO organizations (id, name, created_at) VALUES ($1, $2, epoch_ms(CAST($3 AS BIGINT))) ON CONFLICT (id) DO NOTHING',
        [DEFAULT_ORGANIZATION_ID, DEFAULT_ORGANIZATION_NAME, this.nowMs()],
      );
      const organization = await this.organizationById(DEFAULT_ORGANIZATION_ID);
      if (!organization) throw new Error('default organization missing right after insert');
      return organization;
    });
  }

  completeBootstrap(orgId: string, keys: readonly NewApiKey[]): Promise<readonly ApiKeyRecord[] | null> {
    return this.op('completeBootstrap', async () => {
      keys.forEach((key) => validateNewKey('completeBootstrap', key));
      await this.requireOrganization('completeBootstrap', orgId);
      return this.transaction(async () => {
        const marked = await this.connection.run(
          'UPDATE organizations SET bootstrapped_at = epoch_ms(CAST($2 AS BIGINT)) WHERE id = $1 AND bootstrapped_at IS NULL',
          [orgId, this.nowMs()],
        );
        if (marked.rowsChanged === 0) return null;
        const records: ApiKeyRecord[] = [];
        for (const key of keys) records.push(await this.insertKey(orgId, key));
        return records;
      });
    });
  }

  createApiKey(orgId: string, key: NewApiKey): Promise<CreateApiKeyResult> {
    return this.op('createApiKey', async () => {
      validateNewKey('createApiKey', key);
      await this.requireOrganization('createApiKey', orgId);
      const existing = await this.keyByHash(key.keyHash);
      if (existing) return { key: existing, created: false };
      return { key: await this.insertKey(orgId, key), created: true };
    });
  }

  findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | null> {
    return this.op('findApiKeyByHash', () => this.keyByHash(keyHash));
  }

  listApiKeys(orgId: string): Promise<readonly ApiKeyRecord[]> {
    return this.op('listApiKeys', async () => {
      const reader = await this.connection.runAndReadAll(
        `SELECT ${KEY_COLUMNS} FROM api_keys WHERE org_id = $1 ORDER BY created_at, id`,
        [orgId],
      );
      return reader.getRowObjects().map(toApiKey);
    });
  }

  revokeApiKey(keyId: string): Promise<boolean> {
    return this.op('revokeApiKey', async () => {
      const result = await this.connection.run(
        'UPDATE api_keys SET revoked_at = epoch_ms(CAST($2 AS BIGINT)) WHERE id = $1 AND revoked_at IS NULL',
        [keyId, this.nowMs()],
      );
      return result.rowsChanged > 0;
    });
  }

  touchApiKey(keyId: string, at: Date): Promise<void> {
    return this.op('touchApiKey', async () => {
      await this.connection.run('UPDATE api_keys SET last_used_at = epoch_ms(CAST($2 AS BIGINT)) WHERE id = $1', [
        keyId,
        BigInt(at.getTime()),
      ]);
    });
  }

  recordUsage(orgId: string, endpoint: string, points: number): Promise<void> {
    if (this.closed) return Promise.reject(closedError('recordUsage'));
    if (!orgId || !endpoint || !Number.isSafeInteger(points) || points < 0) {
      return Promise.reject(
        new StoreError(
          'STORE_INVALID_ARGUMENT',
          'recordUsage',
          'orgId and endpoint must be non-empty and points a non-negative integer',
        ),
      );
    }
    const day = this.now().toISOString().slice(0, 10);
    // JSON keeps the composite key unambiguous whatever characters the parts contain.
    const batchKey = JSON.stringify([orgId, endpoint, day]);
    const increment = this.usageBatch.get(batchKey);
    if (increment) {
      increment.points += points;
      increment.calls += 1;
    } else {
      this.usageBatch.set(batchKey, { orgId, endpoint, day, points, calls: 1 });
    }
    const written = new Promise<void>((resolve, reject) => this.usageWaiters.push({ resolve, reject }));
    if (!this.usageFlushScheduled) {
      this.usageFlushScheduled = true;
      void this.queue.run(() => this.flushUsage());
    }
    return written;
  }

  usageFor(orgId: string): Promise<OrganizationUsage> {
    return this.op('usageFor', async () => {
      const reader = await this.connection.runAndReadAll(
        `SELECT endpoint, CAST(sum(points) AS BIGINT) AS points, CAST(sum(calls) AS BIGINT) AS calls
           FROM usage_daily WHERE org_id = $1 GROUP BY endpoint ORDER BY endpoint`,
        [orgId],
      );
      const byEndpoint = reader.getRowObjects().map((row) => ({
        endpoint: String(row['endpoint']),
        points: Number(row['points']),
        calls: Number(row['calls']),
      }));
      return {
        orgId,
        points: byEndpoint.reduce((sum, entry) => sum + entry.points, 0),
        calls: byEndpoint.reduce((sum, entry) => sum + entry.calls, 0),
        byEndpoint,
      };
    });
  }

  ping(): Promise<void> {
    return this.op('ping', async () => {
      await this.connection.run('SELECT 1');
    });
  }

  close(): Promise<void> {
    if (!this.closing) {
      this.closed = true;
      this.closing = this.shutdown();
    }
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    try {
      // Pending usage increments were queued before `closed` was set, so draining writes them.
      await this.queue.drain();
      await this.connection.run('CHECKPOINT').catch(() => undefined);
    } finally {
      this.connection.closeSync();
      this.instance.closeSync();
      openDatabaseFiles.delete(this.filePath);
    }
  }

  private async flushUsage(): Promise<void> {
    const batch = [...this.usageBatch.values()];
    const waiters = this.usageWaiters;
    this.usageBatch = new Map();
    this.usageWaiters = [];
    this.usageFlushScheduled = false;
    try {
      await this.transaction(async () => {
        for (const increment of batch) {
          await this.connection.run(
            `INSERT INTO usage_daily (org_id, endpoint, day, points, calls)
               VALUES ($1, $2, CAST($3 AS DATE), $4, $5)
               ON CONFLICT (org_id, endpoint, day) DO UPDATE
               SET points = usage_daily.points + excluded.points, calls = usage_daily.calls + excluded.calls`,
            [increment.orgId, increment.endpoint, increment.day, BigInt(increment.points), BigInt(increment.calls)],
          );
        }
      });
      for (const waiter of waiters) waiter.resolve();
    } catch (cause) {
      const error = new StoreError('STORE_QUERY_FAILED', 'recordUsage', describe(cause), { cause });
      for (const waiter of waiters) waiter.reject(error);
    }
  }

  /** Runs `task` in the queue, refusing after close and wrapping database failures. */
  private op<T>(operation: string, task: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(closedError(operation));
    return this.queue.run(async () => {
      try {
        return await task();
      } catch (cause) {
        if (cause instanceof StoreError) throw cause;
        throw new StoreError('STORE_QUERY_FAILED', operation, describe(cause), { cause });
      }
    });
  }

  private async transaction<T>(body: () => Promise<T>): Promise<T> {
    await this.connection.run('BEGIN TRANSACTION');
    try {
      const result = await body();
      await this.connection.run('COMMIT');
      return result;
    } catch (err) {
      await this.connection.run('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }

  private async insertKey(orgId: string, key: NewApiKey): Promise<ApiKeyRecord> {
    const id = `key_${randomUUID().replaceAll('-', '')}`;
    await this.connection.run(
      'INSERT INTO api_keys (id, org_id, kind, prefix, key_hash, created_at) VALUES ($1, $2, $3, $4, $5, epoch_ms(CAST($6 AS BIGINT)))',
      [id, orgId, key.kind, key.prefix, key.keyHash, this.nowMs()],
    );
    const record = await this.keyByHash(key.keyHash);
    if (!record) throw new Error('api key missing right after insert');
    return record;
  }

  private async keyByHash(keyHash: string): Promise<ApiKeyRecord | null> {
    const reader = await this.connection.runAndReadAll(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_hash = $1`, [
      keyHash,
    ]);
    const row = reader.getRowObjects()[0];
    return row ? toApiKey(row) : null;
  }

  private async organizationById(orgId: string): Promise<Organization | null> {
    const reader = await this.connection.runAndReadAll(
      `SELECT id, name, epoch_ms(created_at) AS created_ms, epoch_ms(bootstrapped_at) AS bootstrapped_ms
         FROM organizations WHERE id = $1`,
      [orgId],
    );
    const row = reader.getRowObjects()[0];
    if (!row) return null;
    return {
      id: String(row['id']),
      name: String(row['name']),
      createdAt: toDate(row['created_ms']) ?? new Date(0),
      bootstrappedAt: toDate(row['bootstrapped_ms']),
    };
  }

  private async requireOrganization(operation: string, orgId: string): Promise<void> {
    if (!(await this.organizationById(orgId))) {
      throw new StoreError('STORE_INVALID_ARGUMENT', operation, `unknown organization ${JSON.stringify(orgId)}`);
    }
  }

  private nowMs(): bigint {
    return BigInt(this.now().getTime());
  }
}

function validateNewKey(operation: string, key: NewApiKey): void {
  if (key.kind !== 'live' && key.kind !== 'test') {
    throw new StoreError('STORE_INVALID_ARGUMENT', operation, 'kind must be live or test');
  }
  if (!/^[0-9a-f]{64}$/.test(key.keyHash)) {
    throw new StoreError('STORE_INVALID_ARGUMENT', operation, 'keyHash must be a lower-case hex SHA-256 digest');
  }
  if (!key.prefix) throw new StoreError('STORE_INVALID_ARGUMENT', operation, 'prefix must be non-empty');
}

function toApiKey(row: Row): ApiKeyRecord {
  return {
    id: String(row['id']),
    orgId: String(row['org_id']),
    kind: String(row['kind']) as ApiKeyKind,
    prefix: String(row['prefix']),
    keyHash: String(row['key_hash']),
    createdAt: toDate(row['created_ms']) ?? new Date(0),
    lastUsedAt: toDate(row['last_used_ms']),
    revokedAt: toDate(row['revoked_ms']),
  };
}

function toDate(value: DuckDBValue | undefined): Date | null {
  return value === null || value === undefined ? null : new Date(Number(value));
}

function closedError(operation: string): StoreError {
  return new StoreError('STORE_CLOSED', operation, 'the store is closed');
}

function describe(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
