// Serialisation of the vendor success bodies (./src/vendor/response.ts): byte for byte what
// JSON.stringify writes for the documented fields, and a 500 in the vendor shape when the engine
// breaks the result contract (a non-finite number, a wrong length, a non-boolean flag).
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { ChangePointResult, EntireResult, LastResult } from '@adp/detection';
import { writeChangePointBody, writeEntireBody, writeLastBody } from '../src/vendor/response.js';
import { buildVendorTestApp, dailySeries, post, recordingEngine } from './fixtures/vendor/harness.js';

const POINTS = 8640;
const RUNS = 25;
const ENTIRE = '/anomalydetector/v1.1/timeseries/entire/detect';

/** Results shaped like real ones: full-precision doubles, margins that repeat, a few anomalies. */
function realisticResult(n: number): EntireResult {
  let seed = 42;
  const random = (): number => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const expectedValues = Array.from({ length: n }, () => 1000 + random() * 500);
  const isAnomaly = Array.from({ length: n }, () => random() < 0.01);
  const margin = (i: number): number => (i % 288 < 144 ? 8.747453311205858 : 12.5 + (i % 7) * 0.1);
  return {
    period: 144,
    expectedValues,
    upperMargins: expectedValues.map((_, i) => margin(i)),
    lowerMargins: expectedValues.map((v) => v * 0.05 * random()),
    isAnomaly,
    isPositiveAnomaly: isAnomaly.map((a, i) => a && i % 2 === 0),
    isNegativeAnomaly: isAnomaly.map((a, i) => a && i % 2 === 1),
    severity: isAnomaly.map((a) => (a ? random() : 0)),
  };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** JSON.stringify of the documented fields, in the documented order: what the writers must match. */
function reference(result: EntireResult): string {
  const { period, expectedValues, upperMargins, lowerMargins, isAnomaly, isNegativeAnomaly, isPositiveAnomaly, severity } = result;
  return JSON.stringify({ period, expectedValues, upperMargins, lowerMargins, isAnomaly, isNegativeAnomaly, isPositiveAnomaly, severity });
}

describe('the body writers', () => {
  it('write exactly what JSON.stringify writes, for edge-case numbers too', () => {
    const odd = [0, -0, 1, -1, 5e-324, -5e-324, 1e21, 1e-7, 123456789012345680000, 0.1 + 0.2, 1.7976931348623157e308, 2 ** 53, -(2 ** 53), 1e-7, 1e-7];
    const n = odd.length;
    const result: EntireResult = {
      period: 0,
      expectedValues: odd,
      upperMargins: [...odd].reverse(),
      lowerMargins: odd.map((v) => v / 3),
      isAnomaly: odd.map((_, i) => i % 2 === 0),
      isNegativeAnomaly: odd.map((_, i) => i % 3 === 0),
      isPositiveAnomaly: odd.map(() => false),
      severity: odd.map((v) => Math.abs(v) % 1),
    };
    expect(writeEntireBody(result, n).toString('utf8')).toBe(reference(result));
    const last: LastResult = {
      period: 7,
      suggestedWindow: 29,
      expectedValue: -0,
      upperMargin: 5e-324,
      lowerMargin: 1e21,
      isAnomaly: true,
      isNegativeAnomaly: false,
      isPositiveAnomaly: true,
      severity: 0.30000000000000004,
    };
    const { period, suggestedWindow, expectedValue, upperMargin, lowerMargin, isAnomaly, isNegativeAnomaly, isPositiveAnomaly, severity } = last;
    expect(writeLastBody({ ...last, extra: 1 } as LastResult)).toBe(
      JSON.stringify({ period, suggestedWindow, expectedValue, upperMargin, lowerMargin, isAnomaly, isNegativeAnomaly, isPositiveAnomaly, severity }),
    );
    const changePoint: ChangePointResult = { period: 3, isChangePoint: [true, false, false], confidenceScores: [1, 0, 0.25] };
    expect(writeChangePointBody(changePoint, 3).toString('utf8')).toBe(JSON.stringify(changePoint));
  });

  it.each([
    ['a NaN', { expectedValues: [1, Number.NaN, 3] }, /non-finite expectedValues/],
    ['an Infinity after a repeat', { severity: [0, 0, Number.POSITIVE_INFINITY] }, /non-finite severity/],
    ['a string number', { upperMargins: [1, '1', 1] }, /non-finite upperMargins/],
    ['a short array', { lowerMargins: [1, 1] }, /2 lowerMargins for 3 points/],
    ['a hole', { lowerMargins: [1, , 1] }, /non-finite lowerMargins/],
    ['a non-boolean flag', { isAnomaly: [false, 0, false] }, /non-boolean isAnomaly/],
    ['a fractional period', { period: 1.5 }, /period is not a finite integer/],
  ])('refuse %s', (_name, change, message) => {
    const good: EntireResult = {
      period: 0,
      expectedValues: [1, 2, 3],
      upperMargins: [1, 1, 1],
      lowerMargins: [1, 1, 1],
      isAnomaly: [false, false, false],
      isNegativeAnomaly: [false, false, false],
      isPositiveAnomaly: [false, false, false],
      severity: [0, 0, 0],
    };
    expect(() => writeEntireBody({ ...good, ...change } as unknown as EntireResult, 3)).toThrow(message);
  });

  it('refuse a last-point result with a non-finite margin', () => {
    const last = { ...recordingEngine().detectLastPoint({ values: [1], timestampsMs: null, granularity: 'none', customInterval: 1, imputeMode: 'auto' }, { sensitivity: 95, maxAnomalyRatio: 0.25 }) };
    expect(() => writeLastBody({ ...last, upperMargin: Number.NaN })).toThrow(/upperMargin is not a finite number/);
    expect(() => writeLastBody({ ...last, isAnomaly: 'no' as unknown as boolean })).toThrow(/isAnomaly is not a finite boolean/);
  });
});

describe('over the routes', () => {
  const result = realisticResult(POINTS);
  let broken: Partial<EntireResult> | null = null;
  let app: FastifyInstance;

  beforeAll(async () => {
    ({ app } = await buildVendorTestApp({
      engine: { ...recordingEngine(), detectEntireSeries: () => ({ ...result, ...broken, internalField: 'secret' }) as EntireResult },
      bodyLimitBytes: 4 * 1024 * 1024,
    }));
  });
  afterAll(async () => {
    await app.close();
  });

  it('an 8,640-point entire response is exactly the engine result, as JSON', async () => {
    const body = { series: dailySeries(POINTS) };
    const res = await post(app, ENTIRE, body);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toBe(reference(result));

    const writerMs: number[] = [];
    const stringifyMs: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      let start = performance.now();
      writeEntireBody(result, POINTS);
      writerMs.push(performance.now() - start);
      start = performance.now();
      Buffer.from(reference(result));
      stringifyMs.push(performance.now() - start);
    }
    // Speed is measured by `npm run bench`; this test proves the output is exact and prints the times.
    console.info(
      `entire/detect, ${POINTS} points, ${(res.body.length / 1024).toFixed(0)} KiB: writer median ${median(writerMs.slice(5)).toFixed(2)} ms` +
        ` (JSON.stringify and encoding median ${median(stringifyMs.slice(5)).toFixed(2)} ms)`,
    );
  });

  it('a result that breaks the contract is a 500 in the vendor shape, not a body with null in it', async () => {
    broken = { expectedValues: result.expectedValues.map((v, i) => (i === POINTS - 1 ? Number.NaN : v)) };
    try {
      const res = await post(app, ENTIRE, { series: dailySeries(POINTS) });
      expect(res.statusCode).toBe(500);
      expect(res.headers['x-ms-error-code']).toBe('InternalServerError');
      expect(res.json()).toEqual({ code: 'InternalServerError', message: expect.any(String) });
    } finally {
      broken = null;
    }
  });
});
