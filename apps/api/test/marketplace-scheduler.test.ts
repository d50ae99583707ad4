// The automatic hourly export: due a delay after each hour ends, run by one of two racing
// schedulers (a lease in the store), hours missed while down caught up oldest first within the
// marketplace's acceptance window, and an hour out of the window or failing run after run logged
// and counted once. The clock is injected: no test waits on the wall clock.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FastifyBaseLogger } from 'fastify';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { HOUR_MS, openEmbeddedStore, type LeaseStore, type MeteringStore, type NewBaseline, type Store } from '@adp/store';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { StoreExportLease } from '../src/marketplace/lease.js';
import { MARKETPLACE_METRIC_NAMES, createMarketplaceMetrics, type MarketplaceMetrics, type UnreportedReason } from '../src/marketplace/metrics.js';
import { FAILING_AFTER_RUNS, MeteringScheduler, RETRY_MS, acceptedUntil, withinWindow } from '../src/marketplace/scheduler.js';
import { PRODUCT_CODE, startFakeMeteringService, type FakeMeteringService } from './marketplace-fake.js';
import { sharedStoreView } from './store-view.js';

const H08 = Date.parse('2026-03-15T08:00:00.000Z');
const DELAY_MS = 5 * 60_000;

interface LogLine {
  readonly level: string;
  readonly object: Record<string, unknown>;
  readonly message: string;
}

function capturingLogger(lines: LogLine[]): FastifyBaseLogger {
  const at =
    (level: string) =>
    (object: unknown, message?: string): void => {
      lines.push({ level, object: typeof object === 'object' && object !== null ? (object as Record<string, unknown>) : {}, message: message ?? String(object) });
    };
  const logger = { level: 'info', fatal: at('fatal'), error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug'), trace: at('trace'), silent: () => undefined };
  return { ...logger, child: () => logger } as unknown as FastifyBaseLogger;
}

describe('acceptance window', () => {
  it('is 24 hours after the record, and ends at 06:00 UTC on the 1st for the previous month', () => {
    expect(acceptedUntil(H08)).toBe(H08 + 24 * HOUR_MS);
    const lastHourOfMarch = Date.parse('2026-03-31T23:00:00.000Z');
    expect(acceptedUntil(lastHourOfMarch)).toBe(Date.parse('2026-04-01T06:00:00.000Z'));
    expect(withinWindow(lastHourOfMarch, Date.parse('2026-04-01T05:00:00.000Z'))).toBe(true);
    expect(withinWindow(lastHourOfMarch, Date.parse('2026-04-01T06:00:00.000Z'))).toBe(false);
    expect(withinWindow(H08, H08 + 23 * HOUR_MS)).toBe(true);
    expect(withinWindow(H08, H08 + 24 * HOUR_MS - 60_000)).toBe(false);
  });
});

/** A pull reader: `collect()` on demand. */
class PullReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

describe('unreported hours metric', () => {
  it('counts each flagged hour by reason on the OpenTelemetry counter', async () => {
    const reader = new PullReader();
    const recorder = createMarketplaceMetrics(new MeterProvider({ readers: [reader] }));
    recorder.recordUnreportedHour('outside_window');
    recorder.recordUnreportedHour('outside_window');
    recorder.recordUnreportedHour('failing');
    const { resourceMetrics } = await reader.collect();
    const metric = resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics).find((m) => m.descriptor.name === MARKETPLACE_METRIC_NAMES.unreportedHours);
    const byReason = Object.fromEntries((metric?.dataPoints ?? []).map((point) => [String(point.attributes['reason']), point.value]));
    expect(byReason).toEqual({ outside_window: 2, failing: 1 });
  });
});

describe('store lease', () => {
  let dataDir: string;
  let store: Store;
  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-lease-'));
    store = await openEmbeddedStore({ dataDir });
  });
  afterEach(async () => {
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('has one holder until it expires or is released; a stale holder never frees a lease taken over', async () => {
    const leases = store.leases as LeaseStore;
    const [a, b] = await Promise.all([leases.tryAcquire('job', 'a', 1_000, 0), leases.tryAcquire('job', 'b', 1_000, 0)]);
    expect([a, b].filter(Boolean)).toHaveLength(1);
    const holder = a ? 'a' : 'b';
    const other = a ? 'b' : 'a';
    expect(await leases.tryAcquire('job', other, 1_000, 999)).toBe(false);
    expect(await leases.tryAcquire('job', holder, 1_000, 500)).toBe(true);
    expect(await leases.tryAcquire('job', other, 1_000, 1_500)).toBe(true);
    await leases.release('job', holder);
    expect(await leases.tryAcquire('job', holder, 1_000, 1_600)).toBe(false);
    await leases.release('job', other);
    expect(await leases.tryAcquire('job', holder, 1_000, 1_600)).toBe(true);
    await expect(leases.tryAcquire('', 'x', 1_000, 0)).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
  });
});

describe('hourly export scheduler', () => {
  let fake: FakeMeteringService;
  let dataDir: string;
  let store: Store;
  let nowMs: number;
  let lines: LogLine[];
  let unreported: UnreportedReason[];
  const metrics: MarketplaceMetrics = { recordUnreportedHour: (reason) => unreported.push(reason) };

  beforeEach(async () => {
    nowMs = H08;
    lines = [];
    unreported = [];
    fake = await startFakeMeteringService();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-scheduler-'));
    store = await openEmbeddedStore({ dataDir, now: () => new Date(nowMs) });
  });
  afterEach(async () => {
    await store.close();
    await fake.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const metering = () => store.metering as MeteringStore;
  const scheduler = () =>
    new MeteringScheduler({
      export: { store, metering: metering(), client: fake.client(), productCode: PRODUCT_CODE, nowMs: () => nowMs, log: capturingLogger(lines) },
      lease: new StoreExportLease(store.leases as LeaseStore, 'metering-export', () => nowMs),
      delayMs: DELAY_MS,
      metrics,
      log: capturingLogger(lines),
    });
  const subscriber = async (customer: string) => (await store.createOrganization(`org_${customer}`, customer, { plan: 'paid', externalId: `aws:${customer}` })).id;
  const count = async (orgId: string, hourMs: number, calls: number) => {
    await Promise.all(Array.from({ length: calls }, (_, i) => metering().countCall(orgId, 'stream_api_calls', new Date(hourMs + (i % 60) * 60_000))));
  };
  const sends = () => fake.calls.filter((call) => call.operation === 'BatchMeterUsage');
  const sentHours = () =>
    sends().flatMap((call) => ((call.body['UsageRecords'] ?? []) as Record<string, unknown>[]).map((record) => Number(record['Timestamp']) * 1000));

  it('exports a finished hour once its delay has passed, not before', async () => {
    nowMs = H08 + 10 * 60_000;
    const org = await subscriber('cust-a');
    await count(org, H08, 2_000);
    const exporter = scheduler();
    nowMs = H08 + HOUR_MS + DELAY_MS - 60_000;
    expect((await exporter.tick()).exported).toEqual([]);
    expect(sends()).toHaveLength(0);
    nowMs = H08 + HOUR_MS + DELAY_MS;
    expect((await exporter.tick()).exported).toEqual([H08]);
    expect(fake.billed.get(`cust-a|stream_api_calls|${new Date(H08).toISOString()}`)).toBe(2);
    // Not due again until the next hour's delay has passed.
    nowMs += 30 * 60_000;
    expect((await exporter.tick()).ran).toBe(false);
  });

  it('runs on one of two racing schedulers: each hour exported exactly once', async () => {
    nowMs = H08 - 30 * 60_000;
    const org = await subscriber('cust-race');
    const [first, second] = [scheduler(), scheduler()];
    for (let hour = 0; hour < 3; hour += 1) {
      const hourMs = H08 + hour * HOUR_MS;
      await count(org, hourMs, 1_000 + hour);
      nowMs = hourMs + HOUR_MS + DELAY_MS;
      const outcomes = await Promise.all([first.tick(), second.tick()]);
      expect(outcomes.filter((outcome) => outcome.exported.includes(hourMs))).toHaveLength(1);
      // The loser's retry finds the hour settled and sends nothing.
      nowMs += RETRY_MS;
      await Promise.all([first.tick(), second.tick()]);
    }
    expect(sends()).toHaveLength(3);
    expect(sentHours()).toEqual([H08, H08 + HOUR_MS, H08 + 2 * HOUR_MS]);
  });

  it('catches up the hours missed while down, oldest first, and flags those out of the window once', async () => {
    nowMs = H08 - 40 * HOUR_MS;
    const org = await subscriber('cust-late');
    const tooOld = H08 - 30 * HOUR_MS;
    await count(org, tooOld, 1_200);
    const hours = [0, 1, 2, 3].map((i) => H08 + i * HOUR_MS);
    for (const hourMs of hours) await count(org, hourMs, 700);
    nowMs = H08 + 4 * HOUR_MS + DELAY_MS;
    const exporter = scheduler();
    const outcome = await exporter.tick();
    // Every hour since the organization's creation in the window: the silent ones settle at once.
    expect(outcome.exported.filter((hourMs) => hours.includes(hourMs))).toEqual(hours);
    expect(outcome.exported).toEqual([...outcome.exported].sort((a, b) => a - b));
    expect(sentHours()).toEqual([H08 + HOUR_MS, H08 + 2 * HOUR_MS]);
    const ledger = await metering().ledger(H08, H08 + 4 * HOUR_MS);
    const quantities = ledger.filter((entry) => entry.dimension === 'stream_api_calls').map((entry) => [entry.quantity, entry.carriedOut]);
    expect(quantities).toEqual([
      [0, 700],
      [1, 400],
      [1, 100],
      [0, 800],
    ]);
    expect(sentHours()).not.toContain(tooOld);
    expect(unreported).toEqual(['outside_window']);
    expect(lines.filter((line) => line.level === 'error' && line.object['reason'] === 'outside_window').map((line) => line.object['hour'])).toEqual([
      new Date(tooOld).toISOString().slice(0, 13),
    ]);
    nowMs += HOUR_MS;
    await exporter.tick();
    expect(unreported).toEqual(['outside_window']);
  });

  it('catches up monitored machines from the baseline history, machines deleted since included', async () => {
    nowMs = H08 - 40 * HOUR_MS;
    const org = await subscriber('cust-machines');
    const baseline = (machineId: string): NewBaseline => ({
      machineId,
      baselineId: `bl_${machineId}`,
      label: null,
      granularity: null,
      sensitivity: null,
      stats: { energyMean: 1, energyStd: 0.5, energyP99: 2, numWindows: 90, seriesLength: 100 },
      fineTuneStats: { status: 'skipped', finalLoss: null, epochsRun: 0, epochsMax: 0, earlyStopped: false, windows: 0, durationSeconds: 0 },
      predictorWeights: null,
      normalisation: null,
    });
    const during = async (fromMs: number, toMs: number, machineId: string) => {
      nowMs = fromMs;
      await store.upsertBaseline(org, baseline(machineId));
      nowMs = toMs;
      await store.deleteMachine(org, machineId);
    };
    const tooOld = H08 - 30 * HOUR_MS;
    await during(tooOld + 10 * 60_000, tooOld + 20 * 60_000, 'pump-old');
    await during(H08 + 10 * 60_000, H08 + HOUR_MS + 30 * 60_000, 'pump-gone');

    nowMs = H08 + 4 * HOUR_MS + DELAY_MS;
    await scheduler().tick();
    const machines = (await metering().ledger(H08, H08 + 4 * HOUR_MS)).filter((entry) => entry.dimension === 'monitored_machines');
    expect(machines.map((entry) => [entry.hourMs, entry.quantity])).toEqual([
      [H08, 1],
      [H08 + HOUR_MS, 1],
      [H08 + 2 * HOUR_MS, 0],
      [H08 + 3 * HOUR_MS, 0],
    ]);
    expect(fake.billed.get(`cust-machines|monitored_machines|${new Date(H08 + HOUR_MS).toISOString()}`)).toBe(1);
    // The hour out of the window had a monitored machine, though it is gone: flagged as unreported.
    expect(unreported).toEqual(['outside_window']);
    expect(lines.filter((line) => line.object['reason'] === 'outside_window').map((line) => line.object['hour'])).toEqual([
      new Date(tooOld).toISOString().slice(0, 13),
    ]);
  });

  it('flags an hour whose export keeps failing, once, and settles it when the marketplace is back', async () => {
    nowMs = H08;
    const org = await subscriber('cust-fail');
    await count(org, H08, 3_000);
    fake.failWith = { type: 'InternalServiceErrorException', status: 500 };
    nowMs = H08 + HOUR_MS + DELAY_MS;
    const exporter = scheduler();
    for (let run = 1; run <= FAILING_AFTER_RUNS + 1; run += 1) {
      const outcome = await exporter.tick();
      expect(outcome.open).toEqual([H08]);
      expect(unreported).toEqual(run < FAILING_AFTER_RUNS ? [] : ['failing']);
      nowMs += RETRY_MS;
    }
    expect(lines.some((line) => line.level === 'error' && line.object['reason'] === 'failing')).toBe(true);
    fake.failWith = null;
    expect((await exporter.tick()).open).toEqual([]);
    expect(fake.billed.get(`cust-fail|stream_api_calls|${new Date(H08).toISOString()}`)).toBe(3);
  });

  it('starts with the app and exports on its own (store lease by default)', async () => {
    nowMs = H08;
    const org = await subscriber('cust-app');
    await count(org, H08, 1_000);
    nowMs = H08 + HOUR_MS + DELAY_MS;
    const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', MARKETPLACE_PRODUCT_CODE: PRODUCT_CODE, MARKETPLACE_ENDPOINT: fake.url });
    const app = await buildApp(config, {
      store: sharedStoreView(store),
      marketplaceClient: fake.client(),
      nowMs: () => nowMs,
      marketplaceMetrics: metrics,
    });
    try {
      await vi.waitFor(() => expect(fake.billed.get(`cust-app|stream_api_calls|${new Date(H08).toISOString()}`)).toBe(1), { timeout: 30_000, interval: 20 });
    } finally {
      await app.close();
    }
  });
});
