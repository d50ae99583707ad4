// The vendor routes inside the real app: authentication first, then the vendor routes and their
// error shape, then usage metering in the embedded store.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { dailySeries, post } from './fixtures/vendor/harness.js';

const API_KEY = `svc_test_${'v'.repeat(16)}${'0123456789abcdef'}`;
const ENTIRE = '/anomalydetector/v1.1/timeseries/entire/detect';

let dataDir: string;
let app: FastifyInstance;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-vendor-'));
  app = await buildApp(loadConfig({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY: API_KEY, LOG_LEVEL: 'silent' }));
});
afterAll(async () => {
  await app?.close();
  await rm(dataDir, { recursive: true, force: true });
});

const withKey = { 'content-type': 'application/json; charset=utf-8', 'ocp-apim-subscription-key': API_KEY };
const body = { series: dailySeries(40), granularity: 'daily' };

describe('the vendor routes in the app', () => {
  it('need a key: 401 in the gateway shape, before any body or path check', async () => {
    expect(API_KEY).toHaveLength(9 + 32);
    const res = await post(app, ENTIRE, body);
    expect(res.statusCode).toBe(401);
    expect(res.headers['x-ms-error-code']).toBeUndefined();
    expect((res.json() as { error: { code: string } }).error.code).toBe('401');
    const unknown = await post(app, '/anomalydetector/v9/timeseries/entire/detect', 'not json', { 'content-type': 'text/plain' });
    expect(unknown.statusCode).toBe(401);
  });

  it('detect with a key, answer vendor errors in the vendor shape, and meter only successes', async () => {
    const ok = await post(app, ENTIRE, body, withKey);
    expect(ok.statusCode, ok.body).toBe(200);
    expect((ok.json() as { expectedValues: unknown[] }).expectedValues).toHaveLength(40);

    const last = await post(app, '/anomalydetector/v1.0/timeseries/last/detect', body, withKey);
    expect(last.statusCode, last.body).toBe(200);
    const changePoint = await post(app, '/anomalydetector/v1.0/timeseries/changePoint/detect', body, withKey);
    expect(changePoint.statusCode, changePoint.body).toBe(200);

    const invalid = await post(app, ENTIRE, { series: dailySeries(5) }, withKey);
    expect(invalid.statusCode).toBe(400);
    expect(invalid.headers['x-ms-error-code']).toBe('InvalidSeries');
    expect(invalid.json()).toEqual({ code: 'InvalidSeries', message: 'Series must contain at least 12 points' });

    const wrongType = await post(app, ENTIRE, body, { ...withKey, 'content-type': 'text/csv' });
    expect(wrongType.statusCode).toBe(415);
    expect(wrongType.json()).toMatchObject({ code: 'UnsupportedMediaType' });

    const notFound = await post(app, '/anomalydetector/v2.0/timeseries/entire/detect', body, withKey);
    expect(notFound.statusCode).toBe(404);
    expect(notFound.json()).toMatchObject({ code: 'NotFound' });

    const usage = await app.inject({ method: 'GET', url: '/v1/usage', headers: { 'ocp-apim-subscription-key': API_KEY } });
    expect(usage.statusCode, usage.body).toBe(200);
    expect(usage.json()).toEqual([
      { endpoint: 'entire/detect', total_points: 40, call_count: 1 },
      { endpoint: 'last/detect', total_points: 40, call_count: 1 },
      { endpoint: 'changepoint/detect', total_points: 40, call_count: 1 },
      { endpoint: 'v1/detect', total_points: 0, call_count: 0 },
      { endpoint: 'v1/baseline', total_points: 0, call_count: 0 },
      { endpoint: 'telemetry', total_points: 0, call_count: 0 },
      { endpoint: 'jobs', total_points: 0, call_count: 0 },
    ]);
  });

  it('are documented in the OpenAPI document with their response schemas', async () => {
    const res = await app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const paths = (res.json() as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> }).paths;
    for (const operation of ['entire', 'last', 'changepoint']) {
      const route = paths[`/anomalydetector/{version}/timeseries/${operation}/detect`]?.['post'];
      expect(route, operation).toBeDefined();
      expect(Object.keys(route!.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '404', '413', '415', '500']));
    }
    expect(Object.keys(paths).filter((p) => p.startsWith('/anomalydetector'))).toHaveLength(3);
  });

  it('document what the parser accepts: optional granularity everywhere, null as absent, timestamps with a granularity', async () => {
    type BodySchema = {
      required?: string[];
      properties: Record<string, { anyOf?: { type?: string }[] }>;
      if?: unknown;
      then?: unknown;
    };
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, { post: { requestBody: { content: Record<string, { schema: BodySchema }> } } }>;
    };
    for (const operation of ['entire', 'last', 'changepoint']) {
      const schema = doc.paths[`/anomalydetector/{version}/timeseries/${operation}/detect`]!.post.requestBody.content['application/json']!.schema;
      expect(schema.required, operation).toEqual(['series']);
      expect(schema.properties['granularity']?.anyOf?.map((s) => s.type)).toContain('null');
      expect(schema.properties['period']?.anyOf?.map((s) => s.type)).toContain('null');
      expect(schema.if).toBeDefined();
      expect(schema.then).toBeDefined();
    }
  });
});

describe("the seed's request contract on the vendor routes", () => {
  // Period 7 without noise: a detected period is 7, a non-seasonal model would report 0.
  const weekly = Array.from({ length: 56 }, (_, i) => ({
    timestamp: new Date(Date.UTC(2024, 0, 1) + i * 86_400_000).toISOString(),
    value: 100 + 10 * Math.sin((2 * Math.PI * i) / 7),
  }));

  it.each(['entire', 'last', 'changepoint'])('%s: period 0 detects the period, as an absent period does', async (operation) => {
    const url = `/anomalydetector/v1.1/timeseries/${operation}/detect`;
    const absent = await post(app, url, { series: weekly, granularity: 'daily' }, withKey);
    const zero = await post(app, url, { series: weekly, granularity: 'daily', period: 0 }, withKey);
    expect(absent.statusCode, absent.body).toBe(200);
    expect(zero.statusCode, zero.body).toBe(200);
    expect((absent.json() as { period: number }).period).toBe(7);
    expect(zero.json()).toEqual(absent.json());
  });

  it('changepoint takes a series without granularity (default none), on v1.0 and v1.1', async () => {
    const series = weekly.map(({ value }, i) => ({ value: value + (i >= 28 ? 50 : 0) }));
    for (const url of ['/anomalydetector/v1.1/timeseries/changepoint/detect', '/anomalydetector/v1.0/timeseries/changePoint/detect']) {
      const res = await post(app, url, { series }, withKey);
      expect(res.statusCode, res.body).toBe(200);
      const json = res.json() as { isChangePoint: boolean[]; confidenceScores: number[] };
      expect(json.isChangePoint).toHaveLength(series.length);
      expect(json.confidenceScores).toHaveLength(series.length);
    }
  });
});
