import { describe, expect, it } from 'vitest';
import { alignSeries, SeriesError, type SeriesInput } from '../src/index.js';
import { gridInput, sineSeries } from './helpers.js';

const HOUR = 3_600_000;

function errorOf(fn: () => unknown): SeriesError {
  try {
    fn();
  } catch (err) {
    if (err instanceof SeriesError) return err;
    throw err;
  }
  throw new Error('expected a SeriesError');
}

function hourly(timestampsMs: number[], values?: number[], extra: Partial<SeriesInput> = {}): SeriesInput {
  return {
    timestampsMs,
    values: values ?? timestampsMs.map((_, i) => i),
    granularity: 'hourly',
    customInterval: 1,
    imputeMode: 'auto',
    ...extra,
  };
}

const t0 = Date.UTC(2024, 0, 1);
const hours = (...slots: number[]): number[] => slots.map((s) => t0 + s * HOUR);

describe('alignSeries: errors', () => {
  it('rejects unsorted timestamps', () => {
    const err = errorOf(() => alignSeries(hourly(hours(0, 2, 1, 3))));
    expect(err.code).toBe('InvalidSeries');
    expect(err.message).toBe('Series timestamps must be sorted');
  });

  it('rejects duplicate timestamps', () => {
    const err = errorOf(() => alignSeries(hourly(hours(0, 1, 1, 2))));
    expect(err.code).toBe('InvalidSeries');
    expect(err.message).toBe('Duplicate timestamps');
  });

  it('checks order and duplicates under granularity none too, when timestamps are given', () => {
    const input = { ...hourly(hours(0, 2, 1)), granularity: 'none' as const };
    expect(errorOf(() => alignSeries(input)).message).toBe('Series timestamps must be sorted');
  });

  it('rejects a timestamp off the grid, with the vendor message', () => {
    const ts = hours(0, 1, 2, 3);
    ts[2] = ts[2]! + 60_000;
    const err = errorOf(() => alignSeries(hourly(ts)));
    expect(err.code).toBe('InvalidSeries');
    expect(err.message).toBe("The 'timestamp' at index 2 is invalid in hourly granularity with 1 gran as interval.");
    const fiveMinute: SeriesInput = {
      timestampsMs: [0, 300_000, 660_000],
      values: [1, 2, 3],
      granularity: 'minutely',
      customInterval: 5,
      imputeMode: 'auto',
    };
    expect(errorOf(() => alignSeries(fiveMinute)).message).toBe(
      "The 'timestamp' at index 2 is invalid in minutely granularity with 5 gran as interval.",
    );
  });

  it('aligns relative to the first timestamp, not to calendar boundaries', () => {
    const start = Date.UTC(2024, 0, 1, 13);
    const daily: SeriesInput = {
      timestampsMs: [start, start + 86_400_000, start + 3 * 86_400_000],
      values: [1, 2, 4],
      granularity: 'daily',
      customInterval: 1,
      imputeMode: 'linear',
    };
    expect(Array.from(alignSeries(daily).values)).toEqual([1, 2, 3, 4]);
  });

  it('needs more than 2 periods of points for a given period', () => {
    const values = sineSeries(24, { period: 12 });
    const input = gridInput(values);
    const err = errorOf(() => alignSeries(input, 12));
    expect(err.code).toBe('InvalidModelArgument');
    expect(err.message).toBe("The 'series' field must have more than 2 periods points");
    expect(() => alignSeries(input, 11)).not.toThrow();
    // notFill counts points, not the span.
    const gappy = gridInput(sineSeries(30, { period: 6 }), { imputeMode: 'notFill', missing: new Set([3, 5, 7, 9, 11, 13, 15, 17, 19]) });
    expect(() => alignSeries(gappy, 10)).not.toThrow();
    expect(errorOf(() => alignSeries(gappy, 11)).code).toBe('InvalidModelArgument');
  });

  it('rejects a seasonal series with more than half its points missing when the period is given', () => {
    const missing = new Set(Array.from({ length: 60 }, (_, i) => i).filter((i) => i % 3 !== 0 && i !== 59));
    const input = gridInput(sineSeries(60, { period: 6 }), { missing });
    const err = errorOf(() => alignSeries(input, 6));
    expect(err.code).toBe('InvalidSeries');
    expect(err.message).toBe(
      'Ratio of missing points should be less than 50% for seasonal timeseries. There should be at least 30 points, but got 21 points.',
    );
  });
});

describe('alignSeries: grid and imputation', () => {
  const ts = hours(0, 1, 4, 5);
  const values = [10, 20, 50, 60];

  it('linear interpolates', () => {
    const p = alignSeries(hourly(ts, values, { imputeMode: 'linear' }));
    expect(Array.from(p.values)).toEqual([10, 20, 30, 40, 50, 60]);
    expect(Array.from(p.imputed)).toEqual([0, 0, 1, 1, 0, 0]);
    expect(Array.from(p.inputIndex)).toEqual([0, 1, 4, 5]);
    expect(p.expectedLength).toBe(6);
    expect(p.missingCount).toBe(2);
  });

  it('carries the previous value', () => {
    expect(Array.from(alignSeries(hourly(ts, values, { imputeMode: 'previous' })).values)).toEqual([10, 20, 20, 20, 50, 60]);
  });

  it('fills a fixed value, and zero', () => {
    expect(Array.from(alignSeries(hourly(ts, values, { imputeMode: 'fixed', imputeFixedValue: -1 })).values)).toEqual([
      10, 20, -1, -1, 50, 60,
    ]);
    expect(Array.from(alignSeries(hourly(ts, values, { imputeMode: 'zero' })).values)).toEqual([10, 20, 0, 0, 50, 60]);
    expect(errorOf(() => alignSeries(hourly(ts, values, { imputeMode: 'fixed' }))).code).toBe('InvalidModelArgument');
  });

  it('leaves the holes with notFill, keeping each point’s slot', () => {
    const p = alignSeries(hourly(ts, values, { imputeMode: 'notFill' }));
    expect(Array.from(p.values)).toEqual(values);
    expect(Array.from(p.slots)).toEqual([0, 1, 4, 5]);
    expect(Array.from(p.inputIndex)).toEqual([0, 1, 2, 3]);
    expect(p.filled).toBe(false);
  });

  it('auto: no fill when non-seasonal, linear while the period is unknown', () => {
    expect(alignSeries(hourly(ts, values, { imputeMode: 'auto' }), 0).filled).toBe(false);
    expect(Array.from(alignSeries(hourly(ts, values, { imputeMode: 'auto' })).values)).toEqual([10, 20, 30, 40, 50, 60]);
  });

  it('auto with a period fills seasonally: a gap over a peak gets the peak back', () => {
    const period = 8;
    const pattern = [0, 5, 10, 5, 0, -5, -10, -5];
    const full = Array.from({ length: 64 }, (_, i) => 100 + 0.1 * i + pattern[i % period]!);
    const missing = new Set([26, 27]); // phases 2 and 3: the peak and after
    const p = alignSeries(gridInput(full, { missing }), period);
    expect(p.values[26]).toBeCloseTo(full[26]!, 6);
    expect(p.values[27]).toBeCloseTo(full[27]!, 6);
    // Linear interpolation would have put 26 halfway between 25 (105) and 28 (100).
    const linear = alignSeries(gridInput(full, { missing, imputeMode: 'linear' }), period);
    expect(linear.values[26]!).toBeLessThan(full[26]! - 4);
  });

  it('does not fill grids longer than 17,280 slots', () => {
    const input = hourly(hours(0, 1, 20_000), [1, 2, 3], { imputeMode: 'linear' });
    const p = alignSeries(input);
    expect(p.filled).toBe(false);
    expect(p.expectedLength).toBe(20_001);
    expect(Array.from(p.slots)).toEqual([0, 1, 20_000]);
  });

  it('indexes points 0..n-1 without a grid', () => {
    const p = alignSeries({ timestampsMs: null, values: [3, 1, 2], granularity: 'hourly', customInterval: 1, imputeMode: 'linear' });
    expect(Array.from(p.slots)).toEqual([0, 1, 2]);
    const none = alignSeries({ timestampsMs: hours(0, 5, 6), values: [3, 1, 2], granularity: 'none', customInterval: 1, imputeMode: 'linear' });
    expect(Array.from(none.slots)).toEqual([0, 1, 2]);
    expect(none.filled).toBe(false);
  });

  it('uses customInterval × granularity as the step; microsecond means one millisecond', () => {
    const fiveMinute: SeriesInput = {
      timestampsMs: [0, 300_000, 900_000],
      values: [1, 2, 4],
      granularity: 'minutely',
      customInterval: 5,
      imputeMode: 'linear',
    };
    expect(Array.from(alignSeries(fiveMinute).values)).toEqual([1, 2, 3, 4]);
    const ms: SeriesInput = { timestampsMs: [0, 1, 3], values: [1, 2, 4], granularity: 'microsecond', customInterval: 1, imputeMode: 'linear' };
    expect(Array.from(alignSeries(ms).values)).toEqual([1, 2, 3, 4]);
  });
});

describe('alignSeries: calendar granularities', () => {
  const monthly = (dates: [number, number, number][], extra: Partial<SeriesInput> = {}): SeriesInput => ({
    timestampsMs: dates.map(([y, m, d]) => Date.UTC(y, m, d)),
    values: dates.map((_, i) => i),
    granularity: 'monthly',
    customInterval: 1,
    imputeMode: 'linear',
    ...extra,
  });

  it('treats month ends as the same day', () => {
    const p = alignSeries(
      monthly([
        [2023, 0, 31],
        [2023, 1, 28],
        [2023, 2, 31],
        [2023, 3, 30],
        [2024, 1, 29],
      ]),
    );
    expect(Array.from(p.inputIndex)).toEqual([0, 1, 2, 3, 13]);
    // Anchored on a month end (28 Feb), 31 Mar is the next point.
    expect(Array.from(alignSeries(monthly([[2023, 1, 28], [2023, 2, 31], [2023, 3, 30]])).inputIndex)).toEqual([0, 1, 2]);
  });

  it('rejects a day that does not match, and a month count off the interval', () => {
    expect(errorOf(() => alignSeries(monthly([[2023, 0, 15], [2023, 1, 16]]))).message).toBe(
      "The 'timestamp' at index 1 is invalid in monthly granularity with 1 gran as interval.",
    );
    expect(errorOf(() => alignSeries(monthly([[2023, 0, 1], [2023, 3, 1], [2023, 4, 1]], { customInterval: 3 }))).message).toBe(
      "The 'timestamp' at index 2 is invalid in monthly granularity with 3 gran as interval.",
    );
    expect(errorOf(() => alignSeries(monthly([[2023, 0, 31], [2023, 1, 27]]))).code).toBe('InvalidSeries');
  });

  it('quarterly data: monthly with customInterval 3', () => {
    const p = alignSeries(monthly([[2023, 0, 1], [2023, 3, 1], [2023, 9, 1]], { customInterval: 3 }));
    expect(Array.from(p.values)).toEqual([0, 1, 1.5, 2]);
  });

  it('yearly needs the same month and day', () => {
    const yearly = (dates: [number, number, number][]): SeriesInput => ({ ...monthly(dates), granularity: 'yearly' });
    expect(Array.from(alignSeries(yearly([[2020, 1, 29], [2021, 1, 28], [2024, 1, 29]])).inputIndex)).toEqual([0, 1, 4]);
    expect(errorOf(() => alignSeries(yearly([[2020, 0, 1], [2021, 1, 1]]))).message).toBe(
      "The 'timestamp' at index 1 is invalid in yearly granularity with 1 gran as interval.",
    );
  });
});
