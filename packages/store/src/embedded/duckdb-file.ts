// One DuckDB file of the embedded configuration (results.duckdb, checkpoints.duckdb): opened once
// per process, its schema applied, and one operation at a time on its connection. The stores
// built on it keep only their own queries.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { DuckDBInstance, type DuckDBAppender, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import type { JudgedPoint } from '@adp/streaming';
import { JUDGED_POINT_CELLS, JUDGED_POINT_COLUMNS, judgedPointFromColumns, type JudgedPointRecord } from '../judged-point.js';
import { StreamingError } from '@adp/streaming/errors';

/** Files open in this process: DuckDB allows one writer, and a second open would wait on its own lock. */
const openFiles = new Set<string>();

export function embeddedUnavailable(what: string, cause: unknown): StreamingError {
  const detail = cause instanceof Error ? `: ${cause.message}` : '';
  return new StreamingError('EMBEDDED_STORE_UNAVAILABLE', `${what}${detail}`, {}, { cause });
}

export interface DuckDbFile {
  readonly filePath: string;
  readonly connection: DuckDBConnection;
  /** Runs `operation` after every earlier one on this connection has settled. */
  serial<T>(operation: () => Promise<T>): Promise<T>;
  /** Throws STREAMING_CLOSED once close() has been called. */
  assertOpen(): void;
  /** Waits for the operations under way, then closes the connection and the file. Idempotent. */
  close(): Promise<void>;
}

/**
 * Opens `<dataDir>/<fileName>` (creating the folder), applies `schema`, and names the store in
 * its closed error (`what`, e.g. "the result store").
 */
export async function openDuckDbFile(dataDir: string, fileName: string, schema: string, what: string): Promise<DuckDbFile> {
  const filePath = path.resolve(dataDir, fileName);
  if (openFiles.has(filePath)) throw embeddedUnavailable(`${filePath} is already open in this process`, undefined);
  openFiles.add(filePath);
  let instance: DuckDBInstance | undefined;
  let connection: DuckDBConnection;
  try {
    await mkdir(path.dirname(filePath), { recursive: true, mode: 0o700 });
    instance = await DuckDBInstance.create(filePath);
    connection = await instance.connect();
    await connection.run(schema);
  } catch (cause) {
    instance?.closeSync();
    openFiles.delete(filePath);
    throw embeddedUnavailable(`cannot open ${filePath}`, cause);
  }
  const opened = instance;
  let queue: Promise<unknown> = Promise.resolve();
  let closed = false;
  return {
    filePath,
    connection,
    serial<T>(operation: () => Promise<T>): Promise<T> {
      const next = queue.then(operation, operation);
      queue = next.catch(() => undefined);
      return next;
    },
    assertOpen(): void {
      if (closed) throw new StreamingError('STREAMING_CLOSED', `${what} is closed`);
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await queue.catch(() => undefined);
      connection.closeSync();
      opened.closeSync();
      openFiles.delete(filePath);
    },
  };
}

/** The DDL of a judged point's columns (`JUDGED_POINT_COLUMNS`), as every DuckDB result table declares them. */
export const JUDGED_POINT_COLUMNS_SQL = JUDGED_POINT_COLUMNS.map(
  (column) => `${column.name} ${column.type === 'double' ? 'DOUBLE' : 'BOOLEAN'} NOT NULL`,
).join(',\n  ');

/** Rows in a table's column order, appended one by one (each ended with `endRow`). */
export type AppendRows = (appender: DuckDBAppender) => void;

/**
 * A table's bulk upsert: the rows go through DuckDB's appender into a staging table of the
 * connection's own (the table's `columns`, without its key), then one statement moves them with
 * `conflict` (its ON CONFLICT clause) and empties the staging table, in one transaction. A
 * statement of hundreds of bound tuples costs seconds to plan; this is DuckDB's bulk path. The
 * staging table is made here; a failure closes the file. Each upsert runs in `file.serial`, and a
 * failure is `embeddedUnavailable` with `what`.
 */
export async function stagedUpsert(
  file: DuckDbFile,
  table: string,
  columns: readonly string[],
  conflict: string,
): Promise<(append: AppendRows, what: string) => Promise<void>> {
  const { connection, filePath } = file;
  const staging = `${table}_staging`;
  const list = columns.join(', ');
  try {
    await connection.run(`CREATE TEMP TABLE IF NOT EXISTS ${staging} AS SELECT ${list} FROM ${table} LIMIT 0`);
  } catch (cause) {
    await file.close();
    throw embeddedUnavailable(`cannot prepare ${filePath}`, cause);
  }
  return (append, what) =>
    file.serial(async () => {
      try {
        const appender = await connection.createAppender(staging, 'main', 'temp');
        try {
          append(appender);
        } finally {
          appender.closeSync();
        }
        await connection.run('BEGIN TRANSACTION');
        await connection.run(`INSERT INTO ${table} (${list}) SELECT ${list} FROM temp.main.${staging} ${conflict}`);
        await connection.run(`DELETE FROM temp.main.${staging}`);
        await connection.run('COMMIT');
      } catch (cause) {
        await connection.run('ROLLBACK').catch(() => undefined);
        await connection.run(`DELETE FROM temp.main.${staging}`).catch(() => undefined);
        throw embeddedUnavailable(what, cause);
      }
    });
}

/** A judged point's columns (`JUDGED_POINT_COLUMNS`, in table order) appended to a row. */
export function appendJudgedPoint(appender: DuckDBAppender, point: JudgedPoint): void {
  for (let i = 0; i < JUDGED_POINT_CELLS.length; i++) {
    const cell = JUDGED_POINT_CELLS[i]!(point);
    if (typeof cell === 'number') appender.appendDouble(cell);
    else appender.appendBoolean(cell);
  }
}

/** The judged point of a DuckDB row (its columns by name; the row's own columns go around it). */
export function judgedPointOf(row: Readonly<Record<string, DuckDBValue>>): JudgedPoint {
  return judgedPointFromColumns(row as JudgedPointRecord, Number, (cell) => cell === true);
}
