// The hourly metering export: for one finished UTC hour, every marketplace organization's three
// dimensions are computed, written to the ledger as `pending`, sent with BatchMeterUsage and
// marked `accepted`. Whatever the moment the process stops, the next run for that hour finds the
// entries that are not accepted and sends them again with the same quantity, customer, dimension
// and timestamp: the marketplace treats such a resend as the record it already has, so an hour is
// never lost and never billed twice. Quantities are never recomputed once written.
//
// The customer's form follows BatchMeterUsage's current rules (AWS SDK v3 reference, "Concurrent
// Agreements"): a subscriber whose ResolveCustomer answer carried an AWS account id and a license
// ARN is metered by `CustomerAWSAccountId` and `LicenseArn`, in requests without `ProductCode`
// (the license names the product and agreement; both on one customer's hour would bill twice).
// Older subscribers, known only by `CustomerIdentifier`, keep the legacy form with `ProductCode`.
// Which form an entry uses is written with it, so a resend is always identical.
import { BatchMeterUsageCommand, type UsageRecord } from '@aws-sdk/client-marketplace-metering';
import type { FastifyBaseLogger } from 'fastify';
import {
  HOUR_MS,
  METERING_DIMENSIONS,
  type LedgerEntry,
  type MarketplaceCustomerRecord,
  type MeteringDimension,
  type MeteringStore,
  type Organization,
  type Store,
} from '@adp/store';
import { CHANNEL_SEPARATOR } from '@adp/streaming';
import { AppError, ERRORS } from '../errors.js';
import type { MarketplaceMeteringClient } from './client.js';

/** Calls are billed per thousand; the rest is carried into the next hour. */
export const CALLS_PER_UNIT = 1000;
/** BatchMeterUsage takes at most this many records a call. */
export const BATCH_MAX_RECORDS = 25;
/** Sends of one batch's unprocessed records in one run; what is left stays `sent` for the next run. */
export const MAX_SEND_ATTEMPTS = 3;

/** Which vendor endpoint's calls count in which dimension. */
export const CALL_DIMENSIONS: Readonly<Record<string, MeteringDimension>> = {
  'entire/detect': 'batch_api_calls',
  'changepoint/detect': 'batch_api_calls',
  'last/detect': 'stream_api_calls',
  // The native API's detection judges a whole series a call, like the vendor's batch endpoints.
  'v1/detect': 'batch_api_calls',
  // A detection job (POST /v1/jobs) is one batch call, whatever its length.
  jobs: 'batch_api_calls',
};

const EXTERNAL_ID_PREFIX = 'aws:';
/** An AWS account id; any other customer string is a marketplace customer identifier. */
const AWS_ACCOUNT_ID = /^\d{12}$/;

export interface MeteringExportOptions {
  readonly store: Store;
  readonly metering: MeteringStore;
  readonly client: MarketplaceMeteringClient;
  readonly productCode: string;
  readonly nowMs: () => number;
  readonly log: FastifyBaseLogger;
}

/** Organizations a marketplace subscription created (the only ones metered). */
export function isMarketplaceOrganization(organization: Organization): boolean {
  return organization.externalId?.startsWith(EXTERNAL_ID_PREFIX) ?? false;
}

/** `YYYY-MM-DDTHH` (UTC) to the hour's epoch ms; null when malformed. */
export function parseHour(text: string): number | null {
  if (!/^\d{4}-\d\d-\d\dT\d\d$/.test(text)) return null;
  const ms = Date.parse(`${text}:00:00.000Z`);
  return Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 13) !== text ? null : ms;
}

export function formatHour(hourMs: number): string {
  return new Date(hourMs).toISOString().slice(0, 13);
}

function entryKey(customer: string, licenseArn: string | null | undefined, dimension: string): string {
  return JSON.stringify([customer, licenseArn ?? '', dimension]);
}

function recordKey(record: UsageRecord | undefined): string {
  return entryKey(record?.CustomerAWSAccountId ?? record?.CustomerIdentifier ?? '', record?.LicenseArn, record?.Dimension ?? '');
}

/**
 * Runs the export of the hour starting at `hourMs`; answers the hour's ledger afterwards. With
 * `orgId`, only that organization's entries, and the hour may be the current one (a final
 * metering: its entries are fixed with the calls counted so far).
 */
export async function exportHour(options: MeteringExportOptions, hourMs: number, orgId?: string): Promise<readonly LedgerEntry[]> {
  const { store, metering, nowMs, log } = options;
  if (hourMs + (orgId === undefined ? HOUR_MS : 0) > nowMs()) {
    throw new AppError(ERRORS.MeteringHourNotFinished, `The hour ${formatHour(hourMs)} has not ended yet.`);
  }
  const organizations = (await store.listOrganizations()).filter((org) => isMarketplaceOrganization(org) && (orgId === undefined || org.id === orgId));
  const existing = new Map((await metering.ledger(hourMs, hourMs + HOUR_MS)).map((entry) => [`${entry.orgId}|${entry.dimension}`, entry]));
  const calls = new Map((await metering.callsInHour(hourMs)).map((count) => [`${count.orgId}|${count.dimension}`, count.calls]));
  const customers = new Map((await metering.customers()).map((record) => [record.orgId, record]));

  const toSend: LedgerEntry[] = [];
  for (const organization of organizations) {
    for (const dimension of METERING_DIMENSIONS) {
      let entry = existing.get(`${organization.id}|${dimension}`);
      if (entry === undefined) {
        const identity = customerIdentity(organization, customers.get(organization.id));
        entry = await computeEntry(options, organization, identity, dimension, hourMs, calls.get(`${organization.id}|${dimension}`) ?? 0);
        // Nothing to bill is settled at once; the carry still moves on through this entry.
        if (entry.quantity === 0) entry = { ...entry, status: 'accepted' };
        await metering.putLedgerEntry(entry);
      }
      if (entry.status === 'pending' || entry.status === 'sent') toSend.push(entry);
    }
  }

  // One request never mixes the two forms: license records go without a product code.
  for (const group of [toSend.filter((entry) => entry.licenseArn !== null), toSend.filter((entry) => entry.licenseArn === null)]) {
    for (let start = 0; start < group.length; start += BATCH_MAX_RECORDS) {
      await sendBatch(options, hourMs, group.slice(start, start + BATCH_MAX_RECORDS));
    }
  }
  const ledger = await metering.ledger(hourMs, hourMs + HOUR_MS);
  const open = ledger.filter((entry) => entry.status === 'pending' || entry.status === 'sent');
  if (open.length > 0) log.warn({ hour: formatHour(hourMs), open: open.length }, 'marketplace metering: records of the hour not yet accepted');
  return ledger;
}

/** How the organization's records name the customer: by account id and license when known. */
function customerIdentity(organization: Organization, record: MarketplaceCustomerRecord | undefined): { customer: string; licenseArn: string | null } {
  if (record?.awsAccountId != null && record.licenseArn !== null) return { customer: record.awsAccountId, licenseArn: record.licenseArn };
  return { customer: (organization.externalId ?? '').slice(EXTERNAL_ID_PREFIX.length), licenseArn: null };
}

async function computeEntry(
  options: MeteringExportOptions,
  organization: Organization,
  identity: { customer: string; licenseArn: string | null },
  dimension: MeteringDimension,
  hourMs: number,
  calls: number,
): Promise<LedgerEntry> {
  const base = { orgId: organization.id, ...identity, dimension, hourMs, status: 'pending' as const, updatedAt: new Date(options.nowMs()) };
  if (dimension === 'monitored_machines') {
    const machines = await monitoredMachines(options.store, organization.id, hourMs);
    return { ...base, used: machines, carriedIn: 0, quantity: machines, carriedOut: 0 };
  }
  const previous = await options.metering.previousEntry(organization.id, dimension, hourMs);
  const carriedIn = previous?.carriedOut ?? 0;
  const total = calls + carriedIn;
  return { ...base, used: calls, carriedIn, quantity: Math.floor(total / CALLS_PER_UNIT), carriedOut: total % CALLS_PER_UNIT };
}

/**
 * Machines whose baseline was active at some moment of the hour starting at `hourMs`, from the
 * store's activity history: a machine deleted since still counts for the hours it was monitored,
 * whenever the hour is exported, and one baselined later never counts. A multivariate machine's
 * channel baselines (`<machine>:<channel>`) are part of it, counted once with it, as the machine
 * list shows it.
 */
export async function monitoredMachines(store: Pick<Store, 'baselineActivity'>, orgId: string, hourMs: number): Promise<number> {
  const intervals = await store.baselineActivity.activeIntervals(orgId, hourMs, hourMs + HOUR_MS);
  const ids = new Set(intervals.map((interval) => interval.machineId));
  let machines = 0;
  for (const id of ids) if (!isChannelOfActive(id, ids)) machines += 1;
  return machines;
}

/** Whether `id` is a channel series of a machine in `ids` (the machine id may itself hold the separator). */
function isChannelOfActive(id: string, ids: ReadonlySet<string>): boolean {
  for (let at = id.indexOf(CHANNEL_SEPARATOR); at > 0; at = id.indexOf(CHANNEL_SEPARATOR, at + 1)) {
    if (ids.has(id.slice(0, at))) return true;
  }
  return false;
}

function usageRecord(entry: LedgerEntry): UsageRecord {
  const customer =
    entry.licenseArn !== null
      ? { CustomerAWSAccountId: entry.customer, LicenseArn: entry.licenseArn }
      : AWS_ACCOUNT_ID.test(entry.customer)
        ? { CustomerAWSAccountId: entry.customer }
        : { CustomerIdentifier: entry.customer };
  return { Timestamp: new Date(entry.hourMs), Dimension: entry.dimension, Quantity: entry.quantity, ...customer };
}

/** Sends one batch (retrying what the marketplace left unprocessed) and records each answer. */
async function sendBatch(options: MeteringExportOptions, hourMs: number, entries: readonly LedgerEntry[]): Promise<void> {
  const { metering, client, productCode, nowMs, log } = options;
  for (const entry of entries) {
    if (entry.status !== 'sent') await metering.putLedgerEntry({ ...entry, status: 'sent', updatedAt: new Date(nowMs()) });
  }
  let waiting = new Map(entries.map((entry) => [entryKey(entry.customer, entry.licenseArn, entry.dimension), entry]));
  const licensed = entries.some((entry) => entry.licenseArn !== null);
  for (let attempt = 1; attempt <= MAX_SEND_ATTEMPTS && waiting.size > 0; attempt += 1) {
    let output;
    try {
      const records = [...waiting.values()].map(usageRecord);
      output = await client.send(new BatchMeterUsageCommand(licensed ? { UsageRecords: records } : { ProductCode: productCode, UsageRecords: records }));
    } catch (cause) {
      throw new AppError(ERRORS.MarketplaceUnavailable, `BatchMeterUsage failed for the hour ${formatHour(hourMs)}; its records stay sent and go again on the next run.`, { cause });
    }
    for (const result of output.Results ?? []) {
      const key = recordKey(result.UsageRecord);
      const entry = waiting.get(key);
      if (entry === undefined) continue;
      waiting.delete(key);
      const accepted = result.Status === 'Success' || result.Status === 'DuplicateRecord';
      if (!accepted) log.error({ orgId: entry.orgId, dimension: entry.dimension, hour: formatHour(hourMs), status: result.Status }, 'marketplace metering record refused');
      await metering.putLedgerEntry({ ...entry, status: accepted ? 'accepted' : 'rejected', updatedAt: new Date(nowMs()) });
    }
    const unprocessed = new Set((output.UnprocessedRecords ?? []).map(recordKey));
    waiting = new Map([...waiting].filter(([key]) => unprocessed.has(key)));
  }
}
