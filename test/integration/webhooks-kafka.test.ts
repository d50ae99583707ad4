// Webhooks on the scale-out configuration: telemetry on Kafka, the worker (in this process) judges
// it and raises the episode's alerts on a Kafka alerts topic, the dispatcher consumes them and
// delivers to a receiver this test runs on 127.0.0.1, signed so the Standard Webhooks library
// verifies them; targets and deliveries live in ClickHouse. A delivery held when the platform stops
// is delivered after the restart, with the same webhook-id. Each run owns its topics, consumer
// group, database and Redis prefix.
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { loadWorkerConfig } from '@adp/stream-worker';
import { removeScaleOut } from '@adp/stream-worker/testing';
import { loadConfig } from '../../apps/api/src/config.js';
import { openPlatform, type Platform } from '../../apps/api/src/platform.js';
import { API_KEY, constantEnergyModel, eventually, get, post } from '../../apps/api/test/streaming-helpers.js';
import { allServersGate, isolatedName } from './servers.js';

const servers = await allServersGate('webhooks on Kafka, ClickHouse and Redis');

describe.skipIf(!servers.run)(servers.title, () => {
  const run = isolatedName('it_webhooks');
  const names = { topic: `${run}.telemetry`, deadLetters: `${run}.dead`, alerts: `${run}.alerts`, group: `${run}_workers`, database: run, prefix: `${run}:` };
  const received: { headers: Record<string, string>; body: string }[] = [];
  /** While false the receiver holds every request unanswered (a delivery in flight). */
  let answering = true;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers as Record<string, string>, body });
      if (answering) res.writeHead(204).end();
    });
  });
  let platform: Platform | undefined;
  let dataDir: string | undefined;

  afterAll(async () => {
    await platform?.close();
    await new Promise((resolve) => server.close(resolve));
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    await removeScaleOut(servers.urls, { topics: [names.topic, names.deadLetters, names.alerts], database: names.database, redisKeyPrefix: names.prefix });
  });

  const env = (): Record<string, string> => ({
    DATA_DIR: dataDir ?? os.tmpdir(),
    BOOTSTRAP_API_KEY: API_KEY,
    LOG_LEVEL: 'silent',
    KAFKA_BROKERS: servers.urls.kafkaBrokers,
    CLICKHOUSE_URL: servers.urls.clickhouseUrl,
    CLICKHOUSE_DATABASE: names.database,
    REDIS_URL: servers.urls.redisUrl,
    REDIS_KEY_PREFIX: names.prefix,
    REDIS_CHANNEL_PREFIX: names.prefix,
    TELEMETRY_TOPIC: names.topic,
    DEAD_LETTER_TOPIC: names.deadLetters,
    ALERTS_TOPIC: names.alerts,
    WORKER_GROUP_ID: names.group,
    TELEMETRY_PARTITIONS: '3',
    EMBEDDED_WORKER: 'true',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WORKER_EPISODE_QUIET_POINTS: '5',
  });
  const open = (): Promise<Platform> => openPlatform(loadConfig(env()), { model: constantEnergyModel(1), worker: loadWorkerConfig(env()) });
  const telemetry = (machineId: string) => ({
    machine_id: machineId,
    points: Array.from({ length: 300 }, (_, i) => ({
      timestamp: new Date(Date.UTC(2025, 5, 1, 10, i)).toISOString(),
      value: 50 + 5 * Math.sin((2 * Math.PI * i) / 60) + ((i * 7919) % 13) / 26 + (i === 250 ? 15 : 0),
    })),
  });

  it('delivers a fault episode opened and closed once each, signed, through Kafka', async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-it-webhooks-'));
    platform = await open();
    const app = platform.app;
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
    const created = await post(app, '/v1/webhooks', { url, events: ['episode.opened', 'episode.closed'] });
    expect(created.statusCode, created.body).toBe(201);
    const { secret, webhook_id } = created.json<{ secret: string; webhook_id: string }>();

    const spikeAt = new Date(Date.UTC(2025, 5, 1, 10, 250)).toISOString();
    expect((await post(app, '/v1/telemetry', telemetry('pump-17'))).statusCode).toBe(202);

    const verifier = new Webhook(secret);
    const spike = (): { type: string }[] =>
      received
        .map((r) => verifier.verify(r.body, r.headers) as { type: string; data: { episode: { started_at: string } } })
        .filter((p) => p.data.episode.started_at === spikeAt);
    await eventually(async () => spike().length >= 2, 90_000);
    expect(spike().map((p) => p.type)).toEqual(['episode.opened', 'episode.closed']);
    const ids = received.map((r) => r.headers['webhook-id']);
    expect(new Set(ids).size).toBe(ids.length);
    await eventually(async () => {
      const log = (await get(app, `/v1/webhooks/${webhook_id}/deliveries`)).json<{ deliveries: { status: string }[] }>();
      return log.deliveries.length === received.length && log.deliveries.every((d) => d.status === 'delivered');
    }, 30_000);
  });

  it('a delivery held when the platform stops is delivered after the restart, with the same webhook-id', async () => {
    answering = false;
    const before = received.length;
    expect((await post(platform!.app, '/v1/telemetry', telemetry('pump-18'))).statusCode).toBe(202);
    await eventually(async () => received.length > before, 90_000);
    const heldId = received[before]!.headers['webhook-id'];
    await platform!.close();
    answering = true;
    platform = await open();
    await eventually(async () => received.filter((r) => r.headers['webhook-id'] === heldId).length >= 2, 90_000);
    const again = received.filter((r) => r.headers['webhook-id'] === heldId).at(-1)!;
    expect(JSON.parse(again.body)).toMatchObject({ data: { machine_id: 'pump-18' } });
  });
});
