// POST /v1/telemetry's acceptance and its usage record succeed or fail together, in both failure
// directions, with fakes of our own ports (the bus producer and the store's recordUsage):
//   - the publish fails: 503, nothing published, nothing metered; the retry publishes and meters once;
//   - the usage write fails after the publish: 503, and the retry of the same body meters the call
//     without publishing its points a second time.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { Store } from '@adp/store';
import type { BusProducer, OutgoingMessage } from '@adp/streaming';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { PendingUsage, telemetryBatchId } from '../src/telemetry/plugin.js';
import { API_KEY, get, post, streamingEnvironment, type StreamingEnvironment } from './streaming-helpers.js';

/** A producer that refuses the next `failures` sends and records the others. */
function flakyProducer() {
  const sent: OutgoingMessage[][] = [];
  const state = { failures: 0 };
  const producer: BusProducer = {
    send(_topic, messages) {
      if (state.failures > 0) {
        state.failures--;
        return Promise.reject(new Error('disk full'));
      }
      sent.push([...messages]);
      return Promise.resolve();
    },
    close: () => Promise.resolve(),
  };
  return { sent, state, bus: { producer: () => Promise.resolve(producer) } };
}

/** The environment's store whose recordUsage refuses the next `failures` calls; close() left to the environment. */
function flakyUsageStore(store: Store) {
  const state = { failures: 0, recorded: 0 };
  const view = new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'close') return () => Promise.resolve();
      if (property === 'recordUsage') {
        return (orgId: string, endpoint: string, points: number) => {
          if (state.failures > 0) {
            state.failures--;
            return Promise.reject(new Error('platform store unavailable'));
          }
          state.recorded++;
          return target.recordUsage(orgId, endpoint, points);
        };
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { state, store: view };
}

const body = (first = 0) => ({
  machine_id: 'pump-1',
  points: [0, 1, 2].map((minute) => ({ timestamp: new Date(Date.UTC(2024, 0, 1, 0, first + minute)).toISOString(), value: minute })),
});

async function telemetryUsage(app: FastifyInstance): Promise<{ points: number; calls: number }> {
  const usage = (await get(app, '/v1/usage')).json() as { endpoint: string; total_points: number; call_count: number }[];
  const entry = usage.find((row) => row.endpoint === 'telemetry');
  return { points: entry?.total_points ?? 0, calls: entry?.call_count ?? 0 };
}

describe('POST /v1/telemetry: acceptance and usage together', () => {
  let env: StreamingEnvironment;
  let app: FastifyInstance;
  let producer: ReturnType<typeof flakyProducer>;
  let usage: ReturnType<typeof flakyUsageStore>;

  beforeEach(async () => {
    env = await streamingEnvironment();
    producer = flakyProducer();
    usage = flakyUsageStore(env.store);
    const config = loadConfig({ DATA_DIR: env.dataDir, BOOTSTRAP_API_KEY: API_KEY, LOG_LEVEL: 'silent' });
    app = await buildApp(config, { store: usage.store, bus: producer.bus });
  });
  afterEach(async () => {
    await app.close();
    await env.cleanup();
  });

  it('a failed publish answers 503 and meters nothing; the retry publishes and meters once', async () => {
    producer.state.failures = 1;
    const refused = await post(app, '/v1/telemetry', body());
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.json()).toMatchObject({ error: { code: 'ServiceUnavailable' } });
    expect(producer.sent).toHaveLength(0);
    expect(usage.state.recorded).toBe(0);
    expect(await telemetryUsage(app)).toEqual({ points: 0, calls: 0 });

    const retried = await post(app, '/v1/telemetry', body());
    expect(retried.statusCode).toBe(202);
    expect(producer.sent).toHaveLength(1);
    expect(await telemetryUsage(app)).toEqual({ points: 3, calls: 1 });
  });

  it('a failed usage write after the publish answers 503; the retry of the same body meters it without publishing again', async () => {
    usage.state.failures = 2;
    const first = await post(app, '/v1/telemetry', body());
    expect(first.statusCode).toBe(503);
    expect(first.headers['retry-after']).toBe('1');
    expect(first.json()).toEqual({
      error: {
        code: 'ServiceUnavailable',
        message:
          'The points were queued but their usage could not be recorded; retry the same request (it records the usage without queuing the points again).',
      },
    });
    expect(producer.sent).toHaveLength(1);
    expect(await telemetryUsage(app)).toEqual({ points: 0, calls: 0 });

    // The store is still down: the retry fails the same way, and still publishes nothing.
    expect((await post(app, '/v1/telemetry', body())).statusCode).toBe(503);
    expect(producer.sent).toHaveLength(1);

    const retried = await post(app, '/v1/telemetry', body());
    expect(retried.statusCode).toBe(202);
    expect(retried.json()).toEqual({ accepted: 3, machine_id: 'pump-1' });
    expect(producer.sent).toHaveLength(1);
    expect(await telemetryUsage(app)).toEqual({ points: 3, calls: 1 });

    // Once metered, the same body again is a new call: published and metered again.
    expect((await post(app, '/v1/telemetry', body())).statusCode).toBe(202);
    expect(producer.sent).toHaveLength(2);
    expect(await telemetryUsage(app)).toEqual({ points: 6, calls: 2 });
  });

  it('a different body after a failed usage write is published on its own', async () => {
    usage.state.failures = 1;
    expect((await post(app, '/v1/telemetry', body(0))).statusCode).toBe(503);
    expect((await post(app, '/v1/telemetry', body(10))).statusCode).toBe(202);
    expect(producer.sent).toHaveLength(2);
    expect(await telemetryUsage(app)).toEqual({ points: 3, calls: 1 });
  });
});

describe('PendingUsage and telemetryBatchId', () => {
  it('remembers at most `max` ids for `ttlMs`, oldest dropped first', () => {
    let now = 0;
    const pending = new PendingUsage(() => now, 2, 1000);
    pending.add('a');
    pending.add('b');
    pending.add('c');
    expect(pending.size).toBe(2);
    expect(pending.take('a')).toBe(false);
    expect(pending.take('b')).toBe(true);
    expect(pending.take('b')).toBe(false);
    now = 1000;
    expect(pending.take('c')).toBe(false);
    expect(pending.size).toBe(0);
  });

  it('gives the same id to the same organization and batch, and another to anything else', () => {
    const values = [Buffer.from('ab'), Buffer.from('c')];
    expect(telemetryBatchId('org_a', values)).toBe(telemetryBatchId('org_a', [Buffer.from('ab'), Buffer.from('c')]));
    expect(telemetryBatchId('org_b', values)).not.toBe(telemetryBatchId('org_a', values));
    expect(telemetryBatchId('org_a', [Buffer.from('a'), Buffer.from('bc')])).not.toBe(telemetryBatchId('org_a', values));
  });
});
