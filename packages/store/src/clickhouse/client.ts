// The one way this package opens ClickHouse: the platform store's database (clickhouse-database.ts)
// and the stream's result and job stores all connect here, with the same client settings, on a
// validated database that the migrations in schemas/clickhouse/ bring up to date. Each maps
// failures to its own error registry (`storeErrorFrom`, `clickHouseError`) from one classification
// (`clickHouseFailure`). The result and job stores also share here how a judged point is read
// back from JSONEachRow.
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import type { JudgedPoint } from '@adp/streaming';
import { StreamingError } from '@adp/streaming/errors';
import { describe } from '../database.js';
import { clickHouseFailure } from './failures.js';
import { sqlIdentifier } from './identifiers.js';
import { judgedPointFromColumns, type JudgedPointRecord } from '../judged-point.js';
import { runClickHouseMigrations } from './migrations.js';

export interface ClickHouseConnectionOptions {
  /** ClickHouse's HTTP interface, e.g. `http://127.0.0.1:8123`. */
  readonly url: string;
  /** A plain identifier (`[A-Za-z_][A-Za-z0-9_]{0,62}`); anything else is refused. */
  readonly database: string;
  /** Default `default`. */
  readonly username?: string;
  /** Default empty. */
  readonly password?: string;
  /** Longest a query or insert may take, ms. */
  readonly requestTimeoutMs: number;
  /** Apply schemas/clickhouse/ migrations before the first use. Default true. */
  readonly migrate?: boolean;
  /** Where the migrations are. Default: schemas/clickhouse/ of this repository. */
  readonly migrationsDir?: string;
}

/** Caller strings are quoted into SELECTs; the 256 KiB default would turn a long id into a syntax error. */
const MAX_QUERY_BYTES = 16 * 1024 * 1024;

/**
 * Connects and migrates (unless `migrate: false`). Throws INVALID_IDENTIFIER for a bad database
 * name, VALUE_INVALID for a configuration the client refuses (a bad URL), and the migration
 * runner's errors, having closed the client.
 */
export async function openClickHouse(options: ClickHouseConnectionOptions): Promise<{ client: ClickHouseClient; database: string }> {
  const database = sqlIdentifier(options.database, 'database');
  let client: ClickHouseClient;
  try {
    client = createClient({
      url: options.url,
      username: options.username ?? 'default',
      password: options.password ?? '',
      request_timeout: options.requestTimeoutMs,
      clickhouse_settings: {
        // 64-bit integers as JSON numbers: every one this package writes stays below 2^53.
        output_format_json_quote_64bit_integers: 0,
        // 16 MiB is far above anything the API's body limit lets through.
        max_query_size: String(MAX_QUERY_BYTES),
      },
      // Failures reach the caller as coded errors; the client's own logging would repeat them.
      log: { level: ClickHouseLogLevel.OFF },
    });
  } catch (cause) {
    throw new StreamingError('VALUE_INVALID', `bad ClickHouse configuration: ${describe(cause)}`, { database }, { cause });
  }
  try {
    if (options.migrate ?? true) {
      await runClickHouseMigrations(client, {
        database,
        ...(options.migrationsDir === undefined ? {} : { migrationsDir: options.migrationsDir }),
      });
    }
  } catch (error) {
    await client.close().catch(() => undefined);
    throw error;
  }
  return { client, database };
}

/** A failure of the client as our coded error; a StreamingError passes unchanged. */
export function clickHouseError(error: unknown, what: string, database: string, queryId?: string): StreamingError {
  if (error instanceof StreamingError) return error;
  const { serverCode, message } = clickHouseFailure(error);
  const context = { database, ...(queryId ? { queryId } : {}) };
  if (serverCode === undefined) return new StreamingError('CLICKHOUSE_UNAVAILABLE', `${what}: ${message}`, context, { cause: error });
  return new StreamingError('CLICKHOUSE_QUERY_FAILED', `${what}: ${message}`, { ...context, serverCode }, { cause: error });
}

/** The judged point of a JSONEachRow record (doubles as JSON numbers, flags as 0/1). */
export function judgedPointOfRecord(record: JudgedPointRecord): JudgedPoint {
  return judgedPointFromColumns(record, Number, (cell) => Number(cell) === 1);
}
