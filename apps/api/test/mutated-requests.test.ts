// Mutated requests against the embedded platform, as a careless or hostile client would send
// them: valid vendor, native and telemetry bodies with fields deleted, retyped, set to extreme
// numbers (1e308, 5e-324, 2^63, 1e20), odd strings, reordered or duplicated points, broken JSON.
// Whatever comes in, no answer is a 5xx, every error has its route's shape (the vendor's
// `{"code","message"}` with `x-ms-error-code` on /anomalydetector, `{"error":{"code","message"}}`
// on /v1), and every telemetry point the API accepted is stored by the worker without a failed
// batch or a dead letter. A fixed seed: the same requests on every run. (The first version of this
// check found a reading of 1e20 stalling the embedded worker and a 1e308 energy answering 503.)
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '@adp/stream-worker';
import { loadConfig } from '../src/config.js';
import { openPlatform, type Platform } from '../src/platform.js';
import { API_KEY, constantEnergyModel, eventually } from './streaming-helpers.js';

const REQUESTS = 1_200;

/** Park–Miller: the same sequence on every run. */
function generator(seed: number): { next: () => number; pick: <T>(items: readonly T[]) => T } {
  let state = seed;
  const next = (): number => {
    state = (state * 48271) % 2147483647;
    return state / 2147483647;
  };
  return { next, pick: (items) => items[Math.floor(next() * items.length)]! };
}

const { next: random, pick } = generator(20261122);
const T0 = Date.UTC(2024, 0, 1);

const EXTREMES: readonly unknown[] = [
  null, true, 0, -1, 1e308, -1e308, 5e-324, 1e20, 2 ** 63, -0, 12.5, 'x', '', '1', 'NaN', 'Infinity',
  '2024-13-45T00:00:00Z', '\u0000', 'é'.repeat(300), [], {}, [1], { a: 1 },
];
const FIELDS = ['period', 'granularity', 'customInterval', 'sensitivity', 'maxAnomalyRatio', 'imputeMode', 'imputeFixedValue', 'machine_id', 'energies', 'points', 'series', 'channels', 'timestamp', 'value'];

function series(n: number): { timestamp: string; value: number }[] {
  return Array.from({ length: n }, (_, i) => ({ timestamp: new Date(T0 + i * 3_600_000).toISOString(), value: 10 + Math.sin(i / 4) + (i === n - 1 ? 9 : 0) }));
}

function mutate(node: unknown, depth = 0): unknown {
  if (depth > 4) return node;
  if (Array.isArray(node)) {
    const items = [...node];
    const r = random();
    const at = Math.floor(random() * items.length);
    if (items.length === 0) return items;
    if (r < 0.1) items.splice(at, 1);
    else if (r < 0.2) items.push(items[at]);
    else if (r < 0.25) items.reverse();
    else if (r < 0.3) items[at] = pick(EXTREMES);
    else items[at] = mutate(items[at], depth + 1);
    return items;
  }
  if (node !== null && typeof node === 'object') {
    const object: Record<string, unknown> = { ...(node as Record<string, unknown>) };
    const keys = Object.keys(object);
    const r = random();
    if (r < 0.15 && keys.length > 0) delete object[pick(keys)];
    else if (r < 0.45 && keys.length > 0) object[pick(keys)] = pick(EXTREMES);
    else if (r < 0.55) object[pick(FIELDS)] = pick(EXTREMES);
    else if (keys.length > 0) {
      const key = pick(keys);
      object[key] = mutate(object[key], depth + 1);
    }
    return object;
  }
  return random() < 0.5 ? pick(EXTREMES) : node;
}

interface Route {
  readonly url: string;
  readonly vendor: boolean;
  body(): unknown;
}

const ROUTES: Route[] = [
  ...['v1.0', 'v1.1'].flatMap((version) =>
    ['entire', 'last', 'changepoint'].map((kind) => ({
      url: `/anomalydetector/${version}/timeseries/${kind}/detect`,
      vendor: true,
      body: () => ({
        series: series(pick([12, 13, 30, 100, 300])),
        granularity: pick(['hourly', 'daily', 'minutely', 'none', 'secondly', 'weekly', 'monthly', 'yearly']),
        ...(random() < 0.3 ? { period: pick([0, 2, 24, 7, 100]) } : {}),
        ...(random() < 0.3 ? { customInterval: pick([1, 5, 60]) } : {}),
        ...(random() < 0.3 ? { sensitivity: pick([0, 50, 99]) } : {}),
        ...(random() < 0.3 ? { imputeMode: pick(['auto', 'previous', 'linear', 'fixed', 'zero', 'notFill']), imputeFixedValue: 1 } : {}),
      }),
    })),
  ),
  { url: '/v1/detect', vendor: false, body: () => ({ machine_id: 'm1', series: series(pick([10, 64, 100])) }) },
  { url: '/v1/baseline', vendor: false, body: () => ({ machine_id: 'm1', energies: Array.from({ length: 100 }, (_, i) => 3 + (i % 2)) }) },
  {
    url: '/v1/telemetry',
    vendor: false,
    body: () => ({
      machine_id: pick(['m1', 'pump-2', 'x.y:z-1']),
      points: series(pick([1, 5, 50])).map((p) => (random() < 0.2 ? { ...p, value: pick([1e20, -1e300, 1e308, 2 ** 63, 5e-324, -0]) } : p)),
    }),
  },
  {
    url: '/v1/telemetry',
    vendor: false,
    body: () => ({
      machine_id: 'multi',
      points: series(pick([3, 20])).map((p) => ({ timestamp: p.timestamp, channels: { a: p.value, b: random() < 0.1 ? 1e300 : -p.value } })),
    }),
  },
];

function expectRouteErrorShape(route: Route, response: LightMyRequestResponse): void {
  const body = response.json() as Record<string, unknown>;
  if (route.vendor) {
    expect(Object.keys(body).sort()).toEqual(['code', 'message']);
    expect(response.headers['x-ms-error-code']).toBe(body['code']);
  } else {
    expect(Object.keys(body)).toEqual(['error']);
    const error = body['error'] as Record<string, unknown>;
    expect(typeof error['code']).toBe('string');
    expect(typeof error['message']).toBe('string');
  }
}

describe(`${REQUESTS} mutated requests on the embedded platform`, () => {
  let dataDir: string;
  let platform: Platform;
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-mutated-'));
    platform = await openPlatform(loadConfig({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY: API_KEY, LOG_LEVEL: 'silent' }), {
      model: constantEnergyModel(1),
      worker: loadWorkerConfig({}),
    });
  });
  afterAll(async () => {
    await platform.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('answers each without a 5xx, errors in the route family shape, and stores every accepted telemetry point', async () => {
    const statuses = new Map<number, number>();
    let acceptedTelemetry = 0;
    let acceptedSeriesPoints = 0;
    for (let i = 0; i < REQUESTS; i++) {
      const route = pick(ROUTES);
      let body = route.body();
      for (let m = Math.floor(random() * 4); m > 0; m--) body = mutate(body);
      const payload = random() < 0.03 ? pick(['{', '[]', 'null', '"x"', '{"series":', '']) : JSON.stringify(body);
      const response = await platform.app.inject({
        method: 'POST',
        url: route.url,
        headers: { 'ocp-apim-subscription-key': API_KEY, 'x-service-key': API_KEY, 'content-type': 'application/json' },
        payload,
      });
      statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
      expect(response.statusCode, `${route.url} ${payload.slice(0, 300)}: ${response.body.slice(0, 300)}`).toBeLessThan(500);
      if (response.statusCode >= 400) expectRouteErrorShape(route, response);
      if (route.url === '/v1/telemetry' && response.statusCode === 202) {
        acceptedTelemetry++;
        const points = (body as { points: { channels?: Record<string, number> }[] }).points;
        expect((response.json() as { accepted: number }).accepted).toBe(points.length);
        // A point with channels is a series per channel: one row each.
        acceptedSeriesPoints += points.reduce((n, p) => n + (p.channels ? Object.keys(p.channels).length : 1), 0);
      }
    }
    // The mix reached the handlers, not only the validators.
    expect(statuses.get(200) ?? 0).toBeGreaterThan(REQUESTS / 20);
    expect(acceptedTelemetry).toBeGreaterThan(REQUESTS / 50);
    expect(statuses.get(400) ?? 0).toBeGreaterThan(REQUESTS / 2);

    // Every accepted telemetry message judged and stored: no failed batch, nothing dead-lettered.
    const worker = platform.worker!;
    await eventually(async () => worker.counters().failedBatches > 0 || worker.counters().messages === acceptedTelemetry, 20_000);
    expect(worker.counters()).toMatchObject({ failedBatches: 0, deadLetters: 0 });
    // Each accepted point (of each channel) stored as a row, or recognised as a resend of one stored.
    expect(worker.counters().rows + worker.counters().replays).toBe(acceptedSeriesPoints);
  });
});
