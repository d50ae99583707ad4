import { describe, expect, it } from 'vitest';
import { detectPeriod, granularityPeriods, STREAM_DEFAULTS, suggestedWindow, vendorSuggestedWindow } from '../src/index.js';
import { cyclePredictionScorer, seasonalFitScore, seasonalFitScorer } from '../src/period.js';
import type { Granularity } from '../src/types.js';
import { gaussian, noiseSeries, sineSeries } from './helpers.js';

describe('detectPeriod', () => {
  it.each([7, 12, 24])('finds period %i in sine + noise without a granularity hint', (period) => {
    for (const seed of [1, 2, 3]) {
      const values = sineSeries(Math.max(6 * period, 60), { period, noise: 3, seed });
      expect(detectPeriod(values, 'none', 1), `seed ${seed}`).toBe(period);
    }
  });

  it('finds a long period in sine + noise within one lag without a hint, exactly with one', () => {
    // Six cycles of 168 in noise: the lag whose cycles predict each other best is 168 or, where
    // the noise favours it, one off (seed 1: 169). Hourly data declared as such gets 168 from
    // the granularity's candidates.
    const found = [1, 2, 3].map((seed) => detectPeriod(sineSeries(6 * 168, { period: 168, noise: 3, seed }), 'none', 1));
    for (const period of found) expect(Math.abs(period - 168), `found ${found.join(', ')}`).toBeLessThanOrEqual(1);
    expect(found.filter((period) => period === 168).length).toBeGreaterThanOrEqual(2);
    for (const seed of [1, 2, 3]) expect(detectPeriod(sineSeries(6 * 168, { period: 168, noise: 3, seed }), 'hourly', 1)).toBe(168);
  });

  it('finds the exact period of a non-sinusoidal cycle wherever the window starts', () => {
    // A daily square-ish wave of 5-minute points (NAB's art_daily_*): the sinusoid's best lag
    // wandered from 282 to 294 with the window's position; the seasonal-fit check of nearby lags
    // settles on 288.
    const draw = gaussian(21);
    const values = Array.from({ length: 4000 }, (_, i) => {
      const phase = i % 288;
      return (phase >= 108 && phase < 216 ? 80 : 20) + 0.5 * draw();
    });
    for (const from of [0, 37, 150, 290, 1000, 2500]) {
      expect(detectPeriod(values.slice(from, from + 1152), 'none', 1), `from ${from}`).toBe(288);
    }
  });

  it('keeps the exact period while one anomalous day is in the window', () => {
    // The same wave with one day raised by 20 for 9 hours, or flat all day (as NAB's
    // art_daily_jumpsup and art_daily_flatmiddle): the sinusoid's lag follows the anomalous day
    // while it is in the window; each point against the median of its phase in the other days
    // does not.
    for (const anomaly of ['raised', 'flat'] as const) {
      const draw = gaussian(5);
      const values = Array.from({ length: 4000 }, (_, i) => {
        const phase = i % 288;
        const day = Math.floor(i / 288);
        if (day === 10 && anomaly === 'flat') return 50 + 0.5 * draw();
        const raised = day === 10 && phase >= 60 && phase < 168 ? 20 : 0;
        return (phase >= 108 && phase < 216 ? 80 : 20) + raised + 0.5 * draw();
      });
      for (let end = 3000; end <= 4000; end += 50) {
        expect(detectPeriod(values.slice(end - 1153, end), 'none', 1, true, 2), `${anomaly}, window ending ${end}`).toBe(288);
      }
    }
  });

  it('uses the granularity candidates: a week of days, a day of hours, a year of months', () => {
    expect(detectPeriod(sineSeries(60, { period: 7, noise: 3 }), 'daily', 1)).toBe(7);
    expect(detectPeriod(sineSeries(24 * 14, { period: 24, noise: 3 }), 'hourly', 1)).toBe(24);
    expect(detectPeriod(sineSeries(48, { period: 12, noise: 2 }), 'monthly', 1)).toBe(12);
    // 5-minute data: a day is 288 points.
    expect(detectPeriod(sineSeries(8640, { period: 288, noise: 3 }), 'minutely', 5)).toBe(288);
  });

  it('prefers the daily cycle of hourly data unless a weekly pattern adds to it', () => {
    expect(detectPeriod(sineSeries(24 * 60, { period: 24, noise: 3 }), 'hourly', 1)).toBe(24);
    const draw = gaussian(9);
    const weekly = Array.from(
      { length: 24 * 28 },
      (_, i) => 100 + 10 * Math.sin((2 * Math.PI * i) / 24) + (Math.floor(i / 24) % 7 >= 5 ? -15 : 0) + 2 * draw(),
    );
    expect(detectPeriod(weekly, 'hourly', 1)).toBe(168);
  });

  it('refines to the fundamental when the cycle has a strong harmonic', () => {
    const draw = gaussian(4);
    const values = Array.from(
      { length: 240 },
      (_, i) => 10 * Math.sin((2 * Math.PI * i) / 24) + 8 * Math.sin((4 * Math.PI * i) / 24) + draw(),
    );
    expect(detectPeriod(values, 'none', 1)).toBe(24);
  });

  it('finds no period in noise, random walks, trends and level shifts', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      expect(detectPeriod(noiseSeries(500, seed), 'none', 1)).toBe(0);
      expect(detectPeriod(noiseSeries(500, seed), 'hourly', 1)).toBe(0);
      const step = gaussian(seed);
      let level = 0;
      expect(detectPeriod(Array.from({ length: 500 }, () => (level += step())), 'none', 1)).toBe(0);
    }
    const draw = gaussian(7);
    expect(detectPeriod(Array.from({ length: 300 }, (_, i) => i + draw()), 'none', 1)).toBe(0);
    expect(detectPeriod(Array.from({ length: 300 }, (_, i) => (i > 150 ? 10 : 0) + draw()), 'none', 1)).toBe(0);
    expect(detectPeriod(new Array<number>(100).fill(5), 'daily', 1)).toBe(0);
    expect(detectPeriod([1, 2, 3], 'none', 1)).toBe(0);
  });

  it('needs at least 3 cycles from the data-driven search', () => {
    // Two and a half cycles of period 40 and no granularity hint: not enough evidence.
    expect(detectPeriod(sineSeries(100, { period: 40, noise: 1 }), 'none', 1)).toBe(0);
  });

  it('accepts 2 full cycles when asked to (last-point histories), and still nothing in noise', () => {
    // The same two and a half cycles: enough for the out-of-sample fit of one cycle on the other.
    expect(detectPeriod(sineSeries(100, { period: 40, noise: 1 }), 'none', 1, true, 2)).toBe(40);
    // Below 2 cycles there is nothing to fit out of sample: 2 is the floor.
    expect(detectPeriod(sineSeries(70, { period: 40, noise: 1 }), 'none', 1, true, 1)).toBe(0);
    for (const seed of [1, 2, 3, 4, 5]) {
      expect(detectPeriod(noiseSeries(500, seed), 'none', 1, true, 2)).toBe(0);
      const step = gaussian(seed);
      let level = 0;
      expect(detectPeriod(Array.from({ length: 500 }, () => (level += step())), 'none', 1, true, 2)).toBe(0);
      const draw = gaussian(seed + 10);
      expect(detectPeriod(Array.from({ length: 300 }, (_, i) => i + draw()), 'none', 1, true, 2)).toBe(0);
      expect(detectPeriod(Array.from({ length: 300 }, (_, i) => (i > 150 ? 10 : 0) + draw()), 'none', 1, true, 2)).toBe(0);
    }
  });

  it('lists granularity candidates in points', () => {
    expect(granularityPeriods('hourly', 1)).toEqual([24, 168]);
    expect(granularityPeriods('minutely', 5)).toEqual([288, 576, 2016]);
    expect(granularityPeriods('hourly', 5)).toEqual([]);
    expect(granularityPeriods('yearly', 1)).toEqual([]);
  });
});

describe('suggestedWindow', () => {
  // [period, granularity, the vendor's suggestion, ours: at least the worker's 720, at most 8,640]
  const CASES: readonly [number, Granularity, number, number][] = [
    [12, 'none', 49, 720],
    [12, 'daily', 49, 720],
    [0, 'none', 1441, 720],
    [0, 'minutely', 1441, 720],
    [0, 'hourly', 169, 720],
    [0, 'daily', 29, 720],
    [0, 'monthly', 13, 720],
    [0, 'microsecond', 1001, 720],
    [179, 'none', 717, 720],
    [180, 'none', 721, 721],
    [288, 'none', 1153, 1153],
    [2159, 'none', 8637, 8637],
    [2160, 'none', 8641, 8640],
    [4000, 'none', 16001, 8640],
  ];

  it("is four periods and one point (the vendor's rule), at least the worker's window and at most a request; the worker's window without a period", () => {
    expect(STREAM_DEFAULTS.windowPoints).toBe(720);
    expect(STREAM_DEFAULTS.memoryPoints).toBe(8640);
    for (const [period, granularity, vendor, ours] of CASES) {
      expect(vendorSuggestedWindow(period, granularity), `${period} ${granularity}`).toBe(vendor);
      expect(suggestedWindow(period, granularity), `${period} ${granularity}`).toBe(ours);
    }
  });
});

/** The median of `v`, by sorting. */
function median(v: readonly number[]): number {
  const s = [...v].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** `x` less the full-period moving average around each point, clamped to the series. */
function lessPeriodAverage(x: readonly number[], p: number): number[] {
  const n = x.length;
  return x.map((v, i) => {
    const start = Math.min(Math.max(i - Math.floor(p / 2), 0), n - p);
    let sum = 0;
    for (let j = start; j < start + p; j++) sum += x[j]!;
    return v - sum / p;
  });
}

/** seasonalFitScore written out from its definition, sorting for the medians. */
function fitByDefinition(x: readonly number[], p: number): number {
  const n = x.length;
  if (p < 2 || n < 2 * p) return Number.NEGATIVE_INFINITY;
  const detrended = lessPeriodAverage(x, p);
  // Winsorised at 5 robust standard deviations around the median.
  const center = median(detrended);
  const limit = 5 * 1.4826 * median(detrended.map((v) => Math.abs(v - center)));
  const d = limit > 0 ? detrended.map((v) => Math.min(Math.max(v, center - limit), center + limit)) : detrended;
  // Phase means of the even and of the odd cycles; each point predicted by the other parity's.
  const means = [new Map<number, number[]>(), new Map<number, number[]>()];
  d.forEach((v, i) => {
    const bucket = means[Math.floor(i / p) % 2]!;
    bucket.set(i % p, [...(bucket.get(i % p) ?? []), v]);
  });
  const mean = d.reduce((a, b) => a + b, 0) / n;
  let sse = 0;
  let sst = 0;
  d.forEach((v, i) => {
    const other = means[1 - (Math.floor(i / p) % 2)]!.get(i % p);
    if (other === undefined) return;
    sse += (v - other.reduce((a, b) => a + b, 0) / other.length) ** 2;
    sst += (v - mean) ** 2;
  });
  return sst > 0 ? 1 - sse / sst : 0;
}

describe('seasonalFitScore', () => {
  it('equals its definition for many series and periods, through one scorer per series', () => {
    const draw = gaussian(5);
    for (const [n, cycle] of [[60, 7], [97, 12], [288, 24], [1000, 48], [719, 288]] as const) {
      const values = Array.from({ length: n }, (_, i) => 3 * Math.sin((2 * Math.PI * i) / cycle) + draw() + (i === 20 ? 40 : 0));
      const scorer = seasonalFitScorer(values);
      for (let p = 1; p <= Math.floor(n / 2) + 1; p += p < 30 ? 1 : 7) {
        const expected = fitByDefinition(values, p);
        expect(scorer(p), `n ${n} p ${p}`).toBeCloseTo(expected, 10);
        expect(seasonalFitScore(values, p), `n ${n} p ${p}`).toBe(scorer(p));
      }
    }
  });

  it('is 1 for an exact cycle, about 0 or below for noise, 0 for a constant and -Infinity without two cycles', () => {
    const square = Array.from({ length: 240 }, (_, i) => (i % 24 < 12 ? 5 : -5));
    expect(seasonalFitScore(square, 24)).toBe(1);
    expect(seasonalFitScore(noiseSeries(500, 3, 0, 1), 24)).toBeLessThan(0.05);
    expect(seasonalFitScore(new Array(100).fill(7), 10)).toBe(0);
    expect(seasonalFitScore(square, 121)).toBe(Number.NEGATIVE_INFINITY);
    expect(seasonalFitScore(square, 1)).toBe(Number.NEGATIVE_INFINITY);
  });
});

/** cyclePredictionScorer written out from its definition, sorting for every median. */
function cyclePredictionByDefinition(x: readonly number[], p: number): number {
  if (p < 2 || x.length < 2 * p) return Number.NEGATIVE_INFINITY;
  const d = lessPeriodAverage(x, p);
  const centre = median(d);
  let error = 0;
  let spread = 0;
  d.forEach((v, i) => {
    const others = d.filter((_, j) => j !== i && j % p === i % p);
    if (others.length === 0) return;
    error += Math.abs(v - median(others));
    spread += Math.abs(v - centre);
  });
  return spread > 0 ? 1 - error / spread : 0;
}

describe('cyclePredictionScorer', () => {
  it('equals its definition for many series and periods', () => {
    const draw = gaussian(8);
    for (const [n, cycle] of [[60, 7], [97, 12], [288, 24], [719, 288]] as const) {
      const values = Array.from({ length: n }, (_, i) => 3 * Math.sin((2 * Math.PI * i) / cycle) + draw() + (i === 20 ? 40 : 0));
      const scorer = cyclePredictionScorer(values);
      for (let p = 1; p <= Math.floor(n / 2) + 1; p += p < 30 ? 1 : 7) {
        expect(scorer(p), `n ${n} p ${p}`).toBeCloseTo(cyclePredictionByDefinition(values, p), 10);
      }
    }
  });

  it('is 1 for an exact cycle, about 0 or below for noise, 0 for a constant and -Infinity without two cycles', () => {
    const square = Array.from({ length: 240 }, (_, i) => (i % 24 < 12 ? 5 : -5));
    const scorer = cyclePredictionScorer(square);
    expect(scorer(24)).toBe(1);
    expect(scorer(25)).toBeLessThan(0.9);
    expect(cyclePredictionScorer(noiseSeries(500, 3, 0, 1))(24)).toBeLessThan(0.05);
    expect(cyclePredictionScorer(new Array(100).fill(7))(10)).toBe(0);
    expect(scorer(121)).toBe(Number.NEGATIVE_INFINITY);
    expect(scorer(1)).toBe(Number.NEGATIVE_INFINITY);
  });
});
