// Puts a series on its regular time grid and fills the holes, following the vendor's documented
// semantics (BEHAVIOUR.md §6): step = granularity × customInterval, alignment relative to the
// first timestamp, calendar arithmetic for months and years, imputation per imputeMode.
import { medianInPlace } from './robust.js';
import { daysInMonth } from './timestamps.js';
import { SeriesError, type Granularity, type ImputeMode, type SeriesInput } from './types.js';

/**
 * Milliseconds per step of the fixed-length granularities (customInterval 1). `microsecond`
 * is one MILLISECOND: the vendor's code computes its indices in milliseconds, and clients that
 * relied on it got millisecond grids. Monthly and yearly have no fixed length (calendar
 * arithmetic), and `none` has no grid at all.
 */
export const GRANULARITY_STEP_MS = {
  weekly: 604_800_000,
  daily: 86_400_000,
  hourly: 3_600_000,
  minutely: 60_000,
  secondly: 1_000,
  microsecond: 1,
} as const satisfies Partial<Record<Granularity, number>>;

/**
 * Grids longer than this are not filled (the vendor's 2 × 8640): the points are modelled as
 * they are, so that a request with a huge gap cannot make the engine allocate millions of slots.
 */
export const MAX_FILL_LENGTH = 17_280;

/** A series ready for modelling. Arrays indexed by model position share one length. */
export interface PreparedSeries {
  /** The values the model runs on, in time order: every input point plus any imputed ones. */
  readonly values: Float64Array;
  /**
   * Grid slot of each modelled value, slot 0 being the first timestamp. Consecutive when the
   * grid was filled; with gaps when it was not. Seasonal phase = slot mod period.
   */
  readonly slots: Float64Array;
  /** 1 where the value was imputed: modelled, but never reported and never scored. */
  readonly imputed: Uint8Array;
  /** For each input point (input order), the index of its value in `values`. */
  readonly inputIndex: Int32Array;
  /** Points a gap-free grid from first to last timestamp holds; the point count without a grid. */
  readonly expectedLength: number;
  /** expectedLength − number of input points. */
  readonly missingCount: number;
  /** Whether missing slots were filled (false also when nothing was missing). */
  readonly filled: boolean;
}

/**
 * Grid slot of every input point, or null when the series has no grid (granularity `none`, or
 * no timestamps). Throws the vendor's InvalidSeries errors for unsorted, duplicate and
 * misaligned timestamps, in that order of checking.
 */
export function inputSlots(input: SeriesInput): Float64Array | null {
  const ts = input.timestampsMs;
  if (ts === null) return null;
  if (ts.length !== input.values.length) {
    throw new RangeError(`timestampsMs has ${ts.length} entries for ${input.values.length} values`);
  }
  for (let i = 1; i < ts.length; i++) {
    if (ts[i]! < ts[i - 1]!) throw new SeriesError('InvalidSeries', 'Series timestamps must be sorted');
  }
  for (let i = 1; i < ts.length; i++) {
    if (ts[i]! === ts[i - 1]!) throw new SeriesError('InvalidSeries', 'Duplicate timestamps');
  }
  if (input.granularity === 'none' || ts.length === 0) return null;

  const interval = input.customInterval;
  const slots = new Float64Array(ts.length);
  const misaligned = (i: number): SeriesError =>
    new SeriesError(
      'InvalidSeries',
      `The 'timestamp' at index ${i} is invalid in ${input.granularity} granularity with ${interval} gran as interval.`,
    );

  if (input.granularity === 'monthly' || input.granularity === 'yearly') {
    const first = calendarParts(ts[0]!);
    const stepMonths = input.granularity === 'monthly' ? interval : 12 * interval;
    for (let i = 1; i < ts.length; i++) {
      const p = calendarParts(ts[i]!);
      const months = (p.year - first.year) * 12 + (p.month - first.month);
      if (p.msOfDay !== first.msOfDay || !sameDayOfMonth(first, p) || months % stepMonths !== 0) throw misaligned(i);
      slots[i] = months / stepMonths;
    }
    return slots;
  }

  const step = GRANULARITY_STEP_MS[input.granularity] * interval;
  const t0 = ts[0]!;
  for (let i = 1; i < ts.length; i++) {
    const offset = ts[i]! - t0;
    if (offset % step !== 0) throw misaligned(i);
    slots[i] = offset / step;
  }
  return slots;
}

interface CalendarParts {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly msOfDay: number;
}

function calendarParts(ms: number): CalendarParts {
  const d = new Date(ms);
  const msOfDay = ((ms % 86_400_000) + 86_400_000) % 86_400_000;
  return { year: d.getUTCFullYear(), month: d.getUTCMonth(), day: d.getUTCDate(), msOfDay };
}

/**
 * Month-end days count as the same day: a series anchored on 31 Jan continues on 28 (29) Feb
 * and 30 Apr, and one anchored on 28 Feb (a month end) continues on 31 Mar.
 */
function sameDayOfMonth(first: CalendarParts, p: CalendarParts): boolean {
  const days = daysInMonth(p.year, p.month);
  if (p.day === Math.min(first.day, days)) return true;
  return first.day === daysInMonth(first.year, first.month) && p.day === days;
}

/**
 * The InvalidModelArgument / InvalidSeries problem a client-supplied period has with a series
 * of `count` points spanning `expectedLength` slots, or null when it fits (BEHAVIOUR.md §5.2 #16
 * and #17). `fills` says whether missing slots would be filled.
 */
export function periodProblem(
  period: number | undefined,
  expectedLength: number,
  count: number,
  fills: boolean,
): SeriesError | null {
  if (period === undefined || period <= 0) return null;
  const needed = 2 * period + 1;
  if (expectedLength < needed || (!fills && count < needed)) {
    return new SeriesError('InvalidModelArgument', "The 'series' field must have more than 2 periods points");
  }
  const atLeast = Math.ceil(expectedLength / 2);
  if (period > 1 && count < atLeast) {
    return new SeriesError(
      'InvalidSeries',
      'Ratio of missing points should be less than 50% for seasonal timeseries. ' +
        `There should be at least ${atLeast} points, but got ${count} points.`,
    );
  }
  return null;
}

/** More than half the expected slots missing: too sparse to call seasonal (period forced to 0). */
export function tooSparseForSeasonality(expectedLength: number, count: number): boolean {
  return count < Math.ceil(expectedLength / 2);
}

/** How the missing slots of a grid get their values. */
export type FillRule = 'none' | 'previous' | 'linear' | 'constant' | 'seasonal';

/**
 * What imputeMode means for a given period. `auto` interpolates seasonally when the series is
 * seasonal and leaves the holes when it is not; with the period still unknown (undefined) it
 * interpolates linearly, because period detection needs a regular grid; the engine then
 * re-aligns once the period is known.
 */
export function fillRule(mode: ImputeMode, period: number | undefined): FillRule {
  switch (mode) {
    case 'notFill':
      return 'none';
    case 'previous':
      return 'previous';
    case 'linear':
      return 'linear';
    case 'fixed':
    case 'zero':
      return 'constant';
    case 'auto':
      if (period === undefined) return 'linear';
      return period > 1 ? 'seasonal' : 'none';
  }
}

/** The parts of a SeriesInput that decide how its holes are filled. */
export interface FillSettings {
  readonly imputeMode: ImputeMode;
  readonly imputeFixedValue?: number | undefined;
}

function fixedValueOf(settings: FillSettings): number {
  if (settings.imputeMode === 'zero') return 0;
  const v = settings.imputeFixedValue;
  if (v === undefined || !Number.isFinite(v)) {
    throw new SeriesError('InvalidModelArgument', "The 'imputeFixedValue' field must be a number.");
  }
  return v;
}

/**
 * Builds the modelled series from input points `from..to-1` whose grid slots (absolute, from
 * `inputSlots`) are `slots`, or consecutive when `slots` is null. Slots are re-based on the
 * first point of the range. Pure range arithmetic, so the streaming detector can build each
 * trailing window without re-validating its timestamps.
 */
export function buildGrid(
  values: ArrayLike<number>,
  slots: Float64Array | null,
  from: number,
  to: number,
  settings: FillSettings,
  period: number | undefined,
): PreparedSeries {
  const count = to - from;
  const base = slots === null ? 0 : slots[from]!;
  const expectedLength = slots === null || count === 0 ? count : slots[to - 1]! - base + 1;
  const missingCount = expectedLength - count;
  const rule = missingCount > 0 && expectedLength <= MAX_FILL_LENGTH ? fillRule(settings.imputeMode, period) : 'none';

  if (rule === 'none') {
    const modelValues = new Float64Array(count);
    const modelSlots = new Float64Array(count);
    const inputIndex = new Int32Array(count);
    for (let i = 0; i < count; i++) {
      modelValues[i] = values[from + i]!;
      modelSlots[i] = slots === null ? i : slots[from + i]! - base;
      inputIndex[i] = i;
    }
    return {
      values: modelValues,
      slots: modelSlots,
      imputed: new Uint8Array(count),
      inputIndex,
      expectedLength,
      missingCount,
      filled: false,
    };
  }

  const grid = new Float64Array(expectedLength).fill(Number.NaN);
  const imputed = new Uint8Array(expectedLength).fill(1);
  const inputIndex = new Int32Array(count);
  for (let i = 0; i < count; i++) {
    const slot = slots![from + i]! - base;
    grid[slot] = values[from + i]!;
    imputed[slot] = 0;
    inputIndex[i] = slot;
  }
  switch (rule) {
    case 'previous':
      fillPrevious(grid);
      break;
    case 'linear':
      fillLinear(grid);
      break;
    case 'constant': {
      const fixed = fixedValueOf(settings);
      for (let i = 0; i < expectedLength; i++) if (imputed[i] !== 0) grid[i] = fixed;
      break;
    }
    case 'seasonal':
      fillSeasonal(grid, imputed, period!);
      break;
  }
  const gridSlots = new Float64Array(expectedLength);
  for (let i = 0; i < expectedLength; i++) gridSlots[i] = i;
  return { values: grid, slots: gridSlots, imputed, inputIndex, expectedLength, missingCount, filled: true };
}

/** The first slot always holds a point, so a previous value always exists. */
function fillPrevious(grid: Float64Array): void {
  for (let i = 1; i < grid.length; i++) if (Number.isNaN(grid[i]!)) grid[i] = grid[i - 1]!;
}

/** Straight lines between the observed neighbours; both ends are always observed. */
function fillLinear(grid: Float64Array): void {
  let left = 0;
  for (let i = 1; i < grid.length; i++) {
    if (Number.isNaN(grid[i]!)) continue;
    if (i - left > 1) {
      const a = grid[left]!;
      const slope = (grid[i]! - a) / (i - left);
      for (let j = left + 1; j < i; j++) grid[j] = a + slope * (j - left);
    }
    left = i;
  }
}

/**
 * Seasonal interpolation: a missing slot gets the straight line between its neighbours in the
 * deseasonalised series, plus the seasonal value of its phase. So a gap over a daily peak is
 * filled with a peak, not with a straight line across it. The seasonal profile comes from
 * per-phase medians of the observed points around a one-period moving average.
 */
function fillSeasonal(grid: Float64Array, imputed: Uint8Array, period: number): void {
  const n = grid.length;
  const linear = grid.slice();
  fillLinear(linear);
  // A full-period moving average holds one point of each phase, so the cycle averages out.
  const p = Math.min(period, n);
  const prefix = new Float64Array(n + 1);
  for (let i = 0; i < n; i++) prefix[i + 1] = prefix[i]! + linear[i]!;
  const counts = new Int32Array(period);
  for (let i = 0; i < n; i++) if (imputed[i] === 0) counts[i % period]!++;
  const offsets = new Int32Array(period + 1);
  for (let k = 0; k < period; k++) offsets[k + 1] = offsets[k]! + counts[k]!;
  const byPhase = new Float64Array(offsets[period]!);
  const cursor = offsets.slice(0, period);
  for (let i = 0; i < n; i++) {
    if (imputed[i] !== 0) continue;
    const start = Math.min(Math.max(i - (p >> 1), 0), n - p);
    const level = (prefix[start + p]! - prefix[start]!) / p;
    byPhase[cursor[i % period]!++] = grid[i]! - level;
  }
  const profile = new Float64Array(period);
  let total = 0;
  let phases = 0;
  for (let k = 0; k < period; k++) {
    if (counts[k] === 0) continue;
    profile[k] = medianInPlace(byPhase, offsets[k]!, offsets[k + 1]! - 1);
    total += profile[k]!;
    phases++;
  }
  const mean = phases > 0 ? total / phases : 0;
  for (let k = 0; k < period; k++) profile[k] = counts[k] === 0 ? 0 : profile[k]! - mean;

  const deseasonalised = new Float64Array(n);
  for (let i = 0; i < n; i++) deseasonalised[i] = imputed[i] === 0 ? grid[i]! - profile[i % period]! : Number.NaN;
  fillLinear(deseasonalised);
  for (let i = 0; i < n; i++) if (imputed[i] !== 0) grid[i] = deseasonalised[i]! + profile[i % period]!;
}

/**
 * Aligns and imputes a series for modelling (BEHAVIOUR.md §6). `period`: undefined = not known
 * yet; 0 = non-seasonal; >= 1 = the period to model with (a client-supplied one is checked
 * against the series: more than 2 periods of points, and at most 50 % missing when seasonal).
 *
 * With granularity `none` or no timestamps there is no grid: points are indexed 0..n−1 and
 * nothing is filled. Sort and duplicate checks apply whenever timestamps are given.
 */
export function alignSeries(input: SeriesInput, period?: number): PreparedSeries {
  const slots = inputSlots(input);
  const n = input.values.length;
  const expectedLength = slots === null || n === 0 ? n : slots[n - 1]! + 1;
  const fills = expectedLength <= MAX_FILL_LENGTH && fillRule(input.imputeMode, period) !== 'none';
  const problem = periodProblem(period, expectedLength, n, fills);
  if (problem !== null) throw problem;
  return buildGrid(input.values, slots, 0, n, input, period);
}
