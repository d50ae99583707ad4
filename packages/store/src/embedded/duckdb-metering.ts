// Marketplace metering in the embedded database (tables `metering_hourly_calls` and
// `metering_ledger`, migration 6), on the embedded store's connection and queue.
import type { DuckDBValue } from '@duckdb/node-api';
import type { EmbeddedAccess } from './duckdb-database.js';
import {
  HOUR_MS,
  validateDimension,
  validateCustomerRecord,
  validateLedgerEntry,
  type HourlyCalls,
  type LedgerEntry,
  type LedgerStatus,
  type MarketplaceCustomerRecord,
  type MeteringDimension,
  type MeteringStore,
} from '../metering.js';

const LEDGER_COLUMNS = 'org_id, customer, license_arn, dimension, hour_ms, used, carried_in, quantity, carried_out, status, epoch_ms(updated_at) AS updated_ms';

export class DuckDBMeteringStore implements MeteringStore {
  constructor(private readonly access: EmbeddedAccess) {}

  /** Increments waiting for the next flush, by (organization, dimension, hour). */
  private increments = new Map<string, { orgId: string; dimension: MeteringDimension; hourMs: number; calls: number }>();
  private waiters: { resolve: () => void; reject: (err: unknown) => void }[] = [];
  private flushScheduled = false;

  /**
   * Group-committed like the store's usage: every increment that arrives while a flush waits in
   * the queue goes in the same transaction, so a burst of calls costs one commit.
   */
  countCall(orgId: string, dimension: MeteringDimension, at: Date): Promise<void> {
    try {
      validateDimension('countCall', dimension);
    } catch (err) {
      return Promise.reject(err);
    }
    const hourMs = Math.floor(at.getTime() / HOUR_MS) * HOUR_MS;
    const key = JSON.stringify([orgId, dimension, hourMs]);
    const increment = this.increments.get(key);
    if (increment) increment.calls += 1;
    else this.increments.set(key, { orgId, dimension, hourMs, calls: 1 });
    const written = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      // The flush takes the increments and their callers when it runs, not when it is queued.
      let taken: { resolve: () => void; reject: (err: unknown) => void }[] | null = null;
      const take = () => {
        const increments = [...this.increments.values()];
        taken = this.waiters;
        this.increments = new Map();
        this.waiters = [];
        this.flushScheduled = false;
        return increments;
      };
      this.access
        .run('countCall', async (connection) => {
          const increments = take();
          await connection.run('BEGIN TRANSACTION');
          try {
            for (const { orgId: org, dimension: dim, hourMs: hour, calls } of increments) {
              await connection.run(
                `INSERT INTO metering_hourly_calls (org_id, dimension, hour_ms, calls) VALUES ($1, $2, $3, $4)
                   ON CONFLICT (org_id, dimension, hour_ms) DO UPDATE SET calls = calls + EXCLUDED.calls`,
                [org, dim, BigInt(hour), BigInt(calls)],
              );
            }
            await connection.run('COMMIT');
          } catch (err) {
            await connection.run('ROLLBACK').catch(() => undefined);
            throw err;
          }
        })
        .then(
          () => (taken ?? []).forEach((waiter) => waiter.resolve()),
          (err: unknown) => {
            // Refused before it ran (a closed store): its callers are still waiting here.
            if (taken === null) take();
            (taken ?? []).forEach((waiter) => waiter.reject(err));
          },
        );
    }
    return written;
  }

  callsInHour(hourMs: number): Promise<readonly HourlyCalls[]> {
    return this.access.run('callsInHour', async (connection) => {
      const reader = await connection.runAndReadAll(
        'SELECT org_id, dimension, calls FROM metering_hourly_calls WHERE hour_ms = $1 ORDER BY org_id, dimension',
        [BigInt(hourMs)],
      );
      return reader.getRowObjects().map((row) => ({
        orgId: String(row['org_id']),
        dimension: String(row['dimension']) as MeteringDimension,
        calls: Number(row['calls']),
      }));
    });
  }

  ledger(fromMs: number, toMs: number): Promise<readonly LedgerEntry[]> {
    return this.access.run('ledger', async (connection) => {
      const reader = await connection.runAndReadAll(
        `SELECT ${LEDGER_COLUMNS} FROM metering_ledger WHERE hour_ms >= $1 AND hour_ms < $2 ORDER BY hour_ms, org_id, dimension`,
        [BigInt(fromMs), BigInt(toMs)],
      );
      return reader.getRowObjects().map(toEntry);
    });
  }

  previousEntry(orgId: string, dimension: MeteringDimension, hourMs: number): Promise<LedgerEntry | null> {
    return this.access.run('previousEntry', async (connection) => {
      const reader = await connection.runAndReadAll(
        `SELECT ${LEDGER_COLUMNS} FROM metering_ledger WHERE org_id = $1 AND dimension = $2 AND hour_ms < $3 ORDER BY hour_ms DESC LIMIT 1`,
        [orgId, dimension, BigInt(hourMs)],
      );
      const row = reader.getRowObjects()[0];
      return row === undefined ? null : toEntry(row);
    });
  }

  putLedgerEntry(entry: LedgerEntry): Promise<void> {
    try {
      validateLedgerEntry(entry);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.access.run('putLedgerEntry', async (connection) => {
      await connection.run(
        `INSERT OR REPLACE INTO metering_ledger (org_id, customer, dimension, hour_ms, used, carried_in, quantity, carried_out, status, updated_at, license_arn)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, epoch_ms(CAST($10 AS BIGINT)), $11)`,
        [
          entry.orgId,
          entry.customer,
          entry.dimension,
          BigInt(entry.hourMs),
          BigInt(entry.used),
          BigInt(entry.carriedIn),
          BigInt(entry.quantity),
          BigInt(entry.carriedOut),
          entry.status,
          BigInt(entry.updatedAt.getTime()),
          entry.licenseArn,
        ],
      );
    });
  }

  putCustomer(record: MarketplaceCustomerRecord): Promise<void> {
    try {
      validateCustomerRecord(record);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.access.run('putCustomer', async (connection) => {
      await connection.run(
        `INSERT OR REPLACE INTO marketplace_customers (org_id, customer_identifier, aws_account_id, license_arn, updated_at)
           VALUES ($1, $2, $3, $4, epoch_ms(CAST($5 AS BIGINT)))`,
        [record.orgId, record.customerIdentifier, record.awsAccountId, record.licenseArn, BigInt(record.updatedAt.getTime())],
      );
    });
  }

  customers(): Promise<readonly MarketplaceCustomerRecord[]> {
    return this.access.run('customers', async (connection) => {
      const reader = await connection.runAndReadAll(
        'SELECT org_id, customer_identifier, aws_account_id, license_arn, epoch_ms(updated_at) AS updated_ms FROM marketplace_customers ORDER BY org_id',
      );
      return reader.getRowObjects().map((row) => ({
        orgId: String(row['org_id']),
        customerIdentifier: nullableText(row['customer_identifier']),
        awsAccountId: nullableText(row['aws_account_id']),
        licenseArn: nullableText(row['license_arn']),
        updatedAt: new Date(Number(row['updated_ms'])),
      }));
    });
  }
}

function nullableText(value: DuckDBValue | undefined): string | null {
  return value === null || value === undefined ? null : String(value);
}

function toEntry(row: Record<string, DuckDBValue>): LedgerEntry {
  return {
    orgId: String(row['org_id']),
    customer: String(row['customer']),
    licenseArn: nullableText(row['license_arn']),
    dimension: String(row['dimension']) as MeteringDimension,
    hourMs: Number(row['hour_ms']),
    used: Number(row['used']),
    carriedIn: Number(row['carried_in']),
    quantity: Number(row['quantity']),
    carriedOut: Number(row['carried_out']),
    status: String(row['status']) as LedgerStatus,
    updatedAt: new Date(Number(row['updated_ms'])),
  };
}
