// Alerts end to end on the embedded configuration, as `npm start` runs it: telemetry with a fault
// goes through POST /v1/telemetry, the in-process worker judges it and raises the episode's
// alerts, the dispatcher in the same process delivers them to a receiver this test runs on
// 127.0.0.1, once per episode and event, signed so the Standard Webhooks library verifies them. A
// failing receiver gets its retries and is then disabled with the reason; a dispatcher stopped
// mid-delivery delivers after the restart with the same webhook-id.
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { loadWorkerConfig } from '@adp/stream-worker';
import { loadConfig } from '../src/config.js';
import { openPlatform, type Platform } from '../src/platform.js';
import { API_KEY, constantEnergyModel, eventually, get, post } from './streaming-helpers.js';

interface Received {
  readonly headers: Record<string, string>;
  readonly body: string;
}

const servers: http.Server[] = [];
const platforms: Platform[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(platforms.splice(0).map((p) => p.close()));
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A receiver answering `status()` (or holding the request while it returns null). */
async function receiver(status: () => number | null): Promise<{ url: string; received: Received[]; port: number }> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers as Record<string, string>, body });
      const code = status();
      if (code !== null) res.writeHead(code).end();
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/hooks`, received, port };
}

const ENV = {
  BOOTSTRAP_API_KEY: API_KEY,
  LOG_LEVEL: 'silent',
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_RETRIES: '2',
  WEBHOOK_RETRY_MIN_DELAY_MS: '10',
  WEBHOOK_RETRY_MAX_DELAY_MS: '50',
  WEBHOOK_TIMEOUT_MS: '2000',
};

async function open(dataDir: string, env: Record<string, string> = {}): Promise<Platform> {
  const config = loadConfig({ DATA_DIR: dataDir, ...ENV, ...env });
  const platform = await openPlatform(config, { model: constantEnergyModel(1), worker: loadWorkerConfig({ WORKER_EPISODE_QUIET_POINTS: '5' }) });
  platforms.push(platform);
  return platform;
}

/** 300 one-minute points of a 60-minute cycle with a spike of +15 at point 250. */
function telemetry(machineId: string) {
  const points = Array.from({ length: 300 }, (_, i) => ({
    timestamp: new Date(Date.UTC(2025, 5, 1, 10, i)).toISOString(),
    value: 50 + 5 * Math.sin((2 * Math.PI * i) / 60) + ((i * 7919) % 13) / 26 + (i === 250 ? 15 : 0),
  }));
  return { machine_id: machineId, points };
}

const SPIKE_AT = new Date(Date.UTC(2025, 5, 1, 10, 250)).toISOString();

function accepted(response: LightMyRequestResponse, status = 202): void {
  expect(response.statusCode, response.body).toBe(status);
}

describe('webhooks on the embedded platform', () => {
  it('delivers the fault episode opened and closed once each, signed; a failing target gets its retries, then is disabled', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-webhooks-'));
    dirs.push(dataDir);
    const platform = await open(dataDir);
    const app = platform.app;
    const good = await receiver(() => 204);
    let badStatus = 503;
    const bad = await receiver(() => badStatus);
    const created = await post(app, '/v1/webhooks', { url: good.url, events: ['episode.opened', 'episode.closed'] });
    accepted(created, 201);
    const { secret, webhook_id } = created.json<{ secret: string; webhook_id: string }>();
    const failing = (await post(app, '/v1/webhooks', { url: bad.url, events: ['episode.opened'], machine_ids: ['pump-17'] })).json<{ webhook_id: string }>();

    accepted(await post(app, '/v1/telemetry', telemetry('pump-17')));

    // The spike's episode: opened, then closed after the quiet stretch.
    const spikeEvents = (): { type: string }[] =>
      good.received.map((r) => JSON.parse(r.body) as { type: string; data: { episode: { started_at: string } } }).filter((p) => p.data.episode.started_at === SPIKE_AT);
    await eventually(async () => spikeEvents().length >= 2, 120_000);
    await eventually(async () => (await get(app, `/v1/webhooks/${failing.webhook_id}`)).json<{ enabled: boolean }>().enabled === false, 60_000);
    await platform.worker!.stop();
    await eventually(async () => (await get(app, `/v1/webhooks/${webhook_id}/deliveries`)).json<{ deliveries: { status: string }[] }>().deliveries.every((d) => d.status === 'delivered'));

    // Every delivery verifies with the library and the signing secret; none came twice.
    const verifier = new Webhook(secret);
    const payloads = good.received.map((r) => verifier.verify(r.body, r.headers) as { type: string; data: Record<string, unknown> });
    const ids = good.received.map((r) => r.headers['webhook-id']);
    expect(new Set(ids).size).toBe(ids.length);
    const perEvent = new Map<string, number>();
    for (const p of payloads) perEvent.set(`${String(p.data['event_id'])}`, (perEvent.get(String(p.data['event_id'])) ?? 0) + 1);
    expect([...perEvent.values()].every((n) => n === 1)).toBe(true);
    expect(spikeEvents().map((p) => p.type)).toEqual(['episode.opened', 'episode.closed']);
    const closed = payloads.find((p) => p.type === 'episode.closed' && (p.data['episode'] as { started_at: string }).started_at === SPIKE_AT)!;
    expect(closed.data).toMatchObject({
      machine_id: 'pump-17',
      series_id: 'pump-17',
      channels: [],
      episode: { started_at: SPIKE_AT, ended_at: SPIKE_AT, flagged_points: 1 },
      peak: { at: SPIKE_AT, severity: expect.any(Number) },
      regime: 'UNKNOWN',
      links: { machine: '/dashboard/#/machines/pump-17' },
    });
    const peak = closed.data['peak'] as { value: number; upper_bound: number; expected_value: number };
    expect(peak.value).toBeGreaterThan(peak.upper_bound);

    // The failing target: three attempts (the first and two retries), each a 503, then disabled with why.
    const failed = (await get(app, `/v1/webhooks/${failing.webhook_id}`)).json<{ disabled_reason: string }>();
    expect(failed.disabled_reason).toMatch(/failed 3 attempts; last: HTTP 503$/);
    const log = (await get(app, `/v1/webhooks/${failing.webhook_id}/deliveries`)).json<{
      deliveries: { delivery_id: string; status: string; attempts: { status_code: number }[] }[];
    }>();
    const firstFailed = log.deliveries.find((d) => d.status === 'failed')!;
    expect(firstFailed.attempts.map((a) => a.status_code)).toEqual([503, 503, 503]);
    // Re-enabled by PATCH.
    const reenabled = await app.inject({
      method: 'PATCH',
      url: `/v1/webhooks/${failing.webhook_id}`,
      headers: { 'x-service-key': API_KEY, 'content-type': 'application/json' },
      payload: JSON.stringify({ enabled: true }),
    });
    expect(reenabled.json()).toMatchObject({ enabled: true, disabled_reason: null });

    // Redelivery on request, once the receiver is back: the same webhook-id, a fourth attempt.
    badStatus = 200;
    const redelivered = await post(app, `/v1/webhooks/${failing.webhook_id}/deliveries/${firstFailed.delivery_id}/redeliver`, {});
    expect(redelivered.statusCode).toBe(202);
    expect(redelivered.json()).toMatchObject({ delivery_id: firstFailed.delivery_id, status: 'pending' });
    await eventually(async () => {
      const again = (await get(app, `/v1/webhooks/${failing.webhook_id}/deliveries`)).json<{ deliveries: { delivery_id: string; status: string; attempts: { status_code: number }[] }[] }>();
      const delivery = again.deliveries.find((d) => d.delivery_id === firstFailed.delivery_id)!;
      return delivery.status === 'delivered' && delivery.attempts.map((a) => a.status_code).join() === '503,503,503,200';
    });
    expect(bad.received.filter((r) => r.headers['webhook-id'] === firstFailed.delivery_id)).toHaveLength(4);
  });

  it('a delivery in flight when the platform stops is delivered after the restart, with the same webhook-id', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-webhooks-'));
    dirs.push(dataDir);
    let answering = false;
    const target = await receiver(() => (answering ? 204 : null));
    const first = await open(dataDir, { WEBHOOK_TIMEOUT_MS: '60000' });
    const created = (await post(first.app, '/v1/webhooks', { url: target.url, events: ['episode.opened'] })).json<{ secret: string; webhook_id: string }>();
    accepted(await post(first.app, '/v1/telemetry', telemetry('pump-18')));
    // The receiver holds the first delivery; the platform stops meanwhile.
    await eventually(async () => target.received.length >= 1, 120_000);
    const heldId = target.received[0]!.headers['webhook-id'];
    await first.close();
    platforms.splice(platforms.indexOf(first), 1);
    answering = true;
    const second = await open(dataDir);
    await eventually(async () => target.received.filter((r) => r.headers['webhook-id'] === heldId).length >= 2, 60_000);
    await eventually(async () => {
      const log = (await get(second.app, `/v1/webhooks/${created.webhook_id}/deliveries`)).json<{ deliveries: { delivery_id: string; status: string }[] }>();
      return log.deliveries.find((d) => d.delivery_id === heldId)?.status === 'delivered';
    });
    const again = target.received.filter((r) => r.headers['webhook-id'] === heldId).at(-1)!;
    expect(() => new Webhook(created.secret).verify(again.body, again.headers)).not.toThrow();
  });
});
