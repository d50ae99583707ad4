// The marketplace export end to end on the scale-out store: subscribers provisioned through the
// landing page into ClickHouse, their hourly calls read back from ClickHouse, exported with
// BatchMeterUsage to the loopback fake (whole thousands, carry, the licensed and older customer
// forms), and a second run sending nothing. Each test has its own ClickHouse database.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { ClickHouseLogLevel, createClient } from '@clickhouse/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HOUR_MS, openClickHouseStore, type MeteringStore, type Store } from '@adp/store';
import { buildApp } from '../../apps/api/src/app.js';
import { loadConfig } from '../../apps/api/src/config.js';
import { PRODUCT_CODE, startFakeMeteringService, type FakeMeteringService } from '../../apps/api/test/marketplace-fake.js';
import { gateTitle, isolatedName, serverGate } from './servers.js';

const gate = await serverGate('clickhouse');
const url = gate.address.value;
const ADMIN_TOKEN = 'admin-token-for-tests-0123456789abcdef';
const H08 = Date.parse('2026-03-15T08:00:00.000Z');
const LICENSE = 'arn:aws:license-manager::294406891311:license:l-clickhouse0123';

describe.skipIf(!gate.run)(gateTitle('marketplace export on ClickHouse', gate), () => {
  let database: string;
  let dataDir: string;
  let fake: FakeMeteringService;
  let store: Store;
  let app: FastifyInstance;
  let nowMs = H08;

  beforeEach(async () => {
    nowMs = H08;
    database = isolatedName('mkt_export');
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-mkt-ch-'));
    fake = await startFakeMeteringService();
    store = await openClickHouseStore({ url, database });
    const config = loadConfig({
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
      ADMIN_TOKEN,
      MARKETPLACE_PRODUCT_CODE: PRODUCT_CODE,
      MARKETPLACE_ENDPOINT: fake.url,
      MARKETPLACE_EXPORT_SCHEDULE: 'false',
    });
    app = await buildApp(config, { store, marketplaceClient: fake.client(), nowMs: () => nowMs });
  });
  afterEach(async () => {
    await app.close();
    await fake.close();
    await rm(dataDir, { recursive: true, force: true });
    const admin = createClient({ url, log: { level: ClickHouseLogLevel.OFF } });
    await admin.command({ query: `DROP DATABASE IF EXISTS ${database}` });
    await admin.close();
  });

  const land = async (customer: { CustomerIdentifier: string; CustomerAWSAccountId?: string; LicenseArn?: string }) => {
    const token = `token-${customer.CustomerIdentifier}`;
    fake.tokens.set(token, { ...customer, ProductCode: PRODUCT_CODE });
    const page = await app.inject({ method: 'GET', url: `/marketplace/landing?x-cloud-marketplace-token=${token}` });
    expect(page.statusCode, page.body).toBe(200);
    return (await store.findOrganizationByExternalId(`aws:${customer.CustomerIdentifier}`))?.id ?? '';
  };
  const exportHour = (hour: string) =>
    app.inject({ method: 'POST', url: '/admin/v1/metering/export', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { hour } });

  it('exports hours counted in ClickHouse with thousands, carry and both customer forms, once', async () => {
    const licensed = await land({ CustomerIdentifier: 'ch-new', CustomerAWSAccountId: '123456789012', LicenseArn: LICENSE });
    const legacy = await land({ CustomerIdentifier: 'ch-old' });
    const metering = store.metering as MeteringStore;
    const count = (orgId: string, hourMs: number, calls: number) =>
      Promise.all(Array.from({ length: calls }, (_, i) => metering.countCall(orgId, 'batch_api_calls', new Date(hourMs + (i % 60) * 1000))));
    await count(licensed, H08, 1_500);
    await count(legacy, H08, 999);
    await count(licensed, H08 + HOUR_MS, 600);
    await count(legacy, H08 + HOUR_MS, 1);
    nowMs = H08 + 2 * HOUR_MS + 5 * 60_000;

    expect((await exportHour('2026-03-15T08')).statusCode).toBe(200);
    expect((await exportHour('2026-03-15T09')).statusCode).toBe(200);
    const at = (hourMs: number) => new Date(hourMs).toISOString();
    expect(Object.fromEntries(fake.billed)).toEqual({
      [`123456789012|batch_api_calls|${at(H08)}`]: 1,
      [`123456789012|batch_api_calls|${at(H08 + HOUR_MS)}`]: 1,
      [`ch-old|batch_api_calls|${at(H08 + HOUR_MS)}`]: 1,
    });
    const requests = fake.calls.filter((call) => call.operation === 'BatchMeterUsage');
    expect(requests.every((call) => (call.body['ProductCode'] === undefined) === JSON.stringify(call.body).includes('LicenseArn'))).toBe(true);
    const ledger = await metering.ledger(H08, H08 + 2 * HOUR_MS);
    expect(ledger.filter((entry) => entry.dimension === 'batch_api_calls').map((entry) => [entry.customer, entry.quantity, entry.carriedOut, entry.status])).toEqual(
      expect.arrayContaining([
        ['123456789012', 1, 500, 'accepted'],
        ['123456789012', 1, 100, 'accepted'],
        ['ch-old', 0, 999, 'accepted'],
        ['ch-old', 1, 0, 'accepted'],
      ]),
    );
    const sent = requests.length;
    expect((await exportHour('2026-03-15T09')).statusCode).toBe(200);
    expect(fake.calls.filter((call) => call.operation === 'BatchMeterUsage')).toHaveLength(sent);
  });
});
