import type { FastifyRequest } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEmbeddedStore, type Store } from '@adp/store';
import { meterDetections } from '../src/tenancy/metering.js';
import { testEnvironment, type TestEnvironment } from './platform-helpers.js';

const requestFor = (orgId: string | null, keyKind: 'live' | 'test' = 'test'): FastifyRequest =>
  ({ auth: orgId === null ? null : { orgId, keyId: 'key_1', keyKind } }) as unknown as FastifyRequest;

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
    const onDetected = meterDetections(store);
    await Promise.all(Array.from({ length: 50 }, () => onDetected(requestFor('org_a'), 'entire/detect', 8640)));
    await onDetected(requestFor('org_b'), 'last/detect', 29);
    expect(await store.usageFor('org_a')).toMatchObject({ calls: 50, points: 50 * 8640 });
    expect(await store.usageFor('org_b')).toMatchObject({ calls: 1, points: 29 });
  });

  it("records the caller's key kind with the usage", async () => {
    const onDetected = meterDetections(store);
    await onDetected(requestFor('org_a', 'live'), 'entire/detect', 10);
    await onDetected(requestFor('org_a', 'test'), 'entire/detect', 3);
    expect(await store.usageFor('org_a', { keyKind: 'live' })).toMatchObject({ calls: 1, points: 10 });
    expect(await store.usageFor('org_a', { keyKind: 'test' })).toMatchObject({ calls: 1, points: 3 });
  });

  it('refuses to serve a detection it cannot count', async () => {
    const onDetected = meterDetections(store);
    await store.close();
    await expect(onDetected(requestFor('org_a'), 'entire/detect', 12)).rejects.toMatchObject({
      code: 'ServiceUnavailable',
      statusCode: 503,
      retriable: true,
    });
    await expect(onDetected(requestFor(null), 'entire/detect', 12)).rejects.toMatchObject({ code: 'InternalError' });
  });
});
