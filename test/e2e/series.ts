// Deterministic daily series with weekly seasonality, shared by every client's tests (npm and
// Python), so each client is held to the same expectations on the same data.

const DAY_MS = 86_400_000;
/** Monday 1 January 2024, midnight UTC: every point falls on a whole day, as daily granularity requires. */
const SERIES_START_MS = Date.UTC(2024, 0, 1);
/** A weekday/weekend shape: busy mid-week, a dip at the weekend. Mean about 0, range 23. */
const WEEKLY_PROFILE = [0, 6, 9, 7, 4, -12, -14] as const;
const BASE_LEVEL = 200;
const NOISE_AMPLITUDE = 1.5;

export const WEEKLY_PERIOD = WEEKLY_PROFILE.length;

export interface SeriesFixture {
  readonly timestamps: readonly Date[];
  readonly values: readonly number[];
}

interface SeriesShape {
  /** Added to one point: an isolated spike. */
  readonly spike?: { readonly index: number; readonly size: number };
  /** Added to every point from `fromIndex` on: a level shift. */
  readonly levelShift?: { readonly fromIndex: number; readonly size: number };
}

/** Pseudo-random but reproducible noise in [-NOISE_AMPLITUDE, NOISE_AMPLITUDE]. */
function noise(index: number): number {
  const x = Math.sin((index + 1) * 12.9898) * 43_758.5453;
  return (2 * (x - Math.floor(x)) - 1) * NOISE_AMPLITUDE;
}

export function weeklySeries(length: number, shape: SeriesShape = {}): SeriesFixture {
  const timestamps: Date[] = [];
  const values: number[] = [];
  for (let i = 0; i < length; i++) {
    let value = BASE_LEVEL + (WEEKLY_PROFILE[i % WEEKLY_PERIOD] ?? 0) + noise(i);
    if (shape.spike && shape.spike.index === i) value += shape.spike.size;
    if (shape.levelShift && i >= shape.levelShift.fromIndex) value += shape.levelShift.size;
    timestamps.push(new Date(SERIES_START_MS + i * DAY_MS));
    values.push(Math.round(value * 1000) / 1000);
  }
  return { timestamps, values };
}

/** The `{ timestamp, value }[]` every SDK takes, with the Date objects their users pass. */
export function toPoints(series: SeriesFixture): { timestamp: Date; value: number }[] {
  return series.values.map((value, i) => {
    const timestamp = series.timestamps[i];
    if (timestamp === undefined) throw new Error(`series has no timestamp at index ${i}`);
    return { timestamp, value };
  });
}

/** Eight weeks with one obvious upward spike: entire-series detection. */
export const ENTIRE_SPIKE_INDEX = 38;
export const entireSeries = weeklySeries(56, { spike: { index: ENTIRE_SPIKE_INDEX, size: 60 } });

/** Eight weeks and a day, the last point an upward spike: last-point detection must flag it. */
export const lastSpikeSeries = weeklySeries(57, { spike: { index: 56, size: 60 } });

/** The same without the spike: last-point detection must not flag the last point. */
export const lastNormalSeries = weeklySeries(57);

/** Twelve weeks with a level shift of +50 from day 49 on: changepoint detection. */
export const LEVEL_SHIFT_INDEX = 49;
export const changePointSeries = weeklySeries(84, { levelShift: { fromIndex: LEVEL_SHIFT_INDEX, size: 50 } });

/** Below the 12-point minimum: every endpoint answers 400 InvalidSeries. */
export const tooShortSeries = weeklySeries(5);
