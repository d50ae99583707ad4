// Every error path of the native routes: coded `{"error":{"code","message"}}` bodies, never a 500
// for bad input, and no model load for a request that fails validation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { NO_MODEL, del, get, headers, nativeEnvironment, post, type NativeEnvironment } from './native-helpers.js';

let env: NativeEnvironment;
let app: FastifyInstance;

beforeAll(async () => {
  env = await nativeEnvironment(NO_MODEL);
  app = await env.start({ BODY_LIMIT_BYTES: String(2 * 1024 * 1024) });
});
afterAll(async () => {
  await env.cleanup();
});

function expectError(response: LightMyRequestResponse, status: number, code: string, message?: RegExp): void {
  expect(response.statusCode, response.body).toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  const body = response.json() as { error: { code: string; message: string } };
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message']);
  expect(body.error.code).toBe(code);
  expect(body.error.message.length).toBeGreaterThan(0);
  if (message) expect(body.error.message).toMatch(message);
}

const values = (n: number) => Array.from({ length: n }, (_, i) => ({ value: 10 + (i % 7) }));
const hourly = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ timestamp: new Date(Date.UTC(2025, 0, 1, i)).toISOString(), value: i % 5 }));

describe('the OpenAPI document', () => {
  it('lists the native routes with their success and error responses', async () => {
    const response = await app.inject({ method: 'GET', url: '/openapi.json' });
    const paths = (response.json() as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> }).paths;
    const routes: [string, string, string[]][] = [
      ['/v1/detect', 'post', ['200', '400', '401', '503']],
      ['/v1/baseline', 'post', ['200', '400', '401', '503']],
      ['/v1/baseline', 'get', ['200', '400', '401', '404']],
      ['/v1/machines', 'get', ['200', '400', '401', '503']],
      ['/v1/machines/{machine_id}', 'delete', ['200', '400', '401', '404']],
      ['/v1/status/{machine_id}', 'get', ['200', '400', '401', '404', '503']],
    ];
    for (const [path, method, statuses] of routes) {
      const operation = paths[path]?.[method];
      expect(operation, `${method} ${path}`).toBeDefined();
      expect(Object.keys(operation?.responses ?? {})).toEqual(expect.arrayContaining(statuses));
    }
  });
});

describe('native routes need a key', () => {
  it.each([
    ['POST', '/v1/detect'],
    ['POST', '/v1/baseline'],
    ['GET', '/v1/baseline?machine_id=m1'],
    ['GET', '/v1/machines'],
    ['DELETE', '/v1/machines/m1'],
    ['GET', '/v1/status/m1'],
  ] as const)('%s %s without a key is a 401', async (method, url) => {
    const response = await app.inject({ method, url });
    expect(response.statusCode).toBe(401);
    expect((response.json() as { error: { code: string } }).error.code).toBe('401');
  });
});

describe('POST /v1/baseline errors', () => {
  const base = { machine_id: 'pump-1', series: values(120) };

  it.each([
    ['a missing machine_id', { series: values(120) }, /^machine_id is required \(1 to 128 characters/],
    ['an empty machine_id', { ...base, machine_id: '' }, /^machine_id must be 1 to 128 characters/],
    ['a machine_id with a space', { ...base, machine_id: 'pump 1' }, /1 to 128 characters/],
    ['a machine_id starting with a dot', { ...base, machine_id: '.hidden' }, /starting with a letter or digit/],
    ['a machine_id of 129 characters', { ...base, machine_id: 'm'.repeat(129) }, /1 to 128/],
    ['a numeric machine_id', { ...base, machine_id: 42 }, /1 to 128/],
    ['a machine_id with a slash', { ...base, machine_id: 'a/b' }, /1 to 128/],
  ])('%s is InvalidMachineId', async (_name, body, message) => {
    expectError(await post(app, '/v1/baseline', body), 400, 'InvalidMachineId', message);
  });

  it.each([
    ['no series and no energies', { machine_id: 'm1' }, /'series' field is required: at least 100 points/],
    ['99 points', { machine_id: 'm1', series: values(99) }, /^series must have 100 to 8640 items; it has 99\.$/],
    ['8,641 points', { machine_id: 'm1', series: values(8641) }, /^series must have 100 to 8640 items; it has 8641\.$/],
    ['a series that is not an array', { machine_id: 'm1', series: { value: 1 } }, /must be an array/],
    ['a point without a value', { machine_id: 'm1', series: [...values(119), { timestamp: 'x' }] }, /^series\[119\]\.value is required \(a number from -1e\+100 to 1e\+100\)\.$/],
    ['a string value', { machine_id: 'm1', series: [{ value: '3' }, ...values(119)] }, /^series\[0\]\.value must be a number from -1e\+100 to 1e\+100\.$/],
    ['a value of 1e101', { machine_id: 'm1', series: [...values(119), { value: 1e101 }] }, /^series\[119\]\.value must be a number from -1e\+100 to 1e\+100\.$/],
    ['a point that is not an object', { machine_id: 'm1', series: [...values(119), 5] }, /^series\[119\] must be an object\.$/],
    ['hourly data without timestamps', { machine_id: 'm1', granularity: 'hourly', series: values(120) }, /timestamp/],
    ['descending timestamps', { machine_id: 'm1', granularity: 'hourly', series: hourly(120).reverse() }, /ascending/],
    ['99 energies', { machine_id: 'm1', energies: new Array(99).fill(1) }, /^energies must have 100 to 100000 items; it has 99\.$/],
    ['energies that are not an array', { machine_id: 'm1', energies: 'many' }, /^energies must be an array of 100 to 100000 items\.$/],
    ['a negative energy', { machine_id: 'm1', energies: [...new Array(99).fill(1), -1] }, /^energies\[99\] must be a number from 0 to 1e\+150\.$/],
    // Finite, but its square is not: the statistics would be infinite (it was a 503 from the store).
    ['an energy of 1e308', { machine_id: 'm1', energies: [...new Array(50).fill(3), 1e308, ...new Array(49).fill(4)] }, /^energies\[50\] must be a number from 0 to 1e\+150\.$/],
    ['a string energy', { machine_id: 'm1', energies: ['1', ...new Array(99).fill(1)] }, /^energies\[0\] must be a number/],
  ])('%s is InvalidSeries', async (_name, body, message) => {
    expectError(await post(app, '/v1/baseline', body), 400, 'InvalidSeries', message);
  });

  it.each([
    ['both series and energies', { ...base, energies: new Array(100).fill(1) }, /either 'series'.*or 'energies', not both/],
    ['an unknown granularity', { ...base, granularity: 'fortnightly' }, /granularity/],
    ['a sensitivity of 100', { ...base, sensitivity: 100 }, /sensitivity/],
    ['a fractional sensitivity', { ...base, sensitivity: 9.5 }, /sensitivity/],
    ['a numeric label', { ...base, label: 7 }, /label/],
    ['a label of 201 characters', { ...base, label: 'x'.repeat(201) }, /at most 200/],
    ['an array body', [base], /JSON object/],
    ['a string body', 'pump', /JSON object/],
  ])('%s is InvalidArgument', async (_name, body, message) => {
    expectError(await post(app, '/v1/baseline', body), 400, 'InvalidArgument', message);
  });

  it('answers malformed JSON, a wrong content type and an oversized body with coded errors', async () => {
    const malformed = await app.inject({ method: 'POST', url: '/v1/baseline', headers: headers(), payload: '{"machine_id":' });
    expectError(malformed, 400, 'BadRequest');
    const noBody = await app.inject({ method: 'POST', url: '/v1/baseline', headers: { 'x-service-key': headers()['x-service-key'] ?? '' } });
    expectError(noBody, 400, 'InvalidArgument', /JSON object/);
    const csv = await app.inject({
      method: 'POST',
      url: '/v1/baseline',
      headers: { ...headers(), 'content-type': 'text/csv' },
      payload: 'a,b',
    });
    expectError(csv, 415, 'UnsupportedMediaType');
    const huge = await post(app, '/v1/baseline', { machine_id: 'm1', energies: new Array(400_000).fill(1.2345678) });
    expectError(huge, 413, 'PayloadTooLarge');
  });

  it('refuses more than 100,000 energies', async () => {
    const response = await post(app, '/v1/baseline', { machine_id: 'm1', energies: new Array(100_001).fill(1) });
    expectError(response, 400, 'InvalidSeries', /^energies must have 100 to 100000 items; it has 100001\.$/);
  });
});

describe('POST /v1/detect errors', () => {
  const base = { series: values(24) };

  it.each([
    ['a missing series', {}, /^series is required \(an array of 12 to 8640 items\)\.$/],
    ['11 points', { series: values(11) }, /^series must have 12 to 8640 items; it has 11\.$/],
    ['8,641 points', { series: values(8641) }, /^series must have 12 to 8640 items; it has 8641\.$/],
    ['a null series', { series: null }, /^series must be an array of 12 to 8640 items\.$/],
    ['a series that is not an array', { series: 'abc' }, /array/],
    ['a string value', { series: [{ value: 'x' }, ...values(23)] }, /^series\[0\]\.value must be a number/],
    ['hourly data without timestamps', { ...base, granularity: 'hourly' }, /^series\[0\]\.timestamp is required when granularity is not 'none'\.$/],
    ['hourly data out of order', { series: hourly(24).reverse(), granularity: 'hourly' }, /./],
  ])('%s is InvalidSeries', async (_name, body, message) => {
    expectError(await post(app, '/v1/detect', body), 400, 'InvalidSeries', message);
  });

  it.each([
    ['include_energy "yes"', { ...base, include_energy: 'yes' }, /include_energy/],
    ['include_embeddings 1', { ...base, include_embeddings: 1 }, /include_embeddings/],
    ['include_z_scores "no"', { ...base, include_z_scores: 'no' }, /include_z_scores/],
    ['include_shape_scores 0', { ...base, include_shape_scores: 0 }, /include_shape_scores/],
    ['a sensitivity of 100', { ...base, sensitivity: 100 }, /sensitivity/],
    ['a maxAnomalyRatio of 0.6', { ...base, maxAnomalyRatio: 0.6 }, /maxAnomalyRatio/],
    ['an unknown granularity', { ...base, granularity: 'weekly-ish' }, /granularity/],
    ['an unknown imputeMode', { ...base, imputeMode: 'guess' }, /imputeMode/],
    ['a negative period', { ...base, period: -1 }, /period/],
    ['an array body', [base], /JSON object/],
  ])('%s is InvalidArgument', async (_name, body, message) => {
    expectError(await post(app, '/v1/detect', body), 400, 'InvalidArgument', message);
  });

  it.each([
    ['a machine_id with a space', { ...base, machine_id: 'm 1' }],
    ['a numeric machine_id', { ...base, machine_id: 7 }],
  ])('%s is InvalidMachineId', async (_name, body) => {
    expectError(await post(app, '/v1/detect', body), 400, 'InvalidMachineId');
  });

  it('a model that cannot load is a retriable 503 ModelUnavailable', async () => {
    const brokenEnv = await nativeEnvironment(() => Promise.reject(new Error('onnx sessions failed')));
    try {
      const broken = await brokenEnv.start();
      const response = await post(broken, '/v1/detect', base);
      expectError(response, 503, 'ModelUnavailable', /failed while loading/);
      expect(response.headers['retry-after']).toBe('1');
      const baseline = await post(broken, '/v1/baseline', { machine_id: 'm1', series: values(120) });
      expectError(baseline, 503, 'ModelUnavailable');
      const usage = (await get(broken, '/v1/usage/summary')).json() as { call_count: number };
      expect(usage.call_count).toBe(0);
    } finally {
      await brokenEnv.cleanup();
    }
  });
});

describe('machine lookups', () => {
  it('GET /v1/baseline needs a valid machine_id and answers 404 for a machine without one', async () => {
    expectError(await get(app, '/v1/baseline'), 400, 'InvalidMachineId', /query parameter is required/);
    expectError(await get(app, '/v1/baseline?machine_id=a%20b'), 400, 'InvalidMachineId');
    expectError(await get(app, '/v1/baseline?machine_id=ghost'), 404, 'BaselineNotFound', /'ghost' has no baseline/);
  });

  it('DELETE /v1/machines and GET /v1/status answer 404 for unknown machines and 400 for bad ids', async () => {
    expectError(await del(app, '/v1/machines/ghost'), 404, 'MachineNotFound', /'ghost' not found/);
    expectError(await get(app, '/v1/status/ghost'), 404, 'MachineNotFound');
    expectError(await del(app, '/v1/machines/bad%20id'), 400, 'InvalidMachineId');
    expectError(await get(app, '/v1/status/.dot'), 400, 'InvalidMachineId');
    expectError(await del(app, `/v1/machines/${'m'.repeat(129)}`), 400, 'InvalidMachineId');
  });

  it('GET /v1/machines lists nothing for a new organization', async () => {
    const response = await get(app, '/v1/machines');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ machines: [], total: 0 });
  });

  it('rejected requests are not metered', async () => {
    const usage = (await get(app, '/v1/usage')).json() as { endpoint: string; call_count: number }[];
    expect(usage.filter((entry) => entry.endpoint.startsWith('v1/')).map((entry) => entry.call_count)).toEqual([0, 0]);
  });
});

describe('POST /v1/baseline at the energy limit', () => {
  let own: NativeEnvironment;
  let limitApp: FastifyInstance;
  beforeAll(async () => {
    own = await nativeEnvironment(NO_MODEL);
    limitApp = await own.start({ BODY_LIMIT_BYTES: String(2 * 1024 * 1024) });
  });
  afterAll(async () => {
    await own.cleanup();
  });

  it('takes 100,000 energies of up to 1e150, with finite statistics stored exactly', async () => {
    const energies = Array.from({ length: 100_000 }, (_, i) => (i % 2 === 0 ? 1e150 : 0));
    const response = await post(limitApp, '/v1/baseline', { machine_id: 'm-top', energies });
    expect(response.statusCode, response.body).toBe(200);
    const { stats } = response.json() as { stats: Record<string, number> };
    // Half the energies 1e150, half 0: mean and standard deviation 5e149 (to the sum's rounding).
    expect(stats['energy_mean']! / 5e149).toBeCloseTo(1, 9);
    expect(stats['energy_std']! / 5e149).toBeCloseTo(1, 9);
    expect(stats).toMatchObject({ energy_p99: 1e150, num_windows: 100_000, series_length: 100_000 });
    expect((await get(limitApp, '/v1/baseline?machine_id=m-top')).json()).toMatchObject({ stats });
  });
});
