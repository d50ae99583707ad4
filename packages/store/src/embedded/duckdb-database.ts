// The embedded database under every embedded port: one DuckDB file, one connection, every
// operation through one queue.
//
// Why one queue: DuckDB allows a single writer per database and a connection must not run two
// statements at once. Serialising is cheap here because each operation is a point query; the one
// hot write, usage metering, is group-committed (all increments that arrive while a commit is in
// flight go into the next transaction), so throughput does not fall to one fsync per request.
//
// Every statement binds its values ($1, $2, ...); no SQL is built from caller input.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import { StoreDatabase, closedError, describe } from '../database.js';
import { StoreError } from '../errors.js';
import { SerialQueue } from '../serial-queue.js';
import { MIGRATIONS } from './migrations.js';

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

export type Row = Record<string, DuckDBValue>;

/** Opens (creating and migrating when needed) the embedded database under `options.dataDir`. */
export async function openEmbeddedDatabase(options: EmbeddedStoreOptions): Promise<EmbeddedDatabase> {
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
  return new EmbeddedDatabase(filePath, instance, connection, options.now ?? (() => new Date()));
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

/** The connection, its queue and the store's lifecycle, shared by the embedded ports. */
export class EmbeddedDatabase extends StoreDatabase {
  readonly queue = new SerialQueue();
  /** Run after the queue drained, before the connection closes (prepared statements are freed here). */
  private readonly closeHooks: (() => void)[] = [];

  constructor(
    private readonly filePath: string,
    private readonly instance: DuckDBInstance,
    readonly connection: DuckDBConnection,
    readonly now: () => Date,
  ) {
    super();
  }

  onClose(hook: () => void): void {
    this.closeHooks.push(hook);
  }

  ping(): Promise<void> {
    return this.op('ping', async () => {
      await this.connection.run('SELECT 1');
    });
  }

  protected async shutdown(): Promise<void> {
    try {
      // Pending usage increments were queued before `closed` was set, so draining writes them.
      await this.queue.drain();
      await this.connection.run('CHECKPOINT').catch(() => undefined);
    } finally {
      for (const hook of this.closeHooks) hook();
      this.connection.closeSync();
      this.instance.closeSync();
      openDatabaseFiles.delete(this.filePath);
    }
  }

  /** Runs `task` in the queue, refusing after close and wrapping database failures. */
  op<T>(operation: string, task: () => Promise<T>): Promise<T> {
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

  async transaction<T>(body: () => Promise<T>): Promise<T> {
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

  nowMs(): bigint {
    return BigInt(this.now().getTime());
  }
}

/**
 * How the port adapters that do not extend `EmbeddedAdapter` (accounts, audit, metering, daily
 * usage, leases, alerting) reach the database: `run` queues `task` behind the store's other
 * statements and hands it the connection.
 */
export interface EmbeddedAccess {
  run<T>(operation: string, task: (connection: DuckDBConnection) => Promise<T>): Promise<T>;
}

/**
 * What every embedded port adapter starts from: the shared database's connection, queue-backed
 * `op`, transactions and clock, under the names the adapters' queries use.
 */
export abstract class EmbeddedAdapter {
  constructor(protected readonly db: EmbeddedDatabase) {}

  protected get connection(): DuckDBConnection {
    return this.db.connection;
  }

  protected op<T>(operation: string, task: () => Promise<T>): Promise<T> {
    return this.db.op(operation, task);
  }

  protected transaction<T>(body: () => Promise<T>): Promise<T> {
    return this.db.transaction(body);
  }

  protected nowMs(): bigint {
    return this.db.nowMs();
  }
}

export function toNumberOrNull(value: DuckDBValue | undefined): number | null {
  return value === null || value === undefined ? null : Number(value);
}

export function toStringOrNull(value: DuckDBValue | undefined): string | null {
  return value === null || value === undefined ? null : String(value);
}

export function toDate(value: DuckDBValue | undefined): Date | null {
  return value === null || value === undefined ? null : new Date(Number(value));
}
