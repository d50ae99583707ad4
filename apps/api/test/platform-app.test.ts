import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreError, openEmbeddedStore, type Store } from '@adp/store';
import { buildApp } from '../src/app.js';
import { firstKey, testEnvironment, type TestEnvironment } from './platform-helpers.js';

/** `real` with some methods replaced. */
function storeWith(real: Store, overrides: Partial<Store>): Store {
  return new Proxy(real, {
    get(target, property, receiver) {
      if (property in overrides) return overrides[property as keyof Store];
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const unavailable = (): Promise<never> => Promise.reject(new StoreError('STORE_QUERY_FAILED', 'test', 'disk on fire'));

describe('platform routes', () => {
  let env: TestEnvironment;
  beforeEach(async () => {
    env = await testEnvironment();
  });
  afterEach(async () => {
    await env.cleanup();
  });

  it('answers /healthz without a key', async () => {
    const app = await env.start();
    const response = await app.inject({ method: 'GET', url: '/healthz' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'ok' });
  });

  it('answers /readyz without a key while the store answers', async () => {
    const app = await env.start();
    const response = await app.inject({ method: 'GET', url: '/readyz' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'ready' });
  });

  it('answers /readyz 503 once the store is closed', async () => {
    const app = await env.start();
    await app.store.close();
    const response = await app.inject({ method: 'GET', url: '/readyz' });
    expect(response.statusCode).toBe(503);
    expect(response.json()).toEqual({ status: 'unavailable', reason: 'store: STORE_CLOSED' });
    // Liveness does not depend on the store.
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });

  it('answers /readyz 503 when the store fails', async () => {
    const real = await openEmbeddedStore({ dataDir: env.dataDir });
    const app = await env.start({}, { store: storeWith(real, { ping: unavailable }) });
    const response = await app.inject({ method: 'GET', url: '/readyz' });
    expect(response.statusCode).toBe(503);
    expect(response.json()).toMatchObject({ status: 'unavailable' });
  });

  it('serves a valid OpenAPI 3 document without a key, listing the routes', async () => {
    const app = await env.start();
    const response = await app.inject({ method: 'GET', url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const document = JSON.parse(response.body) as {
      openapi: string;
      info: { title: string; version: string };
      paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }>; security?: unknown[] }>>;
      components: { securitySchemes: Record<string, unknown> };
      security: unknown[];
    };
    expect(document.openapi).toMatch(/^3\.\d+\.\d+$/);
    expect(document.info.title).toBeTruthy();
    expect(document.info.version).toBeTruthy();
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(['/healthz', '/readyz', '/openapi.json', '/v1/usage', '/v1/keys']));
    expect(Object.keys(document.components.securitySchemes).sort()).toEqual(['adminToken', 'bearerKey', 'serviceKey', 'subscriptionKey']);
    expect(document.paths['/healthz']?.['get']?.security).toEqual([]);
    expect(document.paths['/v1/usage']?.['get']?.responses).toHaveProperty('401');
    // A route that validates its query, params or body documents the 400 it answers in our shape;
    // a route that takes neither does not.
    expect(document.paths['/v1/usage']?.['get']?.responses).toHaveProperty('400');
    expect(document.paths['/v1/keys/{key_id}']?.['delete']?.responses).toHaveProperty('400');
    expect(document.paths['/v1/keys']?.['get']?.responses).not.toHaveProperty('400');

    // Every operation has responses, and every response schema is valid JSON Schema 2020-12
    // (the dialect of OpenAPI 3.1).
    const ajv = new Ajv2020({ strict: false });
    for (const [route, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        expect(Object.keys(operation.responses), `${method} ${route}`).not.toHaveLength(0);
        for (const answer of Object.values(operation.responses)) {
          for (const media of Object.values(answer.content ?? {})) expect(() => ajv.compile(media.schema)).not.toThrow();
        }
      }
    }
  });

  it('answers unknown routes with a JSON 404, and a JSON 401 without a key', async () => {
    const app = await env.start();
    const found = await app.inject({ method: 'GET', url: '/nope?x=1', headers: { 'x-service-key': firstKey(app) } });
    expect(found.statusCode).toBe(404);
    expect(found.headers['content-type']).toMatch(/^application\/json/);
    expect(found.json()).toEqual({ error: { code: 'NotFound', message: 'Route GET /nope not found' } });

    const anonymous = await app.inject({ method: 'POST', url: '/nope' });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.headers['content-type']).toMatch(/^application\/json/);
  });

  it('reports store failures behind a route as a retriable JSON 503', async () => {
    const real = await openEmbeddedStore({ dataDir: env.dataDir });
    const app = await env.start({}, { store: storeWith(real, { usageFor: unavailable }) });
    const response = await app.inject({ method: 'GET', url: '/v1/usage', headers: { 'x-service-key': firstKey(app) } });
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.json()).toEqual({
      error: { code: 'ServiceUnavailable', message: 'The service cannot reach its store right now. Retry shortly.' },
    });
  });

  it('shows the caller its usage: an array of one record per endpoint; the totals at /v1/usage/summary', async () => {
    const app = await env.start();
    const key = firstKey(app, 'live');
    await app.store.recordUsage(app.bootstrap.organizationId, 'entire/detect', 100);
    const records = [
      { endpoint: 'entire/detect', total_points: 100, call_count: 1 },
      { endpoint: 'last/detect', total_points: 0, call_count: 0 },
      { endpoint: 'changepoint/detect', total_points: 0, call_count: 0 },
      { endpoint: 'v1/detect', total_points: 0, call_count: 0 },
      { endpoint: 'v1/baseline', total_points: 0, call_count: 0 },
      { endpoint: 'telemetry', total_points: 0, call_count: 0 },
      { endpoint: 'jobs', total_points: 0, call_count: 0 },
    ];
    const response = await app.inject({ method: 'GET', url: '/v1/usage', headers: { 'ocp-apim-subscription-key': key } });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual(records);
    const summary = await app.inject({ method: 'GET', url: '/v1/usage/summary', headers: { 'ocp-apim-subscription-key': key } });
    expect(summary.statusCode).toBe(200);
    expect(summary.json()).toEqual({
      org_id: app.bootstrap.organizationId,
      key_id: app.bootstrap.createdKeys.find((issued) => issued.kind === 'live')?.keyId,
      key_kind: 'live',
      total_points: 100,
      call_count: 1,
      usage: records,
      // The first-start organization is on the paid plan: no quota.
      plan: 'paid',
      monthly_point_quota: null,
      points_used_this_month: 100,
      points_remaining: null,
      quota_renews_at: null,
    });
    expect((await app.inject({ method: 'GET', url: '/v1/usage/summary' })).statusCode).toBe(401);
  });

  it('meters vendor detections for the caller and guards them with a key', async () => {
    const app = await env.start();
    const key = firstKey(app, 'live');
    const series = Array.from({ length: 24 }, (_, i) => ({
      timestamp: new Date(Date.UTC(2025, 0, 1, i)).toISOString(),
      value: 10 + (i % 3),
    }));
    const detect = (operation: string, headers: Record<string, string>) =>
      app.inject({
        method: 'POST',
        url: `/anomalydetector/v1.1/timeseries/${operation}/detect`,
        headers,
        payload: { series, granularity: 'hourly' },
      });

    const anonymous = await detect('entire', {});
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json()).toEqual({ error: { code: '401', message: expect.stringContaining('missing subscription key') } });

    for (const operation of ['entire', 'last', 'changepoint']) {
      expect((await detect(operation, { 'ocp-apim-subscription-key': key })).statusCode).toBe(200);
    }
    expect(await app.store.usageFor(app.bootstrap.organizationId)).toEqual({
      orgId: app.bootstrap.organizationId,
      points: 72,
      calls: 3,
      byEndpoint: [
        { endpoint: 'changepoint/detect', points: 24, calls: 1 },
        { endpoint: 'entire/detect', points: 24, calls: 1 },
        { endpoint: 'last/detect', points: 24, calls: 1 },
      ],
    });
  });

  it('sets the app-wide body limit from the config', async () => {
    const app = await env.start({ BODY_LIMIT_BYTES: '2048' });
    expect(app.initialConfig.bodyLimit).toBe(2048);
  });

  it('closes the store when the app closes', async () => {
    const app = await buildApp(env.config());
    await app.close();
    await expect(app.store.ping()).rejects.toMatchObject({ code: 'STORE_CLOSED' });
  });

  it('closes the store when building fails', async () => {
    const real = await openEmbeddedStore({ dataDir: env.dataDir });
    let closed = false;
    const broken = storeWith(real, {
      ensureDefaultOrganization: unavailable,
      close: async () => {
        closed = true;
        await real.close();
      },
    });
    await expect(buildApp(env.config(), { store: broken })).rejects.toMatchObject({ code: 'BootstrapFailed' });
    expect(closed).toBe(true);
  });
});
