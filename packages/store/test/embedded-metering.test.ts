// The embedded adapter of the metering port: hourly call counts (group-committed, so concurrent
// increments all land), the ledger's replace-by-key, the previous entry, and refusals.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HOUR_MS, openEmbeddedStore, type LedgerEntry, type MeteringStore, type Store } from '../src/index.js';

const H = Date.parse('2026-03-15T08:00:00.000Z');

describe('embedded metering store', () => {
  let dataDir: string;
  let store: Store;
  let metering: MeteringStore;

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-store-metering-'));
    store = await openEmbeddedStore({ dataDir });
    metering = store.metering as MeteringStore;
  });
  afterEach(async () => {
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const entry = (overrides: Partial<LedgerEntry> = {}): LedgerEntry => ({
    orgId: 'org_a', customer: 'cust-a', licenseArn: null, dimension: 'batch_api_calls', hourMs: H, used: 1200, carriedIn: 0, quantity: 1, carriedOut: 200,
    status: 'pending', updatedAt: new Date(H + 2 * HOUR_MS), ...overrides,
  });

  it('counts concurrent calls into their UTC hours', async () => {
    await Promise.all([
      ...Array.from({ length: 50 }, (_, i) => metering.countCall('org_a', 'batch_api_calls', new Date(H + i * 60_000))),
      metering.countCall('org_a', 'batch_api_calls', new Date(H + HOUR_MS)),
      metering.countCall('org_b', 'stream_api_calls', new Date(H + HOUR_MS - 1)),
    ]);
    await metering.countCall('org_a', 'batch_api_calls', new Date(H));
    expect(await metering.callsInHour(H)).toEqual([
      { orgId: 'org_a', dimension: 'batch_api_calls', calls: 51 },
      { orgId: 'org_b', dimension: 'stream_api_calls', calls: 1 },
    ]);
    expect(await metering.callsInHour(H + HOUR_MS)).toEqual([{ orgId: 'org_a', dimension: 'batch_api_calls', calls: 1 }]);
  });

  it('replaces a ledger entry by organization, dimension and hour, and finds the previous one', async () => {
    await metering.putLedgerEntry(entry());
    await metering.putLedgerEntry(entry({ status: 'accepted' }));
    await metering.putLedgerEntry(entry({ hourMs: H + 2 * HOUR_MS, carriedIn: 200, status: 'sent' }));
    expect(await metering.ledger(H, H + HOUR_MS)).toEqual([entry({ status: 'accepted' })]);
    expect(await metering.ledger(H, H + 3 * HOUR_MS)).toHaveLength(2);
    expect(await metering.previousEntry('org_a', 'batch_api_calls', H + 2 * HOUR_MS)).toEqual(entry({ status: 'accepted' }));
    expect(await metering.previousEntry('org_a', 'batch_api_calls', H)).toBeNull();
    expect(await metering.previousEntry('org_a', 'stream_api_calls', H + 5 * HOUR_MS)).toBeNull();
  });

  it('keeps the license an entry was sent under, and one subscriber record per organization', async () => {
    const licensed = entry({ customer: '123456789012', licenseArn: 'arn:aws:license-manager::294406891311:license:l-abc' });
    await metering.putLedgerEntry(licensed);
    expect(await metering.ledger(H, H + HOUR_MS)).toEqual([licensed]);
    const record = { orgId: 'org_a', customerIdentifier: 'cust-a', awsAccountId: null, licenseArn: null, updatedAt: new Date(H) };
    await metering.putCustomer(record);
    const renewed = { ...record, awsAccountId: '123456789012', licenseArn: 'arn:aws:license-manager::294406891311:license:l-new', updatedAt: new Date(H + 1_000) };
    await metering.putCustomer(renewed);
    await metering.putCustomer({ ...record, orgId: 'org_b', customerIdentifier: null, awsAccountId: '210987654321' });
    expect(await metering.customers()).toEqual([renewed, { ...record, orgId: 'org_b', customerIdentifier: null, awsAccountId: '210987654321' }]);
    await expect(metering.putCustomer({ ...record, customerIdentifier: null })).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
    await expect(metering.putLedgerEntry(entry({ licenseArn: '' }))).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
  });

  it('refuses an entry off the hour, with a negative count or an unknown dimension or status', async () => {
    for (const bad of [
      entry({ hourMs: H + 1 }),
      entry({ quantity: -1 }),
      entry({ carriedOut: 0.5 }),
      entry({ dimension: 'cpu_hours' as LedgerEntry['dimension'] }),
      entry({ status: 'lost' as LedgerEntry['status'] }),
      entry({ customer: '' }),
    ]) {
      await expect(metering.putLedgerEntry(bad)).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
    }
    await expect(metering.countCall('org_a', 'cpu_hours' as LedgerEntry['dimension'], new Date(H))).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
  });

  it('refuses counts after close', async () => {
    await store.close();
    await expect(metering.countCall('org_a', 'batch_api_calls', new Date(H))).rejects.toMatchObject({ code: 'STORE_CLOSED' });
    store = await openEmbeddedStore({ dataDir });
  });
});
