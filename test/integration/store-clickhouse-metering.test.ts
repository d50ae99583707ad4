// The ClickHouse adapter of the metering port against the real server: hourly call counts summed
// across group-committed rows, the ledger's latest write per (organization, dimension, hour), the
// previous entry, and refusals. Each test has its own database, dropped afterwards.
import { ClickHouseLogLevel, createClient } from '@clickhouse/client';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HOUR_MS, openClickHouseStore, type LedgerEntry, type MeteringStore, type Store } from '@adp/store';
import { gateTitle, isolatedName, serverGate } from './servers.js';

const gate = await serverGate('clickhouse');
const url = gate.address.value;
const H = Date.parse('2026-03-15T08:00:00.000Z');

const admin = gate.run ? createClient({ url, log: { level: ClickHouseLogLevel.OFF } }) : undefined;
afterAll(async () => {
  await admin?.close();
});

describe.skipIf(!gate.run)(gateTitle('ClickHouse metering store', gate), () => {
  let database: string;
  let store: Store;
  let metering: MeteringStore;

  beforeEach(async () => {
    database = isolatedName('metering');
    store = await openClickHouseStore({ url, database });
    metering = store.metering as MeteringStore;
  });
  afterEach(async () => {
    await store.close();
    await admin?.command({ query: `DROP DATABASE IF EXISTS ${database}` });
  });

  const entry = (overrides: Partial<LedgerEntry> = {}): LedgerEntry => ({
    orgId: 'org_a', customer: 'cust-a', licenseArn: null, dimension: 'batch_api_calls', hourMs: H, used: 1200, carriedIn: 0, quantity: 1, carriedOut: 200,
    status: 'pending', updatedAt: new Date(H + 2 * HOUR_MS), ...overrides,
  });

  it('sums concurrent calls into their UTC hours', async () => {
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

  it('reads the latest write of each ledger entry, and finds the previous one', async () => {
    // Written back to back: the version clock, not the wall clock, orders them.
    await metering.putLedgerEntry(entry());
    await metering.putLedgerEntry(entry({ status: 'sent' }));
    await metering.putLedgerEntry(entry({ status: 'accepted' }));
    await metering.putLedgerEntry(entry({ hourMs: H + 2 * HOUR_MS, carriedIn: 200, status: 'sent' }));
    expect(await metering.ledger(H, H + HOUR_MS)).toEqual([entry({ status: 'accepted' })]);
    expect(await metering.ledger(H, H + 3 * HOUR_MS)).toHaveLength(2);
    expect(await metering.previousEntry('org_a', 'batch_api_calls', H + 2 * HOUR_MS)).toEqual(entry({ status: 'accepted' }));
    expect(await metering.previousEntry('org_a', 'batch_api_calls', H + 5 * HOUR_MS)).toEqual(entry({ hourMs: H + 2 * HOUR_MS, carriedIn: 200, status: 'sent' }));
    expect(await metering.previousEntry('org_a', 'batch_api_calls', H)).toBeNull();
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

  it('refuses an entry off the hour or with a negative count', async () => {
    await expect(metering.putLedgerEntry(entry({ hourMs: H + 1 }))).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
    await expect(metering.putLedgerEntry(entry({ quantity: -1 }))).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
    expect(await metering.ledger(H, H + HOUR_MS)).toEqual([]);
  });
});
