// Serialisation of the largest vendor response: entire detect over 8,640 points. The time between
// Fastify's preSerialization and onSend hooks is the route serialiser's work alone.
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { EntireResult } from '@adp/detection';
import { buildVendorTestApp, dailySeries, post, recordingEngine } from './fixtures/vendor/harness.js';

const POINTS = 8640;
const RUNS = 25;

/** Results shaped like real ones: full-precision doubles, a few anomalies. */
function realisticResult(n: number): EntireResult {
  let seed = 42;
  const random = (): number => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const expectedValues = Array.from({ length: n }, () => 1000 + random() * 500);
  const isAnomaly = Array.from({ length: n }, () => random() < 0.01);
  return {
    period: 144,
    expectedValues,
    upperMargins: expectedValues.map((v) => v * 0.05 * random()),
    lowerMargins: expectedValues.map((v) => v * 0.05 * random()),
    isAnomaly,
    isPositiveAnomaly: isAnomaly.map((a, i) => a && i % 2 === 0),
    isNegativeAnomaly: isAnomaly.map((a, i) => a && i % 2 === 1),
    severity: isAnomaly.map((a) => (a ? random() : 0)),
  };
}

const result = realisticResult(POINTS);
const serialiseMs: number[] = [];
let app: FastifyInstance;

beforeAll(async () => {
  ({ app } = await buildVendorTestApp({
    engine: { ...recordingEngine(), detectEntireSeries: () => result },
    bodyLimitBytes: 4 * 1024 * 1024,
    setup: (root) => {
      const started = new WeakMap<object, number>();
      root.addHook('preSerialization', async (request, _reply, payload) => {
        started.set(request, performance.now());
        return payload;
      });
      root.addHook('onSend', async (request, _reply, payload) => {
        const start = started.get(request);
        if (start !== undefined) serialiseMs.push(performance.now() - start);
        return payload;
      });
    },
  }));
});
afterAll(async () => {
  await app.close();
});

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

describe('an 8,640-point entire response', () => {
  it('serialises to exactly the engine result', async () => {
    const body = { series: dailySeries(POINTS) };
    let text = '';
    for (let run = 0; run < RUNS; run++) {
      const res = await post(app, '/anomalydetector/v1.1/timeseries/entire/detect', body);
      expect(res.statusCode).toBe(200);
      text = res.body;
    }
    expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(result)));
    expect(serialiseMs).toHaveLength(RUNS);

    const stringifyMs: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const start = performance.now();
      JSON.stringify(result);
      stringifyMs.push(performance.now() - start);
    }
    const routeMedian = median(serialiseMs.slice(5));
    console.info(
      `entire/detect, ${POINTS} points, ${(text.length / 1024).toFixed(0)} KiB: route serialiser median ${routeMedian.toFixed(2)} ms` +
        ` (bare JSON.stringify median ${median(stringifyMs.slice(5)).toFixed(2)} ms)`,
    );
    // Speed is measured by `npm run bench`; this test only proves the output is exact and prints the time.
    expect(routeMedian).toBeGreaterThan(0);
  });
});
