// VENDOR_DETECTION_THREADS: with detection threads the vendor routes answer every request exactly
// as they do on the event loop (status, x-ms-error-code, bytes of the body), successes, bad JSON,
// the validator's refusals and the engine's series errors alike; usage is counted the same.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { answerVendorRequest, readJsonBody, refusalOf } from '../src/vendor/answer.js';
import { detectionEngine } from '../src/vendor/engine.js';
import { messageStyleOf, type ApiVersion, type Operation } from '../src/vendor/request.js';
import { vendorThreads, type VendorThreads } from '../src/vendor/threads.js';
import { buildVendorTestApp, dailySeries, post, type VendorTestApp } from './fixtures/vendor/harness.js';

const V11 = '/anomalydetector/v1.1/timeseries';
const V10 = '/anomalydetector/v1.0/timeseries';
const MINUTE_MS = 60_000;

function minutely(count: number): { timestamp: string; value: number }[] {
  const start = Date.UTC(2024, 0, 1);
  return Array.from({ length: count }, (_, i) => ({
    timestamp: new Date(start + i * MINUTE_MS).toISOString(),
    value: 100 + 10 * Math.sin((2 * Math.PI * i) / 60) + (i === count - 1 || i === 400 ? 60 : 0) + (i % 5) * 0.1,
  }));
}

const series = minutely(1441);
const unsorted = [...dailySeries(30)];
[unsorted[3], unsorted[4]] = [unsorted[4]!, unsorted[3]!];

/** [label, path, body text, content type (default application/json)] */
type Case = readonly [label: string, path: string, text: string, contentType: string];
const CASES: readonly Case[] = ([
  ['entire, minutely', `${V11}/entire/detect`, JSON.stringify({ series, granularity: 'minutely', sensitivity: 90 })],
  ['last, minutely', `${V11}/last/detect`, JSON.stringify({ series, granularity: 'minutely' })],
  ['changepoint', `${V11}/changepoint/detect`, JSON.stringify({ series, granularity: 'minutely', stableTrendWindow: 10 })],
  ['changePoint spelling', `${V11}/changePoint/detect`, JSON.stringify({ series, granularity: 'minutely' })],
  ['any casing', `${V11}/LAST/detect`, JSON.stringify({ series: dailySeries(40) })],
  ['v1.0 PascalCase', `${V10}/entire/detect`, JSON.stringify({ Series: dailySeries(40).map((p) => ({ Timestamp: p.timestamp, Value: p.value })), Granularity: 'daily' })],
  ['byte-order mark', `${V11}/entire/detect`, `\ufeff${JSON.stringify({ series: dailySeries(40) })}`],
  ['empty body', `${V11}/entire/detect`, '   '],
  ['bad JSON', `${V11}/entire/detect`, '{"series": [1, 2'],
  ['not an object', `${V11}/last/detect`, '[1, 2, 3]'],
  ['too few points', `${V11}/entire/detect`, JSON.stringify({ series: dailySeries(5) })],
  ['bad granularity', `${V11}/entire/detect`, JSON.stringify({ series: dailySeries(40), granularity: 'fortnightly' })],
  ['v1.0 message style', `${V10}/entire/detect`, JSON.stringify({ series: dailySeries(40), sensitivity: 100 })],
  ['unsorted (the engine refuses)', `${V11}/entire/detect`, JSON.stringify({ series: unsorted, granularity: 'daily' })],
  ['text/plain', `${V11}/entire/detect`, JSON.stringify({ series: dailySeries(40) }), 'text/plain'],
] as const).map(([label, path, text, contentType]: readonly string[]) => [label ?? '', path ?? '', text ?? '', contentType ?? 'application/json'] as const);

let inline: VendorTestApp;
let threaded: VendorTestApp;
let threads: VendorThreads;

beforeAll(async () => {
  inline = await buildVendorTestApp();
  threaded = await buildVendorTestApp({ detectionThreads: 2 });
  threads = vendorThreads(1, (error) => {
    throw error;
  });
  threads.start();
  // Starting a thread loads tsx and the engine: seconds on a loaded machine.
  while (!threads.ready) await new Promise((resolve) => setTimeout(resolve, 50));
});
afterAll(async () => {
  await Promise.all([inline.app.close(), threaded.app.close(), threads.close()]);
});

function wire(res: LightMyRequestResponse): unknown {
  return { status: res.statusCode, code: res.headers['x-ms-error-code'], type: res.headers['content-type'], body: res.body };
}

/** The operation and version of a vendor path, as the routes read them. */
function route(path: string): { operation: Operation; version: ApiVersion } {
  const [, , version, , segment] = path.split('/');
  const operation = (segment ?? '').toLowerCase() as Operation;
  return { operation, version: version as ApiVersion };
}

/** What answering on the event loop gives: the answer or the refusal. */
function inPlace(path: string, text: string): unknown {
  const { operation, version } = route(path);
  try {
    return { answer: answerVendorRequest(detectionEngine, operation, readJsonBody(Buffer.from(text), detectionEngine), messageStyleOf(version)) };
  } catch (error) {
    return { refusal: refusalOf(error) };
  }
}

describe('a detection thread', () => {
  it.each(CASES.filter(([, , , contentType]) => contentType === 'application/json'))('%s: the same answer or refusal as in place', async (_label, path, text) => {
    const { operation, version } = route(path);
    let actual: unknown;
    try {
      actual = { answer: await threads.answer({ body: Buffer.from(text), operation, style: messageStyleOf(version) }) };
    } catch (error) {
      actual = { refusal: refusalOf(error) };
    }
    expect(actual).toEqual(inPlace(path, text));
    expect(actual).not.toEqual({ refusal: null });
  });
});

describe('detection threads that cannot start', () => {
  it('report it once, never become ready, and take no request', async () => {
    const failures: unknown[] = [];
    const broken = vendorThreads(1, (error) => failures.push(error), new URL('./fixtures/vendor/missing-thread-entry.mjs', import.meta.url));
    try {
      broken.start();
      while (failures.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(failures).toHaveLength(1);
      expect(broken.ready).toBe(false);
    } finally {
      await broken.close();
    }
  });
});

describe('vendor routes with detection threads', () => {
  it.each(CASES)('%s: the same answer as on the event loop', async (_label, path, text, contentType) => {
    const headers = { 'content-type': contentType };
    const [a, b] = await Promise.all([post(inline.app, path, text, headers), post(threaded.app, path, text, headers)]);
    expect(wire(b)).toEqual(wire(a));
  });

  it('count the usage of each success', async () => {
    const successes = CASES.filter(([label]) => ['entire, minutely', 'last, minutely', 'changepoint'].includes(label));
    for (const [, path, text] of successes) {
      const res = await post(threaded.app, path, text);
      expect(res.statusCode, res.body).toBe(200);
    }
    expect(threaded.detected.slice(-3).map((call) => [call.endpoint, call.points])).toEqual([
      ['entire/detect', 1441],
      ['last/detect', 1441],
      ['changepoint/detect', 1441],
    ]);
  });

  it('answer many requests at once, each with its own answer', async () => {
    const bodies = Array.from({ length: 12 }, (_, k) => JSON.stringify({ series: series.slice(k * 10, k * 10 + 1000), granularity: 'minutely' }));
    const expected = await Promise.all(bodies.map((text) => post(inline.app, `${V11}/last/detect`, text)));
    for (let round = 0; round < 3; round++) {
      const actual = await Promise.all(bodies.map((text) => post(threaded.app, `${V11}/last/detect`, text)));
      expect(actual.map(wire)).toEqual(expected.map(wire));
    }
    expect(new Set(expected.map((res) => res.body)).size).toBeGreaterThan(1);
    expect(threaded.detected.slice(-12).every((call) => call.endpoint === 'last/detect' && call.points === 1000)).toBe(true);
  });
});
