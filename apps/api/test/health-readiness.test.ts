// /readyz with the scale-out dependencies (Kafka, the ClickHouse results, Redis) given as checks:
// ready only when every one answers, otherwise 503 naming the first failing one (the store first,
// then the checks in their order), with the error's code and never its message.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StreamingError, type DependencyCheck } from '@adp/streaming';
import { streamingEnvironment, type StreamingEnvironment } from './streaming-helpers.js';

const answers = (name: string): DependencyCheck => ({ name, ping: () => Promise.resolve() });
const fails = (name: string, error: unknown): DependencyCheck => ({ name, ping: () => Promise.reject(error) });

describe('GET /readyz with dependency checks', () => {
  let env: StreamingEnvironment;
  beforeEach(async () => {
    env = await streamingEnvironment();
  });
  afterEach(async () => {
    await env.cleanup();
  });

  async function readiness(checks: readonly DependencyCheck[]) {
    const app = await env.start({}, { readiness: checks });
    const response = await app.inject({ method: 'GET', url: '/readyz' });
    return { statusCode: response.statusCode, body: response.json() as unknown };
  }

  it('is ready when the store and every check answer', async () => {
    expect(await readiness([answers('kafka'), answers('clickhouse results'), answers('redis')])).toEqual({
      statusCode: 200,
      body: { status: 'ready' },
    });
  });

  it('names the failing dependency with its error code', async () => {
    const down = new StreamingError('KAFKA_UNAVAILABLE', 'Kafka at kafka.internal:9092 refused');
    expect(await readiness([fails('kafka', down), answers('redis')])).toEqual({
      statusCode: 503,
      body: { status: 'unavailable', reason: 'kafka: KAFKA_UNAVAILABLE' },
    });
    const redis = new StreamingError('REDIS_UNAVAILABLE', 'Redis for notifications is not connected');
    expect((await readiness([answers('kafka'), answers('clickhouse results'), fails('redis', redis)])).body).toEqual({
      status: 'unavailable',
      reason: 'redis: REDIS_UNAVAILABLE',
    });
  });

  it('names the first failing dependency in order, the store before the checks', async () => {
    const results = new StreamingError('CLICKHOUSE_UNAVAILABLE', 'ClickHouse did not answer');
    const redis = new StreamingError('REDIS_UNAVAILABLE', 'down');
    expect((await readiness([answers('kafka'), fails('clickhouse results', results), fails('redis', redis)])).body).toEqual({
      status: 'unavailable',
      reason: 'clickhouse results: CLICKHOUSE_UNAVAILABLE',
    });

    const app = await env.start({}, { readiness: [fails('kafka', new StreamingError('KAFKA_UNAVAILABLE', 'down'))] });
    await env.store.close();
    const response = await app.inject({ method: 'GET', url: '/readyz' });
    expect(response.statusCode).toBe(503);
    expect(response.json()).toEqual({ status: 'unavailable', reason: 'store: STORE_CLOSED' });
  });

  it('never shows an uncoded error message (it may carry an address or credentials)', async () => {
    const leaky = new Error('connect ECONNREFUSED redis://admin:hunter2@10.0.0.5:6379');
    const { statusCode, body } = await readiness([fails('redis', leaky)]);
    expect(statusCode).toBe(503);
    expect(body).toEqual({ status: 'unavailable', reason: 'redis: failed' });
  });

  it('counts a check that throws instead of rejecting as failed, not as a server error', async () => {
    const throwing: DependencyCheck = {
      name: 'kafka',
      ping: () => {
        throw new StreamingError('STREAMING_CLOSED', 'the Kafka bus is closed');
      },
    };
    expect(await readiness([throwing])).toEqual({ statusCode: 503, body: { status: 'unavailable', reason: 'kafka: STREAMING_CLOSED' } });
  });

  it('counts a check that does not answer within the probe timeout as failed', async () => {
    const silent: DependencyCheck = { name: 'clickhouse results', ping: () => new Promise<void>(() => undefined) };
    expect(await readiness([answers('kafka'), silent])).toEqual({
      statusCode: 503,
      body: { status: 'unavailable', reason: 'clickhouse results: no answer within 2000 ms' },
    });
  });

  it('stays ready without checks (the embedded pieces run in this process)', async () => {
    expect(await readiness([])).toEqual({ statusCode: 200, body: { status: 'ready' } });
  });
});
