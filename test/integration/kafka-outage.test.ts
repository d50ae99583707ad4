// A Kafka outage survived without restarting a process. The test runs a broker of its own
// (`infra/kafka.sh` on two free ports and a state directory of its own, from the jars the shared
// broker uses), so stopping it touches no other test. Against it: the API with its embedded worker
// (openPlatform) and a second consumer straight on the bus. While the broker is down /readyz names
// Kafka, POST /v1/telemetry answers 503 and the consumer is rebuilt with backoff instead of dying;
// once the broker is back, without touching either process, /readyz is ready, POST answers 202
// and the points sent after the restart are judged and stored, each once.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafkaBus, isStreamingError, type Bus, type StreamingError } from '@adp/streaming';
import { loadWorkerConfig } from '@adp/stream-worker';
import { loadConfig } from '../../apps/api/src/config.js';
import { openPlatform, type Platform } from '../../apps/api/src/platform.js';
import { API_KEY, constantEnergyModel, get, post } from '../../apps/api/test/streaming-helpers.js';
import { gateTitle, isolatedName, serverGate } from './servers.js';

// The shared broker proves the jars and Java are installed; this file starts its own from them.
const gate = await serverGate('kafka');
const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../../', import.meta.url));
/** A broker start on a loaded machine takes 15-60 s (JVM start, KRaft election, probe). */
const BROKER_MS = 180_000;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

interface Broker {
  readonly address: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

async function throwawayBroker(stateDir: string): Promise<Broker> {
  const port = await freePort();
  const controllerPort = await freePort();
  const env = {
    ...process.env,
    KAFKA_PORT: String(port),
    KAFKA_CONTROLLER_PORT: String(controllerPort),
    ANOMALY_SERVERS_DIR: stateDir,
  };
  const script = (command: 'start' | 'stop') =>
    run('bash', [path.join(REPO, 'infra/kafka.sh'), command], { env, cwd: REPO, timeout: BROKER_MS }).then(() => undefined);
  return { address: `127.0.0.1:${port}`, start: () => script('start'), stop: () => script('stop') };
}

const POINTS_BEFORE = 20;
const POINTS_AFTER = 20;
const T0 = Date.UTC(2024, 0, 1);
const point = (index: number) => ({ timestamp: new Date(T0 + index * 60_000).toISOString(), value: 10 + (index % 5) });
const points = (from: number, count: number) => Array.from({ length: count }, (_, offset) => point(from + offset));

describe.skipIf(!gate.run)(gateTitle('a Kafka outage (a broker of its own, stopped and started again)', gate), () => {
  let stateDir: string;
  let dataDir: string;
  let broker: Broker;
  let platform: Platform | undefined;
  let bus: Bus | undefined;

  beforeAll(async () => {
    stateDir = await mkdtemp(path.join(os.tmpdir(), 'adp-it-kafka-outage-'));
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-it-kafka-outage-data-'));
    broker = await throwawayBroker(stateDir);
    await broker.start();
  }, BROKER_MS);

  afterAll(async () => {
    await platform?.close().catch(() => undefined);
    await bus?.close().catch(() => undefined);
    await broker?.stop().catch(() => undefined);
    await rm(stateDir, { recursive: true, force: true });
    await rm(dataDir, { recursive: true, force: true });
  }, BROKER_MS);

  it('keeps consuming and producing across a broker restart, and /readyz says when Kafka is gone', async () => {
    const names = isolatedName('it_outage');
    const topic = `${names}.telemetry`;
    const env = {
      DATA_DIR: dataDir,
      BOOTSTRAP_API_KEY: API_KEY,
      LOG_LEVEL: 'silent',
      KAFKA_BROKERS: broker.address,
      TELEMETRY_TOPIC: topic,
      DEAD_LETTER_TOPIC: `${names}.dead`,
      WORKER_GROUP_ID: `${names}_workers`,
      TELEMETRY_PARTITIONS: '3',
      EMBEDDED_WORKER: 'true',
    };
    platform = await openPlatform(loadConfig(env), { model: constantEnergyModel(1), worker: loadWorkerConfig(env) });
    const app = platform.app;

    // A second group straight on the bus, to see its consumer being rebuilt.
    const restarts: StreamingError[] = [];
    const seen = new Set<string>();
    bus = createKafkaBus({
      brokers: [broker.address],
      clientId: 'adp-it-outage',
      logLevel: 'nothing',
      log: () => undefined,
      onConsumerRestart: (error) => restarts.push(error),
    });
    const consumer = await bus.consumer({ groupId: `${names}_watcher`, topics: [topic] });
    await consumer.run(async (batch) => {
      for (const message of batch.messages) seen.add(`${message.partition}/${message.offset}`);
    });

    const ready = async () => (await app.inject({ method: 'GET', url: '/readyz' })).statusCode;
    const stored = async () => {
      const response = await get(app, '/v1/machines/pump-1/results?limit=1000');
      return response.statusCode === 200 ? (response.json() as { results: { timestamp: string }[] }).results : [];
    };

    expect(await ready()).toBe(200);
    expect((await post(app, '/v1/telemetry', { machine_id: 'pump-1', points: points(0, POINTS_BEFORE) })).statusCode).toBe(202);
    await expect.poll(async () => (await stored()).length, { timeout: 60_000, interval: 250 }).toBe(POINTS_BEFORE);
    await expect.poll(() => seen.size, { timeout: 60_000, interval: 250 }).toBeGreaterThan(0);

    await broker.stop();

    await expect.poll(ready, { timeout: 30_000, interval: 250 }).toBe(503);
    expect((await app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({
      status: 'unavailable',
      reason: 'kafka: KAFKA_UNAVAILABLE',
    });
    const refused = await post(app, '/v1/telemetry', { machine_id: 'pump-1', points: points(POINTS_BEFORE, 1) });
    expect(refused.statusCode).toBe(503);
    expect(refused.json()).toMatchObject({ error: { code: 'ServiceUnavailable' } });
    // kafkajs gives up on the lost broker; the bus rebuilds the consumer (and keeps trying).
    await expect.poll(() => restarts.length, { timeout: 120_000, interval: 250 }).toBeGreaterThan(0);
    expect(restarts.every((error) => isStreamingError(error) && error.code === 'KAFKA_UNAVAILABLE' && error.retriable)).toBe(true);

    await broker.start();

    await expect.poll(ready, { timeout: 60_000, interval: 250 }).toBe(200);
    // The first send may still meet the old connection: a client retries 503s.
    await expect
      .poll(async () => (await post(app, '/v1/telemetry', { machine_id: 'pump-1', points: points(POINTS_BEFORE, POINTS_AFTER) })).statusCode, {
        timeout: 60_000,
        interval: 500,
      })
      .toBe(202);
    const all = points(0, POINTS_BEFORE + POINTS_AFTER).map((p) => p.timestamp);
    await expect.poll(async () => (await stored()).map((row) => row.timestamp), { timeout: 120_000, interval: 500 }).toEqual(all);
    // The watcher resumed too: it sees messages at offsets written after the restart.
    const before = seen.size;
    expect((await post(app, '/v1/telemetry', { machine_id: 'pump-2', points: points(0, 3) })).statusCode).toBe(202);
    await expect.poll(() => seen.size, { timeout: 60_000, interval: 250 }).toBeGreaterThan(before);
  }, 600_000);
});
