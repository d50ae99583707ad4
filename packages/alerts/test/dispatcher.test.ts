// The dispatcher on the in-process bus and the embedded store: an alert published twice (a replayed
// batch) is delivered once per target; targets that do not want it get nothing; at most
// `concurrencyPerTarget` requests are in flight per target; a deleted target's pending deliveries
// are abandoned. Each case runs with the attempts in the dispatcher's thread and in a delivery thread.
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openEmbeddedStore, type Store, type WebhookTarget } from '@adp/store';
import { createInProcessBus, loadStreamingCodecs, type Alert, type Bus } from '@adp/streaming';
import { WebhookDispatcher, newWebhookSecret, type DispatcherConfig } from '../src/index.js';

const codecs = loadStreamingCodecs();
const T0 = Date.UTC(2026, 0, 1);

function alert(overrides: Partial<Alert> = {}): Alert {
  return {
    event_id: 'org_a/pump-1/1/opened',
    event: 'EPISODE_OPENED',
    organization: 'org_a',
    machine_id: 'pump-1',
    series_id: 'pump-1',
    channels: [],
    started_at: T0,
    ended_at: null,
    flagged_points: 1,
    peak_at: T0,
    peak_severity: 0.6,
    peak_value: 80,
    expected_value: 50,
    upper_margin: 2,
    lower_margin: 2,
    regime: 'UNKNOWN',
    raised_at: T0 + 1000,
    previous_regime: null,
    ...overrides,
  };
}

function target(webhookId: string, url: string, overrides: Partial<WebhookTarget> = {}): WebhookTarget {
  return {
    webhookId,
    orgId: 'org_a',
    url,
    events: ['episode.opened', 'episode.closed'],
    machineIds: null,
    minSeverity: 0,
    description: '',
    secrets: [{ secret: newWebhookSecret(), expiresAt: null }],
    disabledAt: null,
    disabledReason: null,
    createdAt: new Date(T0),
    updatedAt: new Date(T0),
    ...overrides,
  };
}

const CONFIG: DispatcherConfig = {
  topic: 'alerts',
  groupId: 'dispatchers',
  allowPrivate: true,
  timeoutMs: 5_000,
  concurrencyPerTarget: 2,
  retry: { retries: 0, minDelayMs: 1, maxDelayMs: 1, factor: 2 },
  publicUrl: 'https://adp.example.com/',
};

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanups.splice(0).reverse()) await step();
});

async function setUpWith(config: DispatcherConfig): Promise<{ store: Store; bus: Bus; dispatcher: WebhookDispatcher }> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-dispatcher-'));
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  const store = await openEmbeddedStore({ dataDir });
  cleanups.push(() => store.close());
  const bus = createInProcessBus({ retryDelayMs: 10 });
  cleanups.push(() => bus.close());
  const dispatcher = new WebhookDispatcher({ bus, store: store.alerting!, config, codecs });
  cleanups.push(() => dispatcher.stop());
  return { store, bus, dispatcher };
}

async function receiver(delayMs: number): Promise<{ url: string; bodies: string[]; maxInFlight: () => number }> {
  const bodies: string[] = [];
  let inFlight = 0;
  let max = 0;
  const server = http.createServer((req, res) => {
    inFlight++;
    max = Math.max(max, inFlight);
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      bodies.push(body);
      setTimeout(() => {
        inFlight--;
        res.writeHead(204).end();
      }, delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, bodies, maxInFlight: () => max };
}

async function publish(bus: Bus, alerts: readonly Alert[]): Promise<void> {
  const producer = await bus.producer();
  await producer.send('alerts', alerts.map((a) => ({ key: `${a.organization}/${a.machine_id}`, value: codecs.alert.encode(a) })));
  await producer.close();
}

// Every case with the attempts in the dispatcher's thread and in a delivery thread of their own.
describe.each([false, true])('WebhookDispatcher (attempts in a delivery thread: %s)', (deliveryThread) => {
  const setUp = () => setUpWith({ ...CONFIG, deliveryThread });

  it('delivers a replayed alert once per wanting target, with the alert as the body', async () => {
    const { store, bus, dispatcher } = await setUp();
    const all = await receiver(0);
    const other = await receiver(0);
    await store.alerting!.putWebhook(target('wh_all', all.url));
    await store.alerting!.putWebhook(target('wh_other_machine', other.url, { machineIds: ['fan-2'] }));
    await store.alerting!.putWebhook(target('wh_severe', other.url, { minSeverity: 0.9 }));
    await store.alerting!.putWebhook(target('wh_closed_only', other.url, { events: ['episode.closed'] }));
    await dispatcher.start();
    await publish(bus, [alert(), alert()]);
    await expect.poll(() => all.bodies.length, { timeout: 30_000 }).toBe(1);
    await publish(bus, [alert()]);
    await expect.poll(async () => (await store.alerting!.listDeliveries('org_a', 'wh_all', 10)).map((d) => d.status), { timeout: 30_000 }).toEqual(['delivered']);
    await dispatcher.idle();
    expect(all.bodies).toHaveLength(1);
    expect(other.bodies).toHaveLength(0);
    expect(JSON.parse(all.bodies[0]!)).toEqual({
      type: 'episode.opened',
      timestamp: new Date(T0 + 1000).toISOString(),
      data: {
        event_id: 'org_a/pump-1/1/opened',
        machine_id: 'pump-1',
        series_id: 'pump-1',
        channels: [],
        episode: { started_at: new Date(T0).toISOString(), ended_at: null, flagged_points: 1 },
        peak: { at: new Date(T0).toISOString(), severity: 0.6, value: 80, expected_value: 50, lower_bound: 48, upper_bound: 52 },
        regime: 'UNKNOWN',
        links: { machine: 'https://adp.example.com/dashboard/#/machines/pump-1' },
      },
    });
  });

  it("records each alert in the machine's log once, naming the deliveries it gave rise to, with or without a target", async () => {
    const { store, bus, dispatcher } = await setUp();
    const all = await receiver(0);
    await store.alerting!.putWebhook(target('wh_all', all.url));
    await store.alerting!.putWebhook(target('wh_closed_only', all.url, { events: ['episode.closed'] }));
    await dispatcher.start();
    const closed = alert({ event_id: 'org_a/pump-1/1/closed', event: 'EPISODE_CLOSED', ended_at: T0 + 60_000, raised_at: T0 + 70_000 });
    const unwatched = alert({ event_id: 'org_b/fan-2/1/opened', organization: 'org_b', machine_id: 'fan-2', series_id: 'fan-2' });
    await publish(bus, [alert(), closed, unwatched, alert()]);
    await expect.poll(() => all.bodies.length, { timeout: 30_000 }).toBe(3);
    await dispatcher.idle();
    const log = await store.alerting!.listAlerts('org_a', 'pump-1', 10);
    // Same start: ordered by event id, descending.
    expect(log.map((a) => [a.eventId, a.event, a.seriesId, a.startedAt.getTime(), a.raisedAt.getTime()])).toEqual([
      ['org_a/pump-1/1/opened', 'episode.opened', 'pump-1', T0, T0 + 1000],
      ['org_a/pump-1/1/closed', 'episode.closed', 'pump-1', T0, T0 + 70_000],
    ]);
    const byEvent = new Map(log.map((a) => [a.eventId, a.deliveryIds]));
    const opened = (await store.alerting!.listDeliveries('org_a', 'wh_all', 10)).filter((d) => d.event === 'episode.opened');
    expect(byEvent.get('org_a/pump-1/1/opened')).toEqual(opened.map((d) => d.deliveryId));
    expect(byEvent.get('org_a/pump-1/1/closed')).toHaveLength(2);
    expect(JSON.parse(log[0]!.payload)).toMatchObject({ type: 'episode.opened', data: { machine_id: 'pump-1' } });
    // An organization without targets still has its machine's alerts recorded, with no delivery.
    expect((await store.alerting!.listAlerts('org_b', 'fan-2', 10)).map((a) => [a.eventId, a.deliveryIds])).toEqual([['org_b/fan-2/1/opened', []]]);
  });

  it("handles partition batches that arrive together as one group: every alert recorded and delivered once, in fewer writes than batches", async () => {
    const { store, bus, dispatcher } = await setUp();
    const all = await receiver(0);
    await store.alerting!.putWebhook(target('wh_all', all.url));
    const alerting = store.alerting!;
    let writes = 0;
    const recordAlerts = alerting.recordAlerts.bind(alerting);
    alerting.recordAlerts = async (alerts, deliveries) => {
      writes++;
      // Slow writes, so that the other partitions' batches queue behind the first.
      await new Promise((resolve) => setTimeout(resolve, 50));
      return recordAlerts(alerts, deliveries);
    };
    await dispatcher.start();
    const machines = Array.from({ length: 40 }, (_, i) => `pump-${i}`);
    await publish(
      bus,
      machines.map((machine) => alert({ event_id: `org_a/${machine}/1/opened`, machine_id: machine, series_id: machine })),
    );
    await expect.poll(() => all.bodies.length, { timeout: 30_000 }).toBe(machines.length);
    await dispatcher.idle();
    for (const machine of machines) {
      expect((await alerting.listAlerts('org_a', machine, 10)).map((a) => a.deliveryIds.length)).toEqual([1]);
    }
    expect(new Set(all.bodies.map((body) => (JSON.parse(body) as { data: { machine_id: string } }).data.machine_id)).size).toBe(machines.length);
    // 40 machines' alerts spread over the topic's 12 partitions: fewer writes than partition batches.
    expect(writes).toBeGreaterThan(0);
    expect(writes).toBeLessThan(12);
  });

  it('keeps at most concurrencyPerTarget requests in flight per target', async () => {
    const { store, bus, dispatcher } = await setUp();
    const slow = await receiver(100);
    await store.alerting!.putWebhook(target('wh_slow', slow.url));
    await dispatcher.start();
    await publish(bus, Array.from({ length: 6 }, (_, i) => alert({ event_id: `org_a/pump-1/${i}/opened`, started_at: T0 + i })));
    await expect.poll(() => slow.bodies.length, { timeout: 30_000 }).toBe(6);
    await dispatcher.idle();
    expect(slow.maxInFlight()).toBe(CONFIG.concurrencyPerTarget);
  });

  it("abandons a deleted target's pending delivery when it resumes", async () => {
    const { store, dispatcher } = await setUp();
    const receiving = await receiver(0);
    await store.alerting!.putDelivery({
      deliveryId: 'msg_orphan',
      orgId: 'org_a',
      webhookId: 'wh_gone',
      eventId: 'evt_1',
      event: 'episode.opened',
      payload: '{}',
      status: 'pending',
      attempts: [],
      createdAt: new Date(T0),
      updatedAt: new Date(T0),
    });
    await dispatcher.start();
    await expect.poll(async () => (await store.alerting!.getDelivery('org_a', 'msg_orphan'))?.status, { timeout: 30_000 }).toBe('failed');
    expect(receiving.bodies).toHaveLength(0);
  });
});
