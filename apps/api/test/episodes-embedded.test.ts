// A machine's episodes and their alerts (GET /v1/machines/{id}/episodes) on the embedded platform,
// as `npm start` runs it: telemetry with a spike is judged by the in-process worker, the
// dispatcher records the episode's two alerts and delivers them to a receiver this test runs; the
// route groups them into the episode with what became of each delivery. Deleting the machine
// removes its feedback and its alert log and leaves the targets' machine_ids as they were. Every
// coded error of the route, and the deletion's when the alerting store is down.
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '@adp/stream-worker';
import { loadConfig } from '../src/config.js';
import { buildApp } from '../src/app.js';
import { openPlatform, type Platform } from '../src/platform.js';
import { describeApiKey } from '../src/tenancy/keys.js';
import { API_KEY, OTHER_KEY, OTHER_ORG, constantEnergyModel, eventually, get, post, streamingEnvironment } from './streaming-helpers.js';
import { sharedStoreView } from './store-view.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanups.splice(0).reverse()) await step();
});

async function receiver(): Promise<{ url: string; bodies: string[] }> {
  const bodies: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      bodies.push(body);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, bodies };
}

async function open(): Promise<Platform> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-episodes-'));
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  const config = loadConfig({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY: API_KEY, LOG_LEVEL: 'silent', WEBHOOK_ALLOW_PRIVATE: 'true' });
  const platform = await openPlatform(config, { model: constantEnergyModel(1), worker: loadWorkerConfig({ WORKER_EPISODE_QUIET_POINTS: '5' }) });
  cleanups.push(() => platform.close());
  return platform;
}

const minute = (i: number): string => new Date(Date.UTC(2025, 5, 1, 10, i)).toISOString();

/** 300 one-minute points of a 60-minute cycle with a spike of +15 at point 250. */
function telemetry(machineId: string) {
  const points = Array.from({ length: 300 }, (_, i) => ({
    timestamp: minute(i),
    value: 50 + 5 * Math.sin((2 * Math.PI * i) / 60) + ((i * 7919) % 13) / 26 + (i === 250 ? 15 : 0),
  }));
  return { machine_id: machineId, points };
}

interface EpisodesBody {
  machine_id: string;
  episodes: {
    series_id: string;
    started_at: string;
    ended_at: string | null;
    flagged_points: number;
    peak: { at: string; value: number; upper_bound: number };
    alerts: { event: string; deliveries: { webhook_id: string; status: string; attempts: number; last_status_code: number | null }[] }[];
  }[];
  regime_changes: unknown[];
}

describe('GET /v1/machines/{id}/episodes on the embedded platform', () => {
  it("groups a machine's alerts by episode with each delivery's outcome; deleting the machine removes its feedback and episodes, not the targets' machine_ids", async () => {
    const platform = await open();
    const app = platform.app;
    const hook = await receiver();
    const created = await post(app, '/v1/webhooks', { url: hook.url, events: ['episode.opened', 'episode.closed'], machine_ids: ['pump-17', 'fan-2'] });
    expect(created.statusCode, created.body).toBe(201);
    const { webhook_id } = created.json<{ webhook_id: string }>();
    expect((await post(app, '/v1/telemetry', telemetry('pump-17'))).statusCode).toBe(202);

    let body: EpisodesBody = { machine_id: '', episodes: [], regime_changes: [] };
    const spikeEpisode = (): EpisodesBody['episodes'][number] | undefined => body.episodes.find((e) => e.started_at === minute(250));
    await eventually(async () => {
      body = (await get(app, '/v1/machines/pump-17/episodes')).json<EpisodesBody>();
      const episode = spikeEpisode();
      return episode !== undefined && episode.alerts.length === 2 && episode.alerts.every((a) => a.deliveries.length === 1 && a.deliveries[0]!.status === 'delivered');
    });
    const episode = spikeEpisode()!;
    expect(body.machine_id).toBe('pump-17');
    expect(episode).toMatchObject({ series_id: 'pump-17', started_at: minute(250), ended_at: minute(250), flagged_points: 1, peak: { at: minute(250) } });
    expect(episode.peak.value).toBeGreaterThan(episode.peak.upper_bound);
    expect(episode.alerts.map((a) => a.event)).toEqual(['episode.opened', 'episode.closed']);
    for (const alert of episode.alerts) {
      expect(alert.deliveries).toEqual([
        { delivery_id: expect.stringMatching(/^msg_/), webhook_id, status: 'delivered', attempts: 1, last_status_code: 204, last_error: null, last_latency_ms: expect.any(Number) },
      ]);
    }
    // Each alert reached the receiver once per delivery the route names.
    const received = hook.bodies.map((b) => JSON.parse(b) as { type: string; data: { episode: { started_at: string } } }).filter((p) => p.data.episode.started_at === minute(250));
    expect(received.map((p) => p.type)).toEqual(['episode.opened', 'episode.closed']);
    // Latest start first; another organization sees none of it.
    const starts = body.episodes.map((e) => e.started_at);
    expect(starts).toEqual([...starts].sort().reverse());
    expect((await get(app, '/v1/machines/pump-17/episodes?limit=1')).json<EpisodesBody>().episodes).toHaveLength(1);
    await app.store.createOrganization(OTHER_ORG, 'Second organization');
    await app.store.createApiKey(OTHER_ORG, describeApiKey(OTHER_KEY));
    expect((await get(app, '/v1/machines/pump-17/episodes', OTHER_KEY)).json()).toEqual({ machine_id: 'pump-17', episodes: [], regime_changes: [] });

    const feedback = await post(app, '/v1/machines/pump-17/feedback', { from: minute(250), to: minute(251), label: 'not_anomaly' });
    expect(feedback.statusCode, feedback.body).toBe(201);
    await platform.worker!.stop();

    const deleted = await app.inject({ method: 'DELETE', url: '/v1/machines/pump-17', headers: { 'x-service-key': API_KEY } });
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect((await get(app, '/v1/machines/pump-17/feedback')).json()).toEqual({ feedback: [] });
    expect((await get(app, '/v1/machines/pump-17/episodes')).json()).toEqual({ machine_id: 'pump-17', episodes: [], regime_changes: [] });
    // The target still names the machine: telemetry sent under the id again alerts it.
    expect((await get(app, `/v1/webhooks/${webhook_id}`)).json()).toMatchObject({ machine_ids: ['pump-17', 'fan-2'], enabled: true });
    // Its delivery log keeps what was delivered.
    expect((await get(app, `/v1/webhooks/${webhook_id}/deliveries`)).json<{ deliveries: unknown[] }>().deliveries.length).toBeGreaterThanOrEqual(2);
  });

  it('answers a coded error for each bad input, and 503 without the platform store', async () => {
    const env = await streamingEnvironment();
    cleanups.push(() => env.cleanup());
    const app = await env.start();
    const cases: [string, number, string][] = [
      ['/v1/machines/-bad/episodes', 400, 'InvalidMachineId'],
      ['/v1/machines/pump-1/episodes?limit=0', 400, 'BadRequest'],
      ['/v1/machines/pump-1/episodes?limit=501', 400, 'BadRequest'],
      ['/v1/machines/pump-1/episodes?limit=ten', 400, 'BadRequest'],
      [`/v1/machines/${'m'.repeat(129)}/episodes`, 400, 'BadRequest'],
    ];
    for (const [url, status, code] of cases) {
      const response = await get(app, url);
      expect(response.statusCode, url).toBe(status);
      expect(response.json(), url).toEqual({ error: { code, message: expect.any(String) } });
    }
    expect((await get(app, '/v1/machines/pump-1/episodes')).json()).toEqual({ machine_id: 'pump-1', episodes: [], regime_changes: [] });

    const config = loadConfig({ DATA_DIR: env.dataDir, BOOTSTRAP_API_KEY: API_KEY, LOG_LEVEL: 'silent' });
    const bare = await buildApp(config, { store: sharedStoreView(env.store, { alerting: undefined }) });
    cleanups.push(() => bare.close());
    const unavailable = await get(bare, '/v1/machines/pump-1/episodes');
    expect(unavailable.statusCode).toBe(503);
    expect(unavailable.json()).toEqual({ error: { code: 'ServiceUnavailable', message: expect.any(String) } });

    // A machine deletion that cannot reach the alerting store answers 503 (a retry finishes it), never a 500.
    const down = { ...env.store.alerting!, listFeedback: () => Promise.reject(new Error('the store is down')) };
    const failing = await buildApp(config, { store: sharedStoreView(env.store, { alerting: down }) });
    cleanups.push(() => failing.close());
    const deletion = await failing.inject({ method: 'DELETE', url: '/v1/machines/pump-1', headers: { 'x-service-key': API_KEY } });
    expect(deletion.statusCode).toBe(503);
    expect(deletion.json()).toEqual({ error: { code: 'ServiceUnavailable', message: "The machine's feedback and alerts could not be deleted right now. Retry shortly." } });
  });
});
