// The fast road for POST /v1/jobs JSON bodies (apps/api/src/jobs/json-scan.ts): for every body it
// takes, the same ParsedJobRequest as JSON.parse and parseJobRequest (values bit for bit, timestamps,
// options, machine ids); every body of another shape, or one the ordinary road refuses, it leaves
// to the ordinary road (which then gives the coded errors that jobs-requests.test.ts checks).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseIsoTimestamp } from '@adp/detection';
import { acceptScanned, parseJobBody, scanJobJson } from '../src/jobs/json-scan.js';
import { SeriesPrescan } from '../src/jobs/json-points.js';
import { checkJobRequest } from '../src/jobs/check.js';
import { parseJobRequest } from '../src/jobs/request.js';
import { AppError } from '../src/errors.js';

const LIMITS = { maxPoints: 10_000, maxSeries: 10 };
const T0 = Date.UTC(2025, 0, 1);

function fast(text: string) {
  const scanned = scanJobJson(Buffer.from(text), parseIsoTimestamp);
  return scanned === null ? null : acceptScanned(scanned, LIMITS, parseIsoTimestamp, checkJobRequest);
}

function slow(text: string) {
  return parseJobRequest(checkJobRequest(JSON.parse(text)), LIMITS, parseIsoTimestamp);
}

/** The fast road took the body and read it exactly as the ordinary road does. */
function expectSame(text: string): void {
  const taken = fast(text);
  expect(taken).not.toBeNull();
  const ordinary = slow(text);
  expect(taken!.options).toEqual(ordinary.options);
  expect(taken!.points).toBe(ordinary.points);
  expect(taken!.sensitivityGiven).toBe(ordinary.sensitivityGiven);
  expect(taken!.series.length).toBe(ordinary.series.length);
  taken!.series.forEach((one, index) => {
    const other = ordinary.series[index]!;
    expect(one.machineId).toBe(other.machineId);
    expect(one.timestampsMs).toEqual(other.timestampsMs);
    expect(one.values.length).toBe(other.values.length);
    // Bit for bit, -0 included.
    one.values.forEach((value, i) => expect(Object.is(value, other.values[i])).toBe(true));
  });
}

function points(values: readonly string[], timestamp = (i: number) => new Date(T0 + i * 60_000).toISOString()): string {
  return `[${values.map((value, i) => `{"timestamp":"${timestamp(i)}","value":${value}}`).join(',')}]`;
}

const numbers = (count: number, at: (i: number) => number) => Array.from({ length: count }, (_, i) => String(at(i)));

describe('POST /v1/jobs JSON bodies read without JSON.parse', () => {
  it('reads values as JSON.parse does: integers, decimals, exponents, 17 significant digits, -0', () => {
    const texts = [
      '0', '-0', '-0.0', '1', '-17', '100.5', '0.1', '0.30000000000000004', '123456789012345', '1234567890123456789',
      '1e3', '1E-7', '-2.5e+10', '1e100', '-1e100', '9007199254740993', '0.000001', '3.141592653589793', '100.83574120381024',
      '99999999999999.99', '0.1234567890123456789', '12.0000000000000000000000001',
    ];
    const values = Array.from({ length: 24 }, (_, i) => texts[i % texts.length]!);
    expectSame(`{"granularity":"minutely","series":${points(values)}}`);
  });

  it('reads any double the way JSON.parse reads its shortest text (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e100, max: 1e100 }), { minLength: 12, maxLength: 40 }),
        fc.array(fc.integer({ min: -99_999_999, max: 99_999_999 }), { minLength: 12, maxLength: 12 }),
        fc.integer({ min: 0, max: 6 }),
        (doubles, integers, decimals) => {
          expectSame(`{"series":${points(doubles.map(String))},"granularity":"minutely"}`);
          // Short decimals, the usual sensor readings: computed without JSON.parse.
          expectSame(`{"series":${points(integers.map((n) => (n / 10 ** decimals).toFixed(decimals)))},"granularity":"minutely"}`);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('reads timestamps as the ordinary road does: fractions, lower-case z, offsets, dates alone, leap days', () => {
    const forms = [
      (ms: number) => new Date(ms).toISOString(),
      (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z'),
      (ms: number) => new Date(ms).toISOString().replace('Z', '0000z'),
      (ms: number) => new Date(ms).toISOString().replace('.000Z', '+00:00'),
    ];
    for (const form of forms) {
      expectSame(`{"granularity":"minutely","series":${points(numbers(20, (i) => i), (i) => form(Date.UTC(2024, 1, 29, 23, 50) + i * 60_000))}}`);
    }
    expectSame(`{"granularity":"daily","series":${points(numbers(14, (i) => i), (i) => new Date(Date.UTC(2024, 1, 20 + i)).toISOString().slice(0, 10))}}`);
  });

  it('takes whitespace, either field order, options anywhere and several series', () => {
    const spaced = ` {\n "machine_id" : "press-1" ,\n "series" : [ ${numbers(12, (i) => i * 1.5)
      .map((value, i) => `{ "value" : ${value} ,\t"timestamp" : "${new Date(T0 + i * 3_600_000).toISOString()}" }`)
      .join(' ,\r\n ')} ] , "granularity" : "hourly", "sensitivity": 80, "period": 0 } `;
    expectSame(spaced);
    const list = `{"granularity":"minutely","maxAnomalyRatio":0.1,"series_list":[${['a', 'b', 'c']
      .map((machine, k) => `{"series":${points(numbers(12 + k, (i) => k * 100 + i))},"machine_id":"pump-${machine}"}`)
      .join(',')}]}`;
    expectSame(list);
    expect(fast(list)!.series.map((one) => one.machineId)).toEqual(['pump-a', 'pump-b', 'pump-c']);
  });

  it('steps aside for bodies of another shape, so the ordinary road decides', () => {
    const good = points(numbers(12, (i) => i));
    const others = [
      `{"granularity":"minutely","series":${good.replace('"value":0}', '"value":0,"note":"x"}')}}`,
      `{"granularity":"minutely","series":${good.replace('"value":0', '"value":"0"')}}`,
      `{"granularity":"minutely","series":${good.replace('"value":0', '"value":null')}}`,
      `{"granularity":"minutely","series":${good.replace('"value":1', '"value":01')}}`,
      `{"granularity":"minutely","series":${good.replace('"value":1', '"value":1.')}}`,
      `{"granularity":"minutely","series":${good.replace('"value":1', '"value":1e400')}}`,
      `{"granularity":"minutely","series":${good.replace('"value":1', '"value":1e101')}}`,
      `{"granularity":"minutely","series":${good.replace('"value":1', '"value":1,"value":2')}}`,
      `{"granularity":"minutely","series":${good.replace('"timestamp":"2025', '"timestamp":"\\u0032025')}}`,
      `{"granularity":"minutely","series":${good.replace('2025-01-01T00:01', '2025-02-30T00:01')}}`,
      `{"granularity":"minutely","series":${good},"series":${good}}`,
      `{"granularity":"minutely","series":${good},"__proto__":{"x":1}}`,
      `{"granularity":"minutely","series":${good}`,
      `{"granularity":"minutely","series":${good}} x`,
      `{"granularity":"minutely","series":${points(numbers(11, (i) => i))}}`,
      `{"granularity":"minutely","series":${good},"series_list":[]}`,
      `{"granularity":"minutely","series":{"channels":{}}}`,
      `[${good}]`,
    ];
    for (const text of others) {
      const scanned = scanJobJson(Buffer.from(text), parseIsoTimestamp);
      expect(scanned === null || acceptScanned(scanned, LIMITS, parseIsoTimestamp, checkJobRequest) === null, text.slice(0, 120)).toBe(true);
    }
  });

  it('leaves refusals to the ordinary road: the same coded error naming the series and the point', () => {
    const descending = points(numbers(12, (i) => i), (i) => new Date(T0 - i * 60_000).toISOString());
    const tooBig = points(numbers(12, (i) => (i === 5 ? 1e101 : i)));
    for (const text of [
      `{"granularity":"minutely","series":${descending}}`,
      `{"granularity":"minutely","series_list":[{"machine_id":"a","series":${points(numbers(12, (i) => i))}},{"machine_id":"b","series":${tooBig}}]}`,
      `{"granularity":"fortnightly","series":${points(numbers(12, (i) => i))}}`,
    ]) {
      const scanned = scanJobJson(Buffer.from(text), parseIsoTimestamp);
      const viaScan = (() => {
        try {
          return parseJobBody(scanned ?? checkJobRequest(JSON.parse(text)), LIMITS, parseIsoTimestamp, checkJobRequest);
        } catch (err) {
          return err;
        }
      })();
      const ordinary = (() => {
        try {
          return slow(text);
        } catch (err) {
          return err;
        }
      })();
      expect(viaScan).toBeInstanceOf(AppError);
      expect({ code: (viaScan as AppError).code, message: (viaScan as AppError).message }).toEqual({
        code: (ordinary as AppError).code,
        message: (ordinary as AppError).message,
      });
    }
  });
});

/** The body cut into chunks at `cuts` (offsets), fed to a prescan as an upload would. */
function prescanned(text: string, cuts: readonly number[]): { raw: Buffer; prescan: SeriesPrescan } {
  const raw = Buffer.from(text);
  const prescan = new SeriesPrescan(parseIsoTimestamp);
  let from = 0;
  for (const cut of [...new Set(cuts.map((c) => c % (raw.length + 1)))].sort((a, b) => a - b)) {
    // Each chunk a copy, as the socket gives it.
    prescan.feed(Buffer.from(raw.subarray(from, cut)));
    from = cut;
  }
  prescan.feed(Buffer.from(raw.subarray(from)));
  return { raw, prescan };
}

describe('POST /v1/jobs JSON bodies read while they upload', () => {
  const series = (count: number, at: (i: number) => number) => points(numbers(count, at));
  const bodies = [
    `{"granularity":"minutely","series":${series(40, (i) => 100 + Math.sin(i) * 10)}}`,
    `{"series" : [ ${numbers(30, (i) => i / 7)
      .map((value, i) => `{ "value" : ${value} , "timestamp" : "${new Date(T0 + i * 60_000).toISOString()}" }`)
      .join(' ,\n ')} ] , "granularity":"minutely", "machine_id": "a \\"series\\": [" }`,
    `{"granularity":"minutely","series_list":[${[0, 1, 2].map((k) => `{"machine_id":"m-${k}","series":${series(20 + k, (i) => i * 1e-7 + k)}}`).join(',')}]}`,
    `{"machine_id":"series","granularity":"minutely","series":${series(25, (i) => (i % 5 === 0 ? 1e50 * i : i))}}`,
    // A point longer than the prescan holds back: it stops there, and the scanner reads the rest.
    `{"granularity":"minutely","series":${series(20, (i) => i).replace('"value":5}', `"value":5${' '.repeat(5000)}}`)}}`,
  ];

  it('gives what the scanner alone gives, however the body is cut, and reads points ahead (property)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...bodies), fc.array(fc.nat(), { maxLength: 40 }), (text, cuts) => {
        const { raw, prescan } = prescanned(text, cuts);
        const alone = scanJobJson(raw, parseIsoTimestamp);
        const ahead = scanJobJson(raw, parseIsoTimestamp, prescan);
        expect(alone).not.toBeNull();
        expect(ahead).toEqual(alone);
        ahead!.series.forEach((one, k) => one.values.forEach((value, i) => expect(Object.is(value, alone!.series[k]!.values[i])).toBe(true)));
      }),
      { numRuns: 300 },
    );
    // Cut into 64-byte chunks: every point was read ahead and taken, but where the prescan stopped.
    for (const text of bodies) {
      const { raw, prescan } = prescanned(text, Array.from({ length: Math.ceil(text.length / 64) }, (_, i) => i * 64));
      let taken = 0;
      const take = prescan.take.bind(prescan);
      prescan.take = (at) => {
        const run = take(at);
        taken += run?.read.values.length ?? 0;
        return run;
      };
      const scanned = scanJobJson(raw, parseIsoTimestamp, prescan);
      expect(scanned).toEqual(scanJobJson(raw, parseIsoTimestamp));
      const total = scanned!.series.reduce((sum, one) => sum + one.values.length, 0);
      if (text === bodies[4]) expect(taken).toBe(5);
      else expect(taken).toBe(total);
    }
  });

  it('hands a run to the scanner only where its array is, and only once', () => {
    const text = bodies[0]!;
    const { raw, prescan } = prescanned(text, [10, 100, 1000]);
    const open = text.indexOf('[');
    expect(prescan.take(open + 1)).toBeUndefined();
    const run = prescan.take(open);
    expect(run?.read.values.length).toBe(40);
    expect(run?.closedAt).toBe(text.length - 1);
    expect(prescan.take(open)).toBeUndefined();
    // Without its run the scanner reads the array itself, to the same result.
    expect(scanJobJson(raw, parseIsoTimestamp, prescan)).toEqual(scanJobJson(raw, parseIsoTimestamp));
  });

  it('steps aside for the same bodies as the scanner alone, however they are cut (property)', () => {
    const good = points(numbers(12, (i) => i));
    const others = [
      `{"granularity":"minutely","series":${good.replace('"value":5}', '"value":5,"note":"x"}')}}`,
      `{"granularity":"minutely","series":${good.replace('"value":5', '"value":"5"')}}`,
      `{"granularity":"minutely","series":${good.replace('"value":5', '"value":1e400')}}`,
      `{"granularity":"minutely","series":${good.replace('"value":5', '"value":1e101')}}`,
      `{"granularity":"minutely","series":${good.replace('2025-01-01T00:05', '2025-02-30T00:05')}}`,
      `{"granularity":"minutely","series":${good}`,
      `{"granularity":"minutely","series":${good.slice(0, -1)}`,
      `{"granularity":"minutely","series":${good}} x`,
      `{"granularity":"minutely","series":${good.replace('},{', '}{')}}`,
    ];
    fc.assert(
      fc.property(fc.constantFrom(...others), fc.array(fc.nat(), { maxLength: 20 }), (text, cuts) => {
        const { raw, prescan } = prescanned(text, cuts);
        const alone = scanJobJson(raw, parseIsoTimestamp);
        const ahead = scanJobJson(raw, parseIsoTimestamp, prescan);
        expect(ahead).toEqual(alone);
        expect(alone === null || acceptScanned(alone, LIMITS, parseIsoTimestamp, checkJobRequest) === null, text.slice(0, 80)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
