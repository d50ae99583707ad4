// The hourly marketplace metering: live vendor calls counted per hour and dimension (test keys
// never), a finished hour exported with BatchMeterUsage in whole thousands with the remainder
// carried, unprocessed records retried, at most 25 records a call, and an export stopped at any
// moment finished by the next run without losing or double-billing an hour.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { HOUR_MS, StoreError, openEmbeddedStore, type LedgerEntry, type MeteringStore, type Store } from '@adp/store';
import { TOPICS, createInProcessBus } from '@adp/streaming';
import { createMemoryJobStore } from '@adp/store';
import type { AddressInfo } from 'node:net';
import { parseAdminCommand, runAdminCli } from '../src/admin/cli.js';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { monitoredMachines } from '../src/marketplace/export.js';
import { PRODUCT_CODE, startFakeMeteringService, type FakeMeteringService } from './marketplace-fake.js';
import { sharedStoreView } from './store-view.js';

const ADMIN_TOKEN = 'admin-token-for-tests-0123456789abcdef';
const H08 = Date.parse('2026-03-15T08:00:00.000Z');
const H09 = H08 + HOUR_MS;

describe('monitored machines of an hour', () => {
  const intervalsStore = (machineIds: readonly string[]) => ({
    baselineActivity: {
      activeIntervals: (_orgId: string, fromMs: number) =>
        Promise.resolve(machineIds.map((machineId) => ({ machineId, activeFromMs: fromMs, activeUntilMs: null }))),
    },
  });

  it('counts each machine once: a multivariate machine with its channels, a machine with two intervals in the hour', async () => {
    const ids = ['pump', 'pump', 'rig', 'rig:temp', 'rig:rpm:max', 'site:a:b', 'site:a', 'site:a:b:c', 'lone:channel'];
    // pump; rig with its two channels; site:a with its channels (the machine id holds ':'); lone:channel (no machine `lone`).
    expect(await monitoredMachines(intervalsStore(ids), 'org', H08)).toBe(4);
    expect(await monitoredMachines(intervalsStore([]), 'org', H08)).toBe(0);
  });
});

describe('marketplace metering export', () => {
  let fake: FakeMeteringService;
  let dataDir: string;
  let store: Store;
  let app: FastifyInstance;
  let nowMs = H09 + HOUR_MS + 5 * 60_000;
  /** When set, the ledger write it matches fails once, as if the process stopped there. */
  let crashAt: ((entry: LedgerEntry) => boolean) | null = null;
  let closeJobs: () => Promise<void> = () => Promise.resolve();

  const meteringWithCrashes = (metering: MeteringStore): MeteringStore => ({
    countCall: (...args) => metering.countCall(...args),
    callsInHour: (hourMs) => metering.callsInHour(hourMs),
    ledger: (fromMs, toMs) => metering.ledger(fromMs, toMs),
    previousEntry: (...args) => metering.previousEntry(...args),
    putCustomer: (record) => metering.putCustomer(record),
    customers: () => metering.customers(),
    putLedgerEntry: (entry) => {
      if (crashAt?.(entry)) {
        crashAt = null;
        return Promise.reject(new StoreError('STORE_QUERY_FAILED', 'putLedgerEntry', 'simulated stop'));
      }
      return metering.putLedgerEntry(entry);
    },
  });

  beforeEach(async () => {
    nowMs = H09 + HOUR_MS + 5 * 60_000;
    crashAt = null;
    fake = await startFakeMeteringService();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-metering-'));
    store = await openEmbeddedStore({ dataDir, now: () => new Date(nowMs) });
    const metering = meteringWithCrashes(store.metering as MeteringStore);
    const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', ADMIN_TOKEN, MARKETPLACE_PRODUCT_CODE: PRODUCT_CODE, MARKETPLACE_ENDPOINT: fake.url, MARKETPLACE_EXPORT_SCHEDULE: 'false' });
    // Detection jobs are accepted (their chunks queue on a bus nobody consumes here).
    const bus = createInProcessBus();
    await bus.ensureTopics([{ name: TOPICS.jobs, partitions: 1 }]);
    const jobs = createMemoryJobStore();
    closeJobs = async () => {
      await bus.close();
      await jobs.close();
    };
    app = await buildApp(config, {
      store: sharedStoreView(store, { metering }),
      marketplaceClient: fake.client(),
      nowMs: () => nowMs,
      bus,
      jobs,
    });
  });
  afterEach(async () => {
    await app.close();
    await closeJobs();
    await store.close();
    await fake.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  /** Provisions a subscriber through the landing page; answers its org_id and live key. */
  const subscribe = async (customer: { CustomerIdentifier?: string; CustomerAWSAccountId?: string; LicenseArn?: string }) => {
    const token = `token-${Math.random().toString(36).slice(2)}`;
    fake.tokens.set(token, { ...customer, ProductCode: PRODUCT_CODE });
    const page = await app.inject({ method: 'GET', url: `/marketplace/landing?x-cloud-marketplace-token=${token}` });
    expect(page.statusCode, page.body).toBe(200);
    const organization = await store.findOrganizationByExternalId(`aws:${customer.CustomerIdentifier ?? customer.CustomerAWSAccountId ?? ''}`);
    return { orgId: organization?.id ?? '', key: /svc_live_[A-Za-z0-9_-]+/.exec(page.body)?.[0] ?? '' };
  };
  const count = async (orgId: string, dimension: 'batch_api_calls' | 'stream_api_calls', hourMs: number, calls: number) => {
    await Promise.all(Array.from({ length: calls }, (_, i) => store.metering?.countCall(orgId, dimension, new Date(hourMs + (i % 60) * 60_000))));
  };
  const exportHour = (hour: string) =>
    app.inject({
      method: 'POST',
      url: '/admin/v1/metering/export',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      payload: { hour },
    });
  const ledger = async (from: string, to: string) => {
    const response = await app.inject({ method: 'GET', url: `/admin/v1/metering?from=${from}&to=${to}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(response.statusCode, response.body).toBe(200);
    return response.json<{ entries: Record<string, unknown>[] }>().entries;
  };
  const batchCalls = () => fake.calls.filter((call) => call.operation === 'BatchMeterUsage');

  it('counts live vendor calls per hour and dimension, never test keys', async () => {
    nowMs = H08 + 10 * 60_000;
    const { orgId, key } = await subscribe({ CustomerIdentifier: 'cust-A' });
    const testKey = (
      await app.inject({ method: 'POST', url: '/v1/keys', headers: { 'x-service-key': key, 'content-type': 'application/json' }, payload: { kind: 'test' } })
    ).json<{ key: string }>().key;
    const series = Array.from({ length: 24 }, (_, i) => ({ timestamp: new Date(Date.UTC(2025, 0, 1, i)).toISOString(), value: 10 + (i % 3) }));
    const detect = async (operation: string, subscriptionKey: string) => {
      const response = await app.inject({
        method: 'POST',
        url: `/anomalydetector/v1.1/timeseries/${operation}/detect`,
        headers: { 'ocp-apim-subscription-key': subscriptionKey },
        payload: { series, granularity: 'hourly' },
      });
      expect(response.statusCode, response.body).toBe(200);
    };
    for (const operation of ['entire', 'entire', 'changepoint', 'last', 'last', 'last']) await detect(operation, key);
    for (const operation of ['entire', 'last']) await detect(operation, testKey);
    expect(await store.metering?.callsInHour(H08)).toEqual([
      { orgId, dimension: 'batch_api_calls', calls: 3 },
      { orgId, dimension: 'stream_api_calls', calls: 3 },
    ]);
  });

  it('counts an accepted detection job as one batch call whatever its length (live keys only), its replay not again', async () => {
    nowMs = H08 + 10 * 60_000;
    const { orgId, key } = await subscribe({ CustomerIdentifier: 'cust-J' });
    const testKey = (
      await app.inject({ method: 'POST', url: '/v1/keys', headers: { 'x-service-key': key, 'content-type': 'application/json' }, payload: { kind: 'test' } })
    ).json<{ key: string }>().key;
    const series = Array.from({ length: 20_000 }, (_, i) => ({ value: 10 + Math.sin(i / 3) }));
    const submit = async (serviceKey: string, idempotencyKey: string) => {
      const response = await app.inject({
        method: 'POST',
        url: '/v1/jobs',
        headers: { 'x-service-key': serviceKey, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
        payload: { series },
      });
      expect(response.statusCode, response.body).toBe(202);
    };
    await submit(key, 'j-1');
    await submit(key, 'j-1');
    await submit(testKey, 'j-2');
    expect(await store.metering?.callsInHour(H08)).toEqual([{ orgId, dimension: 'batch_api_calls', calls: 1 }]);
  });

  it('counts native detections as batch calls (live keys only), never baselines', async () => {
    nowMs = H08 + 10 * 60_000;
    const { orgId, key } = await subscribe({ CustomerIdentifier: 'cust-N' });
    const testKey = (
      await app.inject({ method: 'POST', url: '/v1/keys', headers: { 'x-service-key': key, 'content-type': 'application/json' }, payload: { kind: 'test' } })
    ).json<{ key: string }>().key;
    const series = Array.from({ length: 120 }, (_, i) => ({ value: 10 + Math.sin(i / 3) }));
    const call = async (url: string, serviceKey: string, payload: Record<string, unknown>) => {
      const response = await app.inject({ method: 'POST', url, headers: { 'x-service-key': serviceKey, 'content-type': 'application/json' }, payload });
      expect(response.statusCode, response.body).toBeLessThan(300);
    };
    await call('/v1/baseline', key, { machine_id: 'm1', series });
    await call('/v1/detect', key, { series });
    await call('/v1/detect', key, { machine_id: 'm1', series });
    await call('/v1/detect', testKey, { series });
    expect(await store.metering?.callsInHour(H08)).toEqual([{ orgId, dimension: 'batch_api_calls', calls: 2 }]);
  });

  it('reports whole thousands per hour and carries the remainder into the next hour', async () => {
    const a = await subscribe({ CustomerIdentifier: 'cust-A' });
    const b = await subscribe({ CustomerAWSAccountId: '123456789012' });
    await count(a.orgId, 'batch_api_calls', H08, 1_200);
    await count(a.orgId, 'stream_api_calls', H08, 999);
    await count(a.orgId, 'batch_api_calls', H09, 900);
    await count(a.orgId, 'stream_api_calls', H09, 2);
    await count(b.orgId, 'batch_api_calls', H09, 1_000);

    expect((await exportHour('2026-03-15T08')).statusCode).toBe(200);
    const first = await exportHour('2026-03-15T09');
    expect(first.statusCode, first.body).toBe(200);
    const rows = (await ledger('2026-03-15T08', '2026-03-15T10')).map((entry) => [
      entry['customer'], entry['dimension'], entry['hour'], entry['used'], entry['carried_in'], entry['quantity'], entry['carried_out'], entry['status'],
    ]);
    expect(rows).toEqual(
      expect.arrayContaining([
        ['cust-A', 'batch_api_calls', '2026-03-15T08', 1200, 0, 1, 200, 'accepted'],
        ['cust-A', 'stream_api_calls', '2026-03-15T08', 999, 0, 0, 999, 'accepted'],
        ['cust-A', 'monitored_machines', '2026-03-15T08', 0, 0, 0, 0, 'accepted'],
        ['cust-A', 'batch_api_calls', '2026-03-15T09', 900, 200, 1, 100, 'accepted'],
        ['cust-A', 'stream_api_calls', '2026-03-15T09', 2, 999, 1, 1, 'accepted'],
        ['123456789012', 'batch_api_calls', '2026-03-15T09', 1000, 0, 1, 0, 'accepted'],
      ]),
    );
    expect(rows).toHaveLength(12);
    expect(Object.fromEntries(fake.billed)).toEqual({
      'cust-A|batch_api_calls|2026-03-15T08:00:00.000Z': 1,
      'cust-A|batch_api_calls|2026-03-15T09:00:00.000Z': 1,
      'cust-A|stream_api_calls|2026-03-15T09:00:00.000Z': 1,
      '123456789012|batch_api_calls|2026-03-15T09:00:00.000Z': 1,
    });
    // The account id goes as CustomerAWSAccountId, an identifier as CustomerIdentifier.
    const sent = batchCalls().flatMap((call) => call.body['UsageRecords'] as Record<string, unknown>[]);
    expect(sent.find((record) => record['CustomerAWSAccountId'] === '123456789012')).not.toHaveProperty('CustomerIdentifier');
    expect(sent.filter((record) => record['CustomerIdentifier'] === 'cust-A')).toHaveLength(3);
    expect(batchCalls().every((call) => call.signed && call.body['ProductCode'] === PRODUCT_CODE)).toBe(true);

    // A second run of a settled hour sends nothing.
    const before = batchCalls().length;
    expect((await exportHour('2026-03-15T09')).statusCode).toBe(200);
    expect(batchCalls()).toHaveLength(before);
  });

  it('bills monitored_machines for the hours each baseline was active, whenever the hour is exported', async () => {
    const H10 = Date.parse('2026-03-15T10:00:00.000Z');
    const at = (hour: number, minute: number) => H10 + (hour - 10) * HOUR_MS + minute * 60_000;
    nowMs = at(10, 0);
    const { key } = await subscribe({ CustomerIdentifier: 'cust-M' });
    const energies = Array.from({ length: 100 }, (_, i) => 3 + (i % 2));
    const baseline = async (machineId: string, minuteAt: number) => {
      nowMs = minuteAt;
      const response = await app.inject({
        method: 'POST', url: '/v1/baseline', headers: { 'x-service-key': key, 'content-type': 'application/json' }, payload: { machine_id: machineId, energies },
      });
      expect(response.statusCode, response.body).toBeLessThan(300);
    };
    const remove = async (machineId: string, minuteAt: number) => {
      nowMs = minuteAt;
      const response = await app.inject({ method: 'DELETE', url: `/v1/machines/${machineId}`, headers: { 'x-service-key': key } });
      expect(response.statusCode, response.body).toBeLessThan(300);
    };
    await baseline('pump-1', at(10, 20));
    await baseline('pump-short', at(10, 40));
    await remove('pump-short', at(10, 50));
    // A replacement keeps the machine in the interval it started.
    await baseline('pump-1', at(11, 5));
    await remove('pump-1', at(11, 30));
    await baseline('pump-2', at(12, 10));

    // Every hour is exported after the deletions, as a catch-up run would.
    nowMs = at(13, 0);
    for (const hour of ['2026-03-15T10', '2026-03-15T11', '2026-03-15T12']) {
      const response = await exportHour(hour);
      expect(response.statusCode, response.body).toBe(200);
    }
    const machines = (await ledger('2026-03-15T10', '2026-03-15T13'))
      .filter((entry) => entry['dimension'] === 'monitored_machines')
      .map((entry) => [entry['hour'], entry['quantity'], entry['status']]);
    // Hour 10: pump-1 (from 10:20) and pump-short (10:40-10:50). Hour 11: pump-1 until 11:30, not
    // pump-2. Hour 12: pump-2 from 12:10, not pump-1.
    expect(machines).toEqual([
      ['2026-03-15T10', 2, 'accepted'],
      ['2026-03-15T11', 1, 'accepted'],
      ['2026-03-15T12', 1, 'accepted'],
    ]);
    expect(Object.fromEntries(fake.billed)).toEqual({
      'cust-M|monitored_machines|2026-03-15T10:00:00.000Z': 2,
      'cust-M|monitored_machines|2026-03-15T11:00:00.000Z': 1,
      'cust-M|monitored_machines|2026-03-15T12:00:00.000Z': 1,
    });
  });

  it('names a licensed subscriber by account id and license without the product code, an older one by identifier with it', async () => {
    const licenseArn = 'arn:aws:license-manager::294406891311:license:l-0123456789abcdef';
    const licensed = await subscribe({ CustomerIdentifier: 'cust-new', CustomerAWSAccountId: '123456789012', LicenseArn: licenseArn });
    const legacy = await subscribe({ CustomerIdentifier: 'cust-old' });
    expect(await store.metering?.customers()).toEqual(
      expect.arrayContaining([expect.objectContaining({ orgId: licensed.orgId, customerIdentifier: 'cust-new', awsAccountId: '123456789012', licenseArn })]),
    );
    await count(licensed.orgId, 'batch_api_calls', H08, 2_000);
    await count(legacy.orgId, 'batch_api_calls', H08, 3_000);
    expect((await exportHour('2026-03-15T08')).statusCode).toBe(200);
    const requests = batchCalls().map((call) => call.body);
    expect(requests).toHaveLength(2);
    const withLicense = requests.find((body) => body['ProductCode'] === undefined);
    const withProduct = requests.find((body) => body['ProductCode'] === PRODUCT_CODE);
    expect(withLicense?.['UsageRecords']).toEqual([
      expect.objectContaining({ CustomerAWSAccountId: '123456789012', LicenseArn: licenseArn, Dimension: 'batch_api_calls', Quantity: 2 }),
    ]);
    expect(JSON.stringify(withLicense)).not.toContain('CustomerIdentifier');
    expect(withProduct?.['UsageRecords']).toEqual([expect.objectContaining({ CustomerIdentifier: 'cust-old', Dimension: 'batch_api_calls', Quantity: 3 })]);
    expect(JSON.stringify(withProduct)).not.toContain('LicenseArn');
    const entries = await ledger('2026-03-15T08', '2026-03-15T09');
    expect(entries.filter((entry) => entry['dimension'] === 'batch_api_calls').map((entry) => [entry['customer'], entry['license_arn'], entry['status']])).toEqual(
      expect.arrayContaining([
        ['123456789012', licenseArn, 'accepted'],
        ['cust-old', null, 'accepted'],
      ]),
    );
  });

  it('refuses an hour that has not ended and a malformed hour', async () => {
    nowMs = H09 + 59 * 60_000;
    const unfinished = await exportHour('2026-03-15T09');
    expect(unfinished.statusCode).toBe(409);
    expect(unfinished.json<{ error: { code: string } }>().error.code).toBe('MeteringHourNotFinished');
    for (const hour of ['2026-03-15T9', '2026-03-15T24', '2026-03-15 08', 8]) {
      const response = await app.inject({
        method: 'POST',
        url: '/admin/v1/metering/export',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        payload: { hour },
      });
      expect(response.statusCode, String(hour)).toBe(400);
    }
    const unauthorized = await app.inject({ method: 'POST', url: '/admin/v1/metering/export', payload: { hour: '2026-03-15T08' } });
    expect(unauthorized.statusCode).toBe(401);
  });

  it('retries the records the marketplace left unprocessed', async () => {
    const a = await subscribe({ CustomerIdentifier: 'cust-A' });
    await count(a.orgId, 'batch_api_calls', H08, 1_000);
    await count(a.orgId, 'stream_api_calls', H08, 1_000);
    fake.unprocessedToCome = 1;
    expect((await exportHour('2026-03-15T08')).statusCode).toBe(200);
    expect(batchCalls().map((call) => (call.body['UsageRecords'] as unknown[]).length)).toEqual([2, 1]);
    expect([...fake.billed.values()]).toEqual([1, 1]);
    expect((await ledger('2026-03-15T08', '2026-03-15T09')).every((entry) => entry['status'] === 'accepted')).toBe(true);
  });

  it('sends at most 25 records a call', async () => {
    for (let i = 0; i < 9; i += 1) {
      const orgId = `org_bulk_${i}`;
      await store.createOrganization(orgId, `bulk ${i}`, { plan: 'paid', externalId: `aws:bulk-${i}` });
      for (const dimension of ['batch_api_calls', 'stream_api_calls', 'monitored_machines'] as const) {
        await store.metering?.putLedgerEntry({
          orgId, customer: `bulk-${i}`, licenseArn: null, dimension, hourMs: H08, used: 1000, carriedIn: 0, quantity: 1, carriedOut: 0, status: 'pending', updatedAt: new Date(nowMs),
        });
      }
    }
    expect((await exportHour('2026-03-15T08')).statusCode).toBe(200);
    expect(batchCalls().map((call) => (call.body['UsageRecords'] as unknown[]).length)).toEqual([25, 2]);
    expect(fake.billed.size).toBe(27);
  });

  it.each([
    ['after the pending write, before the send', (entry: LedgerEntry) => entry.status === 'sent'],
    ['after the send, before the ledger write', (entry: LedgerEntry) => entry.status === 'accepted' && entry.quantity > 0],
    ['after the first ledger write of the answers', (entry: LedgerEntry) => entry.status === 'accepted' && entry.dimension === 'stream_api_calls'],
  ])('finishes an export stopped %s without losing or double-billing the hour', async (_moment, predicate) => {
    const a = await subscribe({ CustomerIdentifier: 'cust-A' });
    await count(a.orgId, 'batch_api_calls', H08, 2_300);
    await count(a.orgId, 'stream_api_calls', H08, 1_050);
    crashAt = predicate;
    const stopped = await exportHour('2026-03-15T08');
    expect(stopped.statusCode).toBe(503);
    expect(crashAt).toBeNull();
    // More calls counted late for the hour change nothing already written.
    await count(a.orgId, 'batch_api_calls', H08, 1_000);

    expect((await exportHour('2026-03-15T08')).statusCode).toBe(200);
    expect(Object.fromEntries(fake.billed)).toEqual({
      'cust-A|batch_api_calls|2026-03-15T08:00:00.000Z': 2,
      'cust-A|stream_api_calls|2026-03-15T08:00:00.000Z': 1,
    });
    const entries = await ledger('2026-03-15T08', '2026-03-15T09');
    expect(entries.map((entry) => [entry['dimension'], entry['quantity'], entry['carried_out'], entry['status']])).toEqual(
      expect.arrayContaining([
        ['batch_api_calls', 2, 300, 'accepted'],
        ['stream_api_calls', 1, 50, 'accepted'],
      ]),
    );
  });

  it('runs the export and reads the ledger from the admin CLI', async () => {
    expect(parseAdminCommand(['metering', 'export', '--hour', '2026-03-15T08'])).toEqual({
      method: 'POST',
      path: '/admin/v1/metering/export',
      body: { hour: '2026-03-15T08' },
    });
    expect(parseAdminCommand(['metering', 'list', '--from', '2026-03-15T08', '--to', '2026-03-15T10'])).toEqual({
      method: 'GET',
      path: '/admin/v1/metering?from=2026-03-15T08&to=2026-03-15T10',
    });
    for (const argv of [['metering', 'export'], ['metering', 'list', '--from', '2026-03-15T08'], ['metering', 'export', '--hour', 'h', 'extra']]) {
      expect(() => parseAdminCommand(argv), argv.join(' ')).toThrow(expect.objectContaining({ name: 'UsageError' }));
    }

    const a = await subscribe({ CustomerIdentifier: 'cust-A' });
    await count(a.orgId, 'batch_api_calls', H08, 1_000);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const output: string[] = [];
    const io = {
      env: { ADP_URL: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, ADMIN_TOKEN },
      stdout: (text: string) => output.push(text),
      stderr: (text: string) => output.push(text),
      fetch,
    };
    expect(await runAdminCli(['metering', 'export', '--hour', '2026-03-15T08'], io)).toBe(0);
    expect(Object.fromEntries(fake.billed)).toEqual({ 'cust-A|batch_api_calls|2026-03-15T08:00:00.000Z': 1 });
    output.length = 0;
    expect(await runAdminCli(['metering', 'list', '--from', '2026-03-15T08', '--to', '2026-03-15T09'], io)).toBe(0);
    const listed = JSON.parse(output.join('')) as { entries: { dimension: string; status: string }[] };
    expect(listed.entries.map((entry) => [entry.dimension, entry.status])).toEqual([
      ['batch_api_calls', 'accepted'],
      ['monitored_machines', 'accepted'],
      ['stream_api_calls', 'accepted'],
    ]);
  });
});
