// The marketplace metering port: live calls counted per organization, dimension and UTC hour, and
// the ledger of what was reported for each (organization, dimension, hour), so that an hour is
// billed once even when the exporter stops at any moment. Adapters: embedded/duckdb-metering.ts.
import { StoreError } from './errors.js';

/** What the marketplace bills. Machines are counted, calls are reported in whole thousands. */
export const METERING_DIMENSIONS = ['batch_api_calls', 'stream_api_calls', 'monitored_machines'] as const;
export type MeteringDimension = (typeof METERING_DIMENSIONS)[number];

/**
 * `pending`: computed and durable, not yet sent; `sent`: a request carrying it went out, its answer
 * is not recorded; `accepted`: the marketplace took it (or had it already); `rejected`: the
 * marketplace refused it for good (the customer is no longer subscribed).
 */
export const LEDGER_STATUSES = ['pending', 'sent', 'accepted', 'rejected'] as const;
export type LedgerStatus = (typeof LEDGER_STATUSES)[number];

export const HOUR_MS = 3_600_000;

export interface LedgerEntry {
  readonly orgId: string;
  /** The customer the record names: the AWS account id with a license, else the customer identifier (or account id). */
  readonly customer: string;
  /**
   * The license (agreement) the record is sent under: the record then names the customer by
   * `CustomerAWSAccountId` and the request carries no product code. Null: the older form
   * (`CustomerIdentifier` and the product code). Fixed once written, like the quantity.
   */
  readonly licenseArn: string | null;
  readonly dimension: MeteringDimension;
  /** Start of the UTC hour, epoch ms. */
  readonly hourMs: number;
  /** What was used in the hour: calls, or machines. */
  readonly used: number;
  /** Calls left over from the previous reported hour (always 0 for machines). */
  readonly carriedIn: number;
  /** The quantity reported: thousands of calls, or machines. */
  readonly quantity: number;
  /** Calls carried into the next hour. */
  readonly carriedOut: number;
  readonly status: LedgerStatus;
  readonly updatedAt: Date;
}

export interface HourlyCalls {
  readonly orgId: string;
  readonly dimension: MeteringDimension;
  readonly calls: number;
}

/** What the marketplace told us of a subscriber (ResolveCustomer), kept for the export. */
export interface MarketplaceCustomerRecord {
  readonly orgId: string;
  readonly customerIdentifier: string | null;
  readonly awsAccountId: string | null;
  readonly licenseArn: string | null;
  readonly updatedAt: Date;
}

export interface MeteringStore {
  /** Adds one live call of `dimension` to the organization's count for the UTC hour of `at`. */
  countCall(orgId: string, dimension: MeteringDimension, at: Date): Promise<void>;
  /** Every organization's call counts in the hour starting at `hourMs`. */
  callsInHour(hourMs: number): Promise<readonly HourlyCalls[]>;
  /** Ledger entries with `fromMs <= hourMs < toMs`, by hour, organization and dimension. */
  ledger(fromMs: number, toMs: number): Promise<readonly LedgerEntry[]>;
  /** The organization's latest entry of the dimension for an hour before `hourMs`; null when none. */
  previousEntry(orgId: string, dimension: MeteringDimension, hourMs: number): Promise<LedgerEntry | null>;
  /** Writes the entry, replacing the one of the same (organization, dimension, hour); durable on return. */
  putLedgerEntry(entry: LedgerEntry): Promise<void>;
  /** Writes the organization's subscriber record, replacing an earlier one; durable on return. */
  putCustomer(record: MarketplaceCustomerRecord): Promise<void>;
  /** Every subscriber record, by organization. */
  customers(): Promise<readonly MarketplaceCustomerRecord[]>;
}

/** Longest identifier, account id or license ARN kept. */
const MAX_CUSTOMER_FIELD = 2048;

function optionalField(value: string | null): boolean {
  return value === null || (typeof value === 'string' && value.length > 0 && value.length <= MAX_CUSTOMER_FIELD);
}

export function validateCustomerRecord(record: MarketplaceCustomerRecord): void {
  if (
    !record.orgId ||
    !optionalField(record.customerIdentifier) ||
    !optionalField(record.awsAccountId) ||
    !optionalField(record.licenseArn) ||
    (record.customerIdentifier === null && record.awsAccountId === null) ||
    Number.isNaN(record.updatedAt.getTime())
  ) {
    throw new StoreError('STORE_INVALID_ARGUMENT', 'putCustomer', 'a subscriber record needs an organization, a customer identifier or account id, and non-empty values up to 2048 characters');
  }
}

/** Refuses what neither adapter may store. */
export function validateLedgerEntry(entry: LedgerEntry): void {
  const counts = [entry.used, entry.carriedIn, entry.quantity, entry.carriedOut];
  if (
    !entry.orgId ||
    !entry.customer ||
    !optionalField(entry.licenseArn) ||
    !METERING_DIMENSIONS.includes(entry.dimension) ||
    !LEDGER_STATUSES.includes(entry.status) ||
    !Number.isSafeInteger(entry.hourMs) ||
    entry.hourMs % HOUR_MS !== 0 ||
    counts.some((count) => !Number.isSafeInteger(count) || count < 0)
  ) {
    throw new StoreError('STORE_INVALID_ARGUMENT', 'putLedgerEntry', 'a ledger entry needs an organization, customer, known dimension and status, a whole UTC hour and non-negative integer counts');
  }
}

export function validateDimension(operation: string, dimension: MeteringDimension): void {
  if (!METERING_DIMENSIONS.includes(dimension)) {
    throw new StoreError('STORE_INVALID_ARGUMENT', operation, `unknown metering dimension ${JSON.stringify(dimension)}`);
  }
}
