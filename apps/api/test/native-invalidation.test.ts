// Baseline invalidation across replicas: a baseline written, replaced or deleted on one replica is
// published on BASELINE_CHANGED_CHANNEL, and every other replica drops its cached predictor, so
// its next detection uses the new baseline. The fake model's energies are all 1, so a detection's
// z-scores tell which baseline statistics the replica used.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { BASELINE_CHANGED_CHANNEL, createMemoryNotifier, type Notifier } from '@adp/streaming';
import { parseBaselineChanged } from '../src/native/baseline-changes.js';
import { API_KEY, constantEnergyModel, eventually, get, post, streamingEnvironment, type StreamingEnvironment } from './streaming-helpers.js';

const SERIES = Array.from({ length: 40 }, (_, index) => ({ value: 10 + (index % 5) }));

/** 100 energies with the given mean and standard deviation 0.5 (alternating mean ± 0.5). */
function energies(mean: number): number[] {
  return Array.from({ length: 100 }, (_, index) => mean + (index % 2 === 0 ? 0.5 : -0.5));
}

async function detect(app: FastifyInstance): Promise<{ z_scores: number[]; baseline_id: string | null }> {
  const response = await post(app, '/v1/detect', { machine_id: 'pump-1', series: SERIES });
  expect(response.statusCode).toBe(200);
  return response.json();
}

async function zScoreOf(app: FastifyInstance): Promise<number | undefined> {
  return (await detect(app)).z_scores[0];
}

describe('baseline invalidation between replicas', () => {
  let env: StreamingEnvironment;
  let notifier: Notifier;
  let first: FastifyInstance;
  let second: FastifyInstance;
  let messages: string[];

  beforeEach(async () => {
    env = await streamingEnvironment();
    notifier = createMemoryNotifier();
    messages = [];
    await notifier.subscribe(BASELINE_CHANGED_CHANNEL, (message) => messages.push(message));
    first = await env.start({}, { notifier, model: constantEnergyModel(1) });
    second = await env.start({}, { notifier, model: constantEnergyModel(1) });
  });
  afterEach(async () => {
    await env.cleanup();
    await notifier.close();
  });

  it("drops the other replica's cached predictor on create, update and delete", async () => {
    expect((await post(first, '/v1/baseline', { machine_id: 'pump-1', energies: energies(3) })).statusCode).toBe(200);
    // The second replica loads and caches the predictor: z = (1 - 3) / 0.5.
    expect(await zScoreOf(second)).toBeCloseTo(-4, 6);

    expect((await post(first, '/v1/baseline', { machine_id: 'pump-1', energies: energies(2) })).statusCode).toBe(200);
    await eventually(async () => Math.abs(((await zScoreOf(second)) ?? 0) - -2) < 1e-6);

    const deleted = await first.inject({ method: 'DELETE', url: '/v1/machines/pump-1', headers: { 'x-service-key': API_KEY } });
    expect(deleted.statusCode).toBe(200);
    // Without a baseline the detection says so.
    await eventually(async () => (await detect(second)).baseline_id === null);

    const orgId = first.bootstrap.organizationId;
    expect(messages.map((message) => parseBaselineChanged(message))).toEqual([
      { orgId, machineId: 'pump-1', origin: expect.any(String) },
      { orgId, machineId: 'pump-1', origin: expect.any(String) },
      { orgId, machineId: 'pump-1', origin: expect.any(String) },
    ]);
  });

  it('keeps a stale predictor without a notifier (the control for the test above)', async () => {
    const isolated = await env.start({}, { model: constantEnergyModel(1) });
    expect((await post(first, '/v1/baseline', { machine_id: 'pump-1', energies: energies(3) })).statusCode).toBe(200);
    expect(await zScoreOf(isolated)).toBeCloseTo(-4, 6);
    expect((await post(first, '/v1/baseline', { machine_id: 'pump-1', energies: energies(2) })).statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await zScoreOf(isolated)).toBeCloseTo(-4, 6);
  });

  it('ignores malformed messages and keeps serving', async () => {
    await notifier.publish(BASELINE_CHANGED_CHANNEL, 'not json');
    await notifier.publish(BASELINE_CHANGED_CHANNEL, JSON.stringify({ orgId: 7 }));
    expect((await get(second, '/v1/machines')).statusCode).toBe(200);
    expect(parseBaselineChanged('{"orgId":"o","machineId":"m"}')).toEqual({ orgId: 'o', machineId: 'm' });
    expect(parseBaselineChanged('[]')).toBeNull();
  });
});
