// GET /v1/machines/{machine_id}/results: stored per-point results in the wire shape (Avro
// DetectionResult names, ISO timestamps), paging with opaque cursors, time bounds, coded 400s and
// 404s, and organization isolation.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resultRow } from '@adp/streaming/testing';
import type { FastifyInstance } from 'fastify';
import type { ResultRow, ResultStore } from '@adp/streaming';
import { createMemoryResultStore } from '@adp/store';
import { OTHER_KEY, OTHER_ORG, get, post, streamingEnvironment, type StreamingEnvironment } from './streaming-helpers.js';

const T0 = Date.UTC(2024, 0, 1);
const MINUTE = 60_000;

function row(orgId: string, machineId: string, index: number, overrides: Partial<ResultRow> = {}): ResultRow {
  return resultRow({ orgId, machineId, tsMs: T0 + index * MINUTE, value: 10 + index, expectedValue: 10, upperMargin: 2.5, lowerMargin: 2.5, energy: 0.25, zScore: -0.5, regime: 'HEALTHY', writtenAtMs: T0, ...overrides });
}

interface ResultsBody {
  machine_id: string;
  results: { timestamp: string; value: number }[];
  next_cursor: string | null;
}

describe('GET /v1/machines/{machine_id}/results', () => {
  let env: StreamingEnvironment;
  let results: ResultStore;
  let app: FastifyInstance;
  let orgId: string;

  beforeEach(async () => {
    env = await streamingEnvironment();
    results = createMemoryResultStore();
    app = await env.start({}, { results });
    orgId = app.bootstrap.organizationId;
    await results.insert(Array.from({ length: 25 }, (_, index) => row(orgId, 'pump-1', index)));
  });
  afterEach(async () => {
    await env.cleanup();
    await results.close();
  });

  it('answers the stored rows in the wire shape, ascending, with next_cursor null on the last page', async () => {
    await results.insert([
      row(orgId, 'pump-1', 25, {
        value: 99,
        isAnomaly: true,
        isPositiveAnomaly: true,
        severity: 0.75,
        energy: null,
        zScore: null,
        regime: 'SHOCK',
      }),
    ]);
    const response = await get(app, '/v1/machines/pump-1/results');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const body = response.json() as ResultsBody;
    expect(body.machine_id).toBe('pump-1');
    expect(body.next_cursor).toBeNull();
    expect(body.results).toHaveLength(26);
    expect(body.results[0]).toEqual({
      timestamp: '2024-01-01T00:00:00.000Z',
      value: 10,
      expected_value: 10,
      upper_margin: 2.5,
      lower_margin: 2.5,
      is_anomaly: false,
      is_positive_anomaly: false,
      is_negative_anomaly: false,
      severity: 0,
      energy: 0.25,
      z_score: -0.5,
      regime: 'HEALTHY',
      model_version: 'engine-test',
    });
    expect(body.results[25]).toEqual({
      timestamp: '2024-01-01T00:25:00.000Z',
      value: 99,
      expected_value: 10,
      upper_margin: 2.5,
      lower_margin: 2.5,
      is_anomaly: true,
      is_positive_anomaly: true,
      is_negative_anomaly: false,
      severity: 0.75,
      energy: null,
      z_score: null,
      regime: 'SHOCK',
      model_version: 'engine-test',
    });
  });

  it('pages with opaque cursors until next_cursor is null', async () => {
    const seen: string[] = [];
    const pageSizes: number[] = [];
    let url = '/v1/machines/pump-1/results?limit=10';
    for (;;) {
      const body = (await get(app, url)).json() as ResultsBody;
      pageSizes.push(body.results.length);
      seen.push(...body.results.map((result) => result.timestamp));
      if (body.next_cursor === null) break;
      expect(body.next_cursor).toMatch(/^[A-Za-z0-9_-]+$/);
      url = `/v1/machines/pump-1/results?limit=10&cursor=${body.next_cursor}`;
    }
    expect(pageSizes).toEqual([10, 10, 5]);
    expect(seen).toEqual(Array.from({ length: 25 }, (_, index) => new Date(T0 + index * MINUTE).toISOString()));
    // A page that ends exactly at the last row says so.
    const exact = (await get(app, '/v1/machines/pump-1/results?limit=25')).json() as ResultsBody;
    expect(exact.results).toHaveLength(25);
    expect(exact.next_cursor).toBeNull();
  });

  it('applies from (inclusive) and to (exclusive), also together with a cursor', async () => {
    const from = new Date(T0 + 5 * MINUTE).toISOString();
    const to = new Date(T0 + 12 * MINUTE).toISOString();
    const body = (await get(app, `/v1/machines/pump-1/results?from=${from}&to=${to}`)).json() as ResultsBody;
    expect(body.results.map((result) => result.value)).toEqual([15, 16, 17, 18, 19, 20, 21]);
    const first = (await get(app, `/v1/machines/pump-1/results?from=${from}&to=${to}&limit=4`)).json() as ResultsBody;
    expect(first.results.map((result) => result.value)).toEqual([15, 16, 17, 18]);
    const second = (await get(app, `/v1/machines/pump-1/results?from=${from}&to=${to}&limit=4&cursor=${first.next_cursor ?? ''}`)).json() as ResultsBody;
    expect(second.results.map((result) => result.value)).toEqual([19, 20, 21]);
    expect(second.next_cursor).toBeNull();
  });

  it.each<[string, string, string]>([
    ['limit=0', 'InvalidArgument', "The 'limit' query parameter must be an integer from 1 to 10000."],
    ['limit=10001', 'InvalidArgument', "The 'limit' query parameter must be an integer from 1 to 10000."],
    ['limit=ten', 'InvalidArgument', "The 'limit' query parameter must be an integer from 1 to 10000."],
    ['limit=1.5', 'InvalidArgument', "The 'limit' query parameter must be an integer from 1 to 10000."],
    ['limit=1&limit=2', 'InvalidArgument', "The 'limit' query parameter must be an integer from 1 to 10000."],
    ['from=yesterday', 'InvalidArgument', "The 'from' query parameter must be an ISO 8601 date-time such as 2024-01-01T00:00:00Z."],
    ['to=2024-02-30T00:00:00Z', 'InvalidArgument', "The 'to' query parameter must be an ISO 8601 date-time such as 2024-01-01T00:00:00Z."],
    [
      'from=2024-01-02T00:00:00Z&to=2024-01-01T00:00:00Z',
      'InvalidArgument',
      "The 'from' query parameter must not be later than 'to' (from is inclusive, to exclusive).",
    ],
    ['from=1969-12-31T00:00:00Z', 'InvalidArgument', "The 'from' query parameter must be 1970-01-01T00:00:00Z or later."],
    ['cursor=not-a-cursor', 'InvalidArgument', "The 'cursor' query parameter is not a cursor this API returned."],
    // base64url of "r1.-1": well formed, but no page ends before 1970.
    ['cursor=cjEuLTE', 'InvalidArgument', "The 'cursor' query parameter is not a cursor this API returned."],
  ])('answers ?%s with 400 %s', async (query, code, message) => {
    const response = await get(app, `/v1/machines/pump-1/results?${query}`);
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json()).toEqual({ error: { code, message } });
  });

  it('reads empty from, to and cursor as absent', async () => {
    const blank = await get(app, '/v1/machines/pump-1/results?from=&to=&cursor=&limit=5');
    const plain = await get(app, '/v1/machines/pump-1/results?limit=5');
    expect(blank.statusCode).toBe(200);
    expect(blank.json()).toEqual(plain.json());
  });

  it('answers from equal to to with an empty page (an empty half-open range)', async () => {
    const response = await get(app, '/v1/machines/pump-1/results?from=2024-01-01T00:00:00Z&to=2024-01-01T00:00:00Z');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ machine_id: 'pump-1', results: [], next_cursor: null });
  });

  it('answers a malformed machine id with 400 InvalidMachineId', async () => {
    const response = await get(app, `/v1/machines/${'x'.repeat(129)}/results`);
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({
      error: {
        code: 'InvalidMachineId',
        message: "The 'machine_id' path parameter must be 1 to 128 characters from A-Z a-z 0-9 . _ : - starting with a letter or digit.",
      },
    });
  });

  it('answers an unknown machine with 404 MachineNotFound', async () => {
    const response = await get(app, '/v1/machines/pump-404/results');
    expect(response.statusCode).toBe(404);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json()).toEqual({ error: { code: 'MachineNotFound', message: "Machine 'pump-404' not found." } });
  });

  it('answers a machine the platform knows but has no results for with an empty page', async () => {
    const energies = Array.from({ length: 100 }, (_, index) => 1 + (index % 7) / 10);
    expect((await post(app, '/v1/baseline', { machine_id: 'pump-2', energies })).statusCode).toBe(200);
    const response = await get(app, '/v1/machines/pump-2/results');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ machine_id: 'pump-2', results: [], next_cursor: null });
  });

  it("keeps organizations apart: another organization neither sees these rows nor shares its own", async () => {
    await env.addOtherOrganization();
    const foreign = await get(app, '/v1/machines/pump-1/results', OTHER_KEY);
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json()).toEqual({ error: { code: 'MachineNotFound', message: "Machine 'pump-1' not found." } });

    await results.insert([row(OTHER_ORG, 'pump-1', 100, { value: -1 }), row(OTHER_ORG, 'pump-9', 0)]);
    const theirs = (await get(app, '/v1/machines/pump-1/results', OTHER_KEY)).json() as ResultsBody;
    expect(theirs.results.map((result) => result.value)).toEqual([-1]);
    const ours = (await get(app, '/v1/machines/pump-1/results')).json() as ResultsBody;
    expect(ours.results).toHaveLength(25);
    expect(ours.results.some((result) => result.value === -1)).toBe(false);
    expect((await get(app, '/v1/machines/pump-9/results')).statusCode).toBe(404);
  });

  it('answers 503 when the results store fails, and when there is none', async () => {
    const broken: ResultStore = {
      ...results,
      query: () => Promise.reject(new Error('clickhouse down')),
    };
    const failing = await env.start({}, { results: broken });
    const response = await get(failing, '/v1/machines/pump-1/results');
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.json()).toEqual({
      error: { code: 'ServiceUnavailable', message: 'The results store cannot be reached right now. Retry shortly.' },
    });
    const none = await env.start();
    const unconfigured = await get(none, '/v1/machines/pump-1/results');
    expect(unconfigured.statusCode).toBe(503);
    expect(unconfigured.json()).toEqual({
      error: { code: 'ServiceUnavailable', message: 'The results store is not configured on this server.' },
    });
  });

  it('documents both streaming routes, with their 401 and 429, in the OpenAPI document', async () => {
    const document = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    expect(Object.keys(document.paths['/v1/telemetry']?.['post']?.responses ?? {})).toEqual(
      expect.arrayContaining(['202', '400', '401', '429', '503']),
    );
    expect(Object.keys(document.paths['/v1/machines/{machine_id}/results']?.['get']?.responses ?? {})).toEqual(
      expect.arrayContaining(['200', '400', '401', '404', '429', '503']),
    );
  });
});
