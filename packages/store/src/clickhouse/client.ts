// What the ClickHouse adapters of this package (the result store, the job store) share: a client
// opened on a validated database and migrated, and the mapping of the client's failures to our
// coded errors (no answer: CLICKHOUSE_UNAVAILABLE, retriable; an answer with a server code:
// CLICKHOUSE_QUERY_FAILED with that code).
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import type { JudgedPoint } from '@adp/streaming';
import { StreamingError } from '@adp/streaming/errors';
import { sqlIdentifier } from './identifiers.js';
import { clickHouseServerCode, runClickHouseMigrations } from './migrations.js';

export interface ClickHouseConnectionOptions {
  /** `http://host:8123`. */
  readonly url: string;
  /** A plain identifier. Default `adp`. */
  readonly database?: string;
  readonly username?: string;
  readonly password?: string;
  /** Apply schemas/clickhouse/ migrations before the first use. Default true. */
  readonly migrate?: boolean;
  /** Per-request timeout, ms. */
  readonly requestTimeoutMs: number;
}

/**
 * Connects and migrates (unless `migrate: false`). Throws INVALID_IDENTIFIER for a bad database
 * name and the migration runner's errors, having closed the client.
 */
export async function openClickHouse(options: ClickHouseConnectionOptions): Promise<{ client: ClickHouseClient; database: string }> {
  const database = sqlIdentifier(options.database ?? 'adp', 'database');
  const client = createClient({
    url: options.url,
    ...(options.username !== undefined ? { username: options.username } : {}),
    ...(options.password !== undefined ? { password: options.password } : {}),
    request_timeout: options.requestTimeoutMs,
    clickhouse_settings: { output_format_json_quote_64bit_integers: 0 },
    // Failures reach the caller as StreamingErrors; the client's own logging would repeat them.
    log: { level: ClickHouseLogLevel.OFF },
  });
  try {
    if (options.migrate ?? true) await runClickHouseMigrations(client, { database });
  } catch (error) {
    await client.close();
    throw error;
  }
  return { client, database };
}

/** A failure of the client as our coded error; a StreamingError passes unchanged. */
export function clickHouseError(error: unknown, what: string, database: string, queryId?: string): StreamingError {
  if (error instanceof StreamingError) return error;
  const serverCode = clickHouseServerCode(error);
  const reason = error instanceof Error ? error.message : String(error);
  const context = { database, ...(queryId ? { queryId } : {}) };
  if (serverCode === undefined) {
    return new StreamingError('CLICKHOUSE_UNAVAILABLE', `${what}: ClickHouse did not answer: ${reason}`, context, { cause: error });
  }
  return new StreamingError('CLICKHOUSE_QUERY_FAILED', `${what}: ClickHouse error ${serverCode}: ${reason}`, { ...context, serverCode }, { cause: error });
}

/** A judged point's columns as JSONEachRow reads them (flags as 0/1). */
export interface JudgedPointRecord {
  value: number;
  expected_value: number;
  upper_margin: number;
  lower_margin: number;
  is_anomaly: number;
  is_positive_anomaly: number;
  is_negative_anomaly: number;
  severity: number;
}

/** A judged point read back from its JSONEachRow record. */
export function judgedPointOfRecord(record: JudgedPointRecord): JudgedPoint {
  return {
    value: record.value,
    expectedValue: record.expected_value,
    upperMargin: record.upper_margin,
    lowerMargin: record.lower_margin,
    isAnomaly: Number(record.is_anomaly) === 1,
    isPositiveAnomaly: Number(record.is_positive_anomaly) === 1,
    isNegativeAnomaly: Number(record.is_negative_anomaly) === 1,
    severity: record.severity,
  };
}
