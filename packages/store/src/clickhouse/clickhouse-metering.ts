// Marketplace metering in ClickHouse (schemas/clickhouse/0006_metering.sql, 0008_marketplace_customers.sql). Values reach SQL only
// through `sqlString` and `sqlInteger`; table names come from the store, whose database name
// `sqlIdentifier` checked.
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
import type { ClickHouseAccess } from './clickhouse-database.js';
import { sqlInteger, sqlString } from './sql.js';

interface LedgerRow {
  the_hour_ms: number | string;
  the_org_id: string;
  the_dimension: string;
  the_customer: string;
  the_license_arn: string;
  the_used: number | string;
  the_carried_in: number | string;
  the_quantity: number | string;
  the_carried_out: number | string;
  the_status: string;
  the_updated_ms: number | string;
}

export class ClickHouseMeteringStore implements MeteringStore {
  constructor(
    private readonly access: ClickHouseAccess,
    /** Adds a row to the group-committed inserts of the hourly calls; resolves once it is written. */
    private readonly addCall: (row: Record<string, unknown>) => Promise<void>,
    private readonly tables: { readonly calls: string; readonly ledger: string; readonly customers: string },
  ) {}

  countCall(orgId: string, dimension: MeteringDimension, at: Date): Promise<void> {
    try {
      validateDimension('countCall', dimension);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.addCall({ org_id: orgId, dimension, hour_ms: Math.floor(at.getTime() / HOUR_MS) * HOUR_MS, calls: 1 });
  }

  callsInHour(hourMs: number): Promise<readonly HourlyCalls[]> {
    return this.access.op('callsInHour', async (operation) => {
      const rows = await this.access.rows<{ org_id: string; the_dimension: string; total: number | string }>(
        operation,
        `SELECT org_id, dimension AS the_dimension, sum(calls) AS total FROM ${this.tables.calls}
          WHERE hour_ms = ${sqlInteger(hourMs, operation)} GROUP BY org_id, dimension ORDER BY org_id, the_dimension`,
      );
      return rows.map((row) => ({ orgId: row.org_id, dimension: row.the_dimension as MeteringDimension, calls: Number(row.total) }));
    });
  }

  ledger(fromMs: number, toMs: number): Promise<readonly LedgerEntry[]> {
    return this.access.op('ledger', async (operation) =>
      (await this.access.rows<LedgerRow>(operation, this.latest(`hour_ms >= ${sqlInteger(fromMs, operation)} AND hour_ms < ${sqlInteger(toMs, operation)}`))).map(toEntry),
    );
  }

  previousEntry(orgId: string, dimension: MeteringDimension, hourMs: number): Promise<LedgerEntry | null> {
    return this.access.op('previousEntry', async (operation) => {
      const condition = `org_id = ${sqlString(orgId, operation)} AND dimension = ${sqlString(dimension, operation)} AND hour_ms < ${sqlInteger(hourMs, operation)}`;
      const rows = await this.access.rows<LedgerRow>(operation, `${this.latest(condition, 'the_hour_ms DESC')} LIMIT 1`);
      const row = rows[0];
      return row === undefined ? null : toEntry(row);
    });
  }

  putLedgerEntry(entry: LedgerEntry): Promise<void> {
    return this.access.op('putLedgerEntry', async (operation) => {
      validateLedgerEntry(entry);
      await this.access.insert(operation, this.tables.ledger, [
        {
          hour_ms: entry.hourMs,
          org_id: entry.orgId,
          dimension: entry.dimension,
          customer: entry.customer,
          license_arn: entry.licenseArn ?? '',
          used: entry.used,
          carried_in: entry.carriedIn,
          quantity: entry.quantity,
          carried_out: entry.carriedOut,
          status: entry.status,
          updated_ms: entry.updatedAt.getTime(),
          version: this.access.nextVersion(),
        },
      ]);
    });
  }

  putCustomer(record: MarketplaceCustomerRecord): Promise<void> {
    return this.access.op('putCustomer', async (operation) => {
      validateCustomerRecord(record);
      await this.access.insert(operation, this.tables.customers, [
        {
          org_id: record.orgId,
          customer_identifier: record.customerIdentifier ?? '',
          aws_account_id: record.awsAccountId ?? '',
          license_arn: record.licenseArn ?? '',
          updated_ms: record.updatedAt.getTime(),
          version: this.access.nextVersion(),
        },
      ]);
    });
  }

  customers(): Promise<readonly MarketplaceCustomerRecord[]> {
    return this.access.op('customers', async (operation) => {
      const rows = await this.access.rows<{ the_org_id: string; the_identifier: string; the_account: string; the_license: string; the_updated_ms: number | string }>(
        operation,
        `SELECT org_id AS the_org_id, argMax(customer_identifier, version) AS the_identifier, argMax(aws_account_id, version) AS the_account,
                argMax(license_arn, version) AS the_license, argMax(updated_ms, version) AS the_updated_ms
           FROM ${this.tables.customers} GROUP BY org_id ORDER BY the_org_id`,
      );
      return rows.map((row) => ({
        orgId: row.the_org_id,
        customerIdentifier: row.the_identifier === '' ? null : row.the_identifier,
        awsAccountId: row.the_account === '' ? null : row.the_account,
        licenseArn: row.the_license === '' ? null : row.the_license,
        updatedAt: new Date(Number(row.the_updated_ms)),
      }));
    });
  }

  /** The latest row of each entry matching `condition`, in `order`. */
  private latest(condition: string, order = 'hour_ms, org_id, the_dimension'): string {
    // Aliases differ from the columns' names: the old analyzer would substitute them into the
    // aggregates and WHERE.
    return `SELECT hour_ms AS the_hour_ms, org_id AS the_org_id, dimension AS the_dimension,
              argMax(customer, version) AS the_customer, argMax(license_arn, version) AS the_license_arn, argMax(used, version) AS the_used,
              argMax(carried_in, version) AS the_carried_in, argMax(quantity, version) AS the_quantity,
              argMax(carried_out, version) AS the_carried_out, argMax(status, version) AS the_status,
              argMax(updated_ms, version) AS the_updated_ms
         FROM ${this.tables.ledger} WHERE ${condition}
        GROUP BY hour_ms, org_id, dimension
        ORDER BY ${order}`;
  }
}

function toEntry(row: LedgerRow): LedgerEntry {
  return {
    orgId: row.the_org_id,
    customer: row.the_customer,
    licenseArn: row.the_license_arn === '' ? null : row.the_license_arn,
    dimension: row.the_dimension as MeteringDimension,
    hourMs: Number(row.the_hour_ms),
    used: Number(row.the_used),
    carriedIn: Number(row.the_carried_in),
    quantity: Number(row.the_quantity),
    carriedOut: Number(row.the_carried_out),
    status: row.the_status as LedgerStatus,
    updatedAt: new Date(Number(row.the_updated_ms)),
  };
}
