// The vendor routes over the real engine: timestamp forms, the engine's series errors, and the
// request fields that must change the result (imputeMode, sensitivity, maxAnomalyRatio, period).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildVendorTestApp, dailySeries, post } from './fixtures/vendor/harness.js';

const ENTIRE = '/anomalydetector/v1.1/timeseries/entire/detect';
const LAST = '/anomalydetector/v1.1/timeseries/last/detect';
const CHANGEPOINT = '/anomalydetector/v1.1/timeseries/changepoint/detect';
const DAY_MS = 86_400_000;

interface EntireBody {
  period: number;
  expectedValues: number[];
  upperMargins: number[];
  lowerMargins: number[];
  isAnomaly: boolean[];
  severity: number[];
}

let app: FastifyInstance;

beforeAll(async () => {
  ({ app } = await buildVendorTestApp()); // the real engine
});
afterAll(async () => {
  await app.close();
});

async function entire(payload: unknown): Promise<EntireBody> {
  const res = await post(app, ENTIRE, payload);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as EntireBody;
}

async function expectSeriesError(path: string, payload: unknown, code: string, message: string | RegExp): Promise<void> {
  const res = await post(app, path, payload);
  expect(res.statusCode, res.body).toBe(400);
  expect(res.headers['x-ms-error-code']).toBe(code);
  const json = res.json() as { code: string; message: string };
  expect(json.code).toBe(code);
  if (typeof message === 'string') expect(json.message).toBe(message);
  else expect(json.message).toMatch(message);
}

describe('timestamp forms clients send', () => {
  const base = dailySeries(35);
  const at = (i: number): number => Date.parse(base[i]!.timestamp);
  const forms: Record<string, (i: number) => string> = {
    Z: (i) => new Date(at(i)).toISOString().replace('.000Z', 'Z'),
    '.000Z (JS SDKs)': (i) => new Date(at(i)).toISOString(),
    '.0000000Z (.NET SDK)': (i) => new Date(at(i)).toISOString().replace('.000Z', '.0000000Z'),
    '+00:00': (i) => new Date(at(i)).toISOString().replace('.000Z', '+00:00'),
    '+02:00 (same instants)': (i) => `${new Date(at(i) + 2 * 3_600_000).toISOString().slice(0, 19)}+02:00`,
  };

  it('all give the same result for the same instants', async () => {
    const bodies = new Set<string>();
    for (const [name, form] of Object.entries(forms)) {
      const series = base.map((point, i) => ({ timestamp: form(i), value: point.value }));
      const res = await post(app, ENTIRE, { series, granularity: 'daily' });
      expect(res.statusCode, `${name}: ${res.body}`).toBe(200);
      bodies.add(res.body);
    }
    expect(bodies.size).toBe(1);
  });
});

describe("the engine's series errors come back as 400s", () => {
  it('unsorted timestamps', async () => {
    const series = dailySeries(30);
    [series[10], series[11]] = [series[11]!, series[10]!];
    await expectSeriesError(ENTIRE, { series, granularity: 'daily' }, 'InvalidSeries', 'Series timestamps must be sorted');
  });

  it('duplicate timestamps', async () => {
    const series = dailySeries(30);
    series[12]!.timestamp = series[11]!.timestamp;
    await expectSeriesError(LAST, { series, granularity: 'daily' }, 'InvalidSeries', 'Duplicate timestamps');
  });

  it('granularity none still refuses unsorted timestamps when every point has one', async () => {
    const series = dailySeries(30);
    [series[3], series[4]] = [series[4]!, series[3]!];
    await expectSeriesError(ENTIRE, { series }, 'InvalidSeries', 'Series timestamps must be sorted');
    // ... and ignores them once one point has none.
    delete (series[0] as { timestamp?: string }).timestamp;
    expect((await entire({ series })).expectedValues).toHaveLength(30);
  });

  it('misaligned timestamps', async () => {
    const series = dailySeries(30);
    series[7]!.timestamp = new Date(Date.parse(series[7]!.timestamp) + 3_600_000).toISOString();
    await expectSeriesError(
      ENTIRE,
      { series, granularity: 'daily' },
      'InvalidSeries',
      "The 'timestamp' at index 7 is invalid in daily granularity with 1 gran as interval.",
    );
  });

  it('a period too long for the series', async () => {
    await expectSeriesError(
      CHANGEPOINT,
      { series: dailySeries(30), granularity: 'daily', period: 20 },
      'InvalidModelArgument',
      "The 'series' field must have more than 2 periods points",
    );
  });
});

/**
 * 70 days of weekly pattern on a trend, with days 30..35 missing. A little deterministic noise:
 * on a noiseless series the robust (median-based) fit is the same whatever fills the gap.
 */
function seriesWithGap(): { timestamp: string; value: number }[] {
  const start = Date.UTC(2024, 0, 1);
  const points: { timestamp: string; value: number }[] = [];
  for (let i = 0; i < 70; i++) {
    if (i >= 30 && i <= 35) continue;
    const weekly = [0, 12, 20, 18, 9, -25, -30][i % 7]!;
    const noise = 3 * Math.sin(i * 12.9898) * Math.cos(i * 78.233);
    points.push({ timestamp: new Date(start + i * DAY_MS).toISOString(), value: 200 + i * 1.5 + weekly + noise });
  }
  return points;
}

describe('request fields change the result', () => {
  it('imputeMode: previous and linear fill a gap differently, and the gap is not reported', async () => {
    const series = seriesWithGap();
    const common = { series, granularity: 'daily', period: 7 };
    const previous = await entire({ ...common, imputeMode: 'previous' });
    const linear = await entire({ ...common, imputeMode: 'linear' });
    expect(previous.expectedValues).toHaveLength(series.length);
    expect(linear.expectedValues).toHaveLength(series.length);
    expect(previous.expectedValues).not.toEqual(linear.expectedValues);
  });

  it('imputeMode fixed: the fill value matters', async () => {
    const series = seriesWithGap();
    const low = await entire({ series, granularity: 'daily', period: 7, imputeMode: 'fixed', imputeFixedValue: 0 });
    const high = await entire({ series, granularity: 'daily', period: 7, imputeMode: 'fixed', imputeFixedValue: 5000 });
    expect(low.expectedValues).not.toEqual(high.expectedValues);
  });

  it('sensitivity: higher means narrower margins', async () => {
    const series = dailySeries(60);
    const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0);
    const loose = await entire({ series, granularity: 'daily', sensitivity: 10 });
    const tight = await entire({ series, granularity: 'daily', sensitivity: 99 });
    expect(sum(tight.upperMargins)).toBeLessThan(sum(loose.upperMargins));
  });

  it('maxAnomalyRatio caps the number of anomalies', async () => {
    const spikes = new Set([5, 17, 23, 41, 58, 66, 79, 90]);
    const series = dailySeries(100).map((point, i) => ({ ...point, value: spikes.has(i) ? point.value + 200 + i : point.value }));
    const many = await entire({ series, granularity: 'daily', period: 7, sensitivity: 99, maxAnomalyRatio: 0.4 });
    const few = await entire({ series, granularity: 'daily', period: 7, sensitivity: 99, maxAnomalyRatio: 0.02 });
    const count = (flags: boolean[]): number => flags.filter(Boolean).length;
    expect(count(few.isAnomaly)).toBeLessThanOrEqual(2);
    expect(count(many.isAnomaly)).toBeGreaterThan(count(few.isAnomaly));
  });

  it('period: used as given, and suggestedWindow follows it (4 periods + 1, at least 720 points)', async () => {
    const res = await post(app, LAST, { series: dailySeries(40), granularity: 'daily', period: 7 });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ period: 7, suggestedWindow: 720 });
    // 0 asks for detection, like an absent period: the same answer as without one.
    expect(await entire({ series: dailySeries(40), period: 0 })).toEqual(await entire({ series: dailySeries(40) }));
  });

  it('last/detect: a feed stuck below everything the window held is reported at its twelfth point, inside its band', async () => {
    // Hourly values 100..103 that never repeat, then 99.5 over and over: half a unit below the
    // older half's lowest value, well inside the band (the noise spread is about 0.9).
    const hours = (stuck: number): { timestamp: string; value: number }[] =>
      Array.from({ length: 300 }, (_, i) => ({
        timestamp: new Date(Date.UTC(2024, 0, 1) + i * 3_600_000).toISOString().replace('.000Z', 'Z'),
        value: i >= 300 - stuck ? 99.5 : 100 + 3 * ((Math.abs(Math.sin(i + 1)) * 1000) % 1),
      }));
    const last = async (stuck: number): Promise<Record<string, unknown>> => {
      const res = await post(app, LAST, { series: hours(stuck), granularity: 'hourly' });
      expect(res.statusCode, res.body).toBe(200);
      return res.json() as Record<string, unknown>;
    };
    const eleven = await last(11);
    expect(eleven).toMatchObject({ isAnomaly: false, isNegativeAnomaly: false, isPositiveAnomaly: false, severity: 0 });
    const twelve = await last(12);
    expect(twelve).toMatchObject({ isAnomaly: true, isNegativeAnomaly: true, isPositiveAnomaly: false });
    expect(Math.abs(99.5 - (twelve.expectedValue as number))).toBeLessThan(twelve.upperMargin as number);
    // Severity |excess| / (|excess| + 0.25), the excess below the older half's range in units of it.
    const older = hours(12).slice(0, 299 - Math.round(299 / 2)).map((p) => p.value);
    const lo = Math.min(...older);
    const excess = (lo - 99.5) / (Math.max(...older) - lo);
    expect(twelve.severity as number).toBeCloseTo(excess / (excess + 0.25), 12);
    // Thirteen: the run was reported once already.
    expect(await last(13)).toMatchObject({ isAnomaly: false });
  });

  it('last/detect: pastRange (not in the vendor API) silences a new level the series has been at before', async () => {
    // Two wiggles around 100, drifting down by 0.06 a point from point 250: the 277th point
    // (96.83) is the first beyond the older half's range by a quarter of it, inside its band.
    const values = Array.from({ length: 277 }, (_, i) => 100 + 1.2 * Math.sin(i * 1.7) + 0.8 * Math.sin(i * 0.31) - (i >= 250 ? 0.06 * (i - 250) : 0));
    const series = values.map((value) => ({ value }));
    const last = async (extra: Record<string, unknown>): Promise<Record<string, unknown>> => {
      const res = await post(app, LAST, { series, ...extra });
      expect(res.statusCode, res.body).toBe(200);
      return res.json() as Record<string, unknown>;
    };
    const alone = await last({});
    expect(alone).toMatchObject({ isAnomaly: true, isNegativeAnomaly: true, isPositiveAnomaly: false });
    expect(Math.abs(values[276]! - (alone.expectedValue as number))).toBeLessThan(alone.lowerMargin as number);
    // The series was as low as 90 before: not a new level. Never below 97: still one.
    const seen = await last({ pastRange: { min: 90, max: 110 } });
    expect(seen).toEqual({ ...alone, isAnomaly: false, isNegativeAnomaly: false, severity: 0 });
    expect(await last({ pastRange: { min: 97, max: 110 } })).toEqual(alone);
    // The field is last/detect's only: entire/detect answers the same with or without it.
    expect(await entire({ series, pastRange: { min: 90, max: 110 } })).toEqual(await entire({ series }));
  });

  it('last/detect: a request longer than its suggestedWindow is judged as that window with the rest as pastRange', async () => {
    // 3,000 points of noise without a period: wide (±15) over the first 2,000, quiet (±1.5)
    // after, and a last value 10 above the quiet level.
    const values = Array.from({ length: 3000 }, (_, i) => {
      const noise = ((Math.abs(Math.sin(i * 12.9898) * 43758.5453) % 1) - 0.5) * 3;
      return i === 2999 ? 110 : 100 + (i < 2000 ? 10 : 1) * noise;
    });
    const last = async (points: number[], extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> => {
      const res = await post(app, LAST, { series: points.map((value) => ({ value })), ...extra });
      expect(res.statusCode, res.body).toBe(200);
      return res.json() as Record<string, unknown>;
    };
    const whole = await last(values);
    expect(whole).toMatchObject({ period: 0, suggestedWindow: 720, isAnomaly: true, isPositiveAnomaly: true });
    const older = values.slice(0, 3000 - 720);
    const pastRange = { min: Math.min(...older), max: Math.max(...older) };
    expect(await last(values.slice(-720), { pastRange })).toEqual(whole);
    // A client's own pastRange joins the older points' range.
    expect(await last(values, { pastRange: { min: 50, max: 101 } })).toEqual(
      await last(values.slice(-720), { pastRange: { min: 50, max: pastRange.max } }),
    );
  });

  it('entire/detect: a reading pinned at 100 for 60 hours is reported once, at its first hour, judged against the level around it', async () => {
    // 3,000 hourly values around 50 that never repeat, 100 from hour 600 to 659: shorter than a
    // twentieth of the request (half the reference window), 2 % of it.
    const series = Array.from({ length: 3000 }, (_, i) => ({
      timestamp: new Date(Date.UTC(2024, 0, 1) + i * 3_600_000).toISOString().replace('.000Z', 'Z'),
      value: i >= 600 && i < 660 ? 100 : 50 + 2 * ((Math.abs(Math.sin(i + 1)) * 1000) % 1),
    }));
    const body = await entire({ series, granularity: 'hourly' });
    const flagged = body.isAnomaly.flatMap((a, i) => (a ? [i] : []));
    // One event: its first hour is reported; the others are the same event, inside margins widened to them.
    expect(flagged.filter((i) => i >= 590 && i < 670)).toEqual([600]);
    expect(100 - body.expectedValues[600]!).toBeGreaterThan(body.upperMargins[600]!);
    for (let i = 600; i < 660; i++) expect(Math.abs(body.expectedValues[i]! - 51)).toBeLessThan(2);
    // The same pin in a request of 1,000 hours lasts more than a twentieth of it: a level, not an excursion.
    const short = await entire({ series: series.slice(0, 1000), granularity: 'hourly' });
    expect(short.isAnomaly.slice(600, 660).filter(Boolean)).toHaveLength(0);
  });

  it('customInterval: a 2-day series is aligned on a 2-day grid', async () => {
    const series = dailySeries(60).filter((_, i) => i % 2 === 0);
    expect((await entire({ series, granularity: 'daily', customInterval: 2 })).expectedValues).toHaveLength(30);
    await expectSeriesError(ENTIRE, { series: dailySeries(30), granularity: 'daily', customInterval: 2 }, 'InvalidSeries', /index 1 is invalid in daily granularity with 2/);
  });
});
