import type { FastifyRequest } from 'fastify';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openEmbeddedStore, type Store } from '@adp/store';
import { meterDetections } from '../src/tenancy/metering.js';
import { testEnvironment, type TestEnvironment } from './platform-helpers.js';

const logError = vi.fn();
const requestFor = (orgId: string | null, keyKind: 'live' | 'test' = 'test', quotaCounted = false): FastifyRequest =>
  ({ auth: orgId === null ? null : { orgId, keyId: 'key_1', keyKind }, quotaCounted, log: { error: logError } }) as unknown as FastifyRequest;

describe('meterDetections', () => {
  let env: TestEnvironment;
  let store: Store;
  beforeEach(async () => {
    env = await testEnvironment();
    store = await openEmbeddedStore({ dataDir: env.dataDir });
  });
  afterEach(async () => {
    await store.close();
    await env.cleanup();
  });

  it("adds each detection to the caller's organization", async () => {
    const { onDetected, drain } = meterDetections(store);
    await Promise.all(Array.from({ length: 50 }, () => onDetected(requestFor('org_a'), 'entire/detect', 8640)));
    await onDetected(requestFor('org_b'), 'last/detect', 29);
    await drain();
    expect(await store.usageFor('org_a')).toMatchObject({ calls: 50, points: 50 * 8640 });
    expect(await store.usageFor('org_b')).toMatchObject({ calls: 1, points: 29 });
  });

  it("records the caller's key kind with the usage", async () => {
    const { onDetected, drain } = meterDetections(store);
    await onDetected(requestFor('org_a', 'live'), 'entire/detect', 10);
    await onDetected(requestFor('org_a', 'test'), 'entire/detect', 3);
    await drain();
    expect(await store.usageFor('org_a', { keyKind: 'live' })).toMatchObject({ calls: 1, points: 10 });
    expect(await store.usageFor('org_a', { keyKind: 'test' })).toMatchObject({ calls: 1, points: 3 });
  });

  it('counts a call a quota counts, or a live call billed per hour, before answering it', async () => {
    // Without drain(): each call resolves only once its count is in the store.
    const { onDetected } = meterDetections(store);
    await onDetected(requestFor('org_a', 'live', true), 'entire/detect', 10);
    expect(await store.usageFor('org_a')).toMatchObject({ calls: 1, points: 10 });
    const billed = meterDetections(store, { nowMs: () => Date.parse('2026-03-05T10:00:00Z') });
    await billed.onDetected(requestFor('org_b', 'live'), 'last/detect', 7);
    expect(await store.usageFor('org_b')).toMatchObject({ calls: 1, points: 7 });
    await store.close();
    await expect(onDetected(requestFor('org_a', 'live', true), 'entire/detect', 10)).rejects.toMatchObject({ code: 'ServiceUnavailable' });
  });

  it('refuses to serve a detection it cannot count once a count has failed', async () => {
    const { onDetected, drain } = meterDetections(store);
    await store.close();
    logError.mockClear();
    // Write-behind: the call whose count was already queued when the store failed is answered...
    await expect(onDetected(requestFor('org_a'), 'entire/detect', 12)).resolves.toBeUndefined();
    await drain();
    expect(logError).toHaveBeenCalledOnce();
    expect(logError.mock.calls[0]?.[0]).toMatchObject({ endpoint: 'entire/detect', points: 12 });
    // ...and from then on each call waits for its own count and is refused when it fails.
    for (let i = 0; i < 2; i++) {
      await expect(onDetected(requestFor('org_a'), 'entire/detect', 12)).rejects.toMatchObject({
        code: 'ServiceUnavailable',
        statusCode: 503,
        retriable: true,
      });
    }
    await expect(onDetected(requestFor(null), 'entire/detect', 12)).rejects.toMatchObject({ code: 'InternalError' });
  });

  it('goes back to write-behind after the first count that succeeds', async () => {
    let failing = true;
    // The real store, with a failure switched on and off in front of its usage writes.
    const flaky = new Proxy(store, {
      get(target, property, receiver) {
        if (property !== 'recordUsage') return Reflect.get(target, property, receiver) as unknown;
        return (...args: Parameters<Store['recordUsage']>) => (failing ? Promise.reject(new Error('disk full')) : target.recordUsage(...args));
      },
    });
    const { onDetected, drain } = meterDetections(flaky);
    await onDetected(requestFor('org_a'), 'last/detect', 100);
    await drain();
    await expect(onDetected(requestFor('org_a'), 'last/detect', 200)).rejects.toMatchObject({ code: 'ServiceUnavailable' });
    failing = false;
    await onDetected(requestFor('org_a'), 'last/detect', 300);
    // Counted before it was answered: the store has it now.
    expect(await store.usageFor('org_a')).toMatchObject({ calls: 1, points: 300 });
    await onDetected(requestFor('org_a'), 'last/detect', 400);
    await drain();
    expect(await store.usageFor('org_a')).toMatchObject({ calls: 2, points: 700 });
  });
});
