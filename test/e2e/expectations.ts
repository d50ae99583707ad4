// What every client must get back for the fixtures in series.ts. The shapes below are the fields
// common to all the SDKs' result types (each SDK declares its own, structurally the same).
import { expect } from 'vitest';
import {
  ENTIRE_SPIKE_INDEX,
  LEVEL_SHIFT_INDEX,
  WEEKLY_PERIOD,
  type SeriesFixture,
} from './series.js';

export interface EntireDetection {
  readonly period: number;
  readonly expectedValues: readonly number[];
  readonly upperMargins: readonly number[];
  readonly lowerMargins: readonly number[];
  readonly isAnomaly: readonly boolean[];
  readonly isPositiveAnomaly: readonly boolean[];
  readonly isNegativeAnomaly: readonly boolean[];
  readonly severity?: readonly number[] | null;
}

export interface LastDetection {
  readonly period: number;
  readonly suggestedWindow: number;
  readonly expectedValue: number;
  readonly upperMargin: number;
  readonly lowerMargin: number;
  readonly isAnomaly: boolean;
  readonly isPositiveAnomaly: boolean;
  readonly isNegativeAnomaly: boolean;
  readonly severity?: number | null;
}

export interface ChangePointDetection {
  readonly period?: number | null;
  readonly isChangePoint?: readonly boolean[] | null;
  readonly confidenceScores?: readonly number[] | null;
}

/** Largest distance, in points, between the injected level shift and a reported changepoint. */
const CHANGE_POINT_TOLERANCE = 3;

function indicesWhere(flags: readonly boolean[]): number[] {
  return flags.flatMap((flag, i) => (flag ? [i] : []));
}

export function expectEntireDetection(result: EntireDetection, series: SeriesFixture): void {
  const n = series.values.length;
  expect(result.period).toBe(WEEKLY_PERIOD);
  for (const field of [
    'expectedValues',
    'upperMargins',
    'lowerMargins',
    'isAnomaly',
    'isPositiveAnomaly',
    'isNegativeAnomaly',
  ] as const) {
    expect(result[field], field).toHaveLength(n);
  }
  expect(result.isAnomaly[ENTIRE_SPIKE_INDEX], 'spike flagged').toBe(true);
  expect(result.isPositiveAnomaly[ENTIRE_SPIKE_INDEX], 'spike is a positive anomaly').toBe(true);
  expect(result.isNegativeAnomaly[ENTIRE_SPIKE_INDEX], 'spike is not a negative anomaly').toBe(false);
  const spikeValue = series.values[ENTIRE_SPIKE_INDEX] ?? Number.NaN;
  const spikeExpected = result.expectedValues[ENTIRE_SPIKE_INDEX] ?? Number.NaN;
  const spikeUpper = result.upperMargins[ENTIRE_SPIKE_INDEX] ?? Number.NaN;
  expect(spikeExpected + spikeUpper, 'spike lies above the upper boundary').toBeLessThan(spikeValue);
  // A clean weekly series with one spike: the spike is the only anomaly, or nearly so.
  expect(indicesWhere(result.isAnomaly).length, `anomalies at ${indicesWhere(result.isAnomaly).join(',')}`).toBeLessThanOrEqual(3);
  result.isAnomaly.forEach((flag, i) => {
    expect(flag, `isAnomaly[${i}] = isPositive || isNegative`).toBe(
      Boolean(result.isPositiveAnomaly[i]) || Boolean(result.isNegativeAnomaly[i]),
    );
  });
  for (const margin of [...result.upperMargins, ...result.lowerMargins]) {
    expect(margin).toBeGreaterThanOrEqual(0);
  }
  if (result.severity !== undefined && result.severity !== null) {
    expect(result.severity).toHaveLength(n);
    for (const s of result.severity) {
      expect(s).toBeGreaterThanOrEqual(0);
      expect(s).toBeLessThanOrEqual(1);
    }
    expect(result.severity[ENTIRE_SPIKE_INDEX], 'spike severity').toBeGreaterThan(0);
  }
}

/** The last point of `series` is an upward spike. */
export function expectLastPointSpike(result: LastDetection, series: SeriesFixture): void {
  expect(result.period).toBe(WEEKLY_PERIOD);
  expect(result.suggestedWindow, "4 periods + 1, at least the 720 points the worker judges from").toBe(Math.max(WEEKLY_PERIOD * 4 + 1, 720));
  expect(result.isAnomaly).toBe(true);
  expect(result.isPositiveAnomaly).toBe(true);
  expect(result.isNegativeAnomaly).toBe(false);
  const lastValue = series.values[series.values.length - 1] ?? Number.NaN;
  expect(result.expectedValue + result.upperMargin, 'last point lies above the upper boundary').toBeLessThan(lastValue);
  expect(result.upperMargin).toBeGreaterThanOrEqual(0);
  expect(result.lowerMargin).toBeGreaterThanOrEqual(0);
  if (result.severity !== undefined && result.severity !== null) {
    expect(result.severity).toBeGreaterThan(0);
    expect(result.severity).toBeLessThanOrEqual(1);
  }
}

/** The last point of `series` follows the weekly pattern. */
export function expectLastPointNormal(result: LastDetection, series: SeriesFixture): void {
  expect(result.period).toBe(WEEKLY_PERIOD);
  expect(result.suggestedWindow, "4 periods + 1, at least the 720 points the worker judges from").toBe(Math.max(WEEKLY_PERIOD * 4 + 1, 720));
  expect(result.isAnomaly).toBe(false);
  expect(result.isPositiveAnomaly).toBe(false);
  expect(result.isNegativeAnomaly).toBe(false);
  const lastValue = series.values[series.values.length - 1] ?? Number.NaN;
  expect(lastValue).toBeLessThanOrEqual(result.expectedValue + result.upperMargin);
  expect(lastValue).toBeGreaterThanOrEqual(result.expectedValue - result.lowerMargin);
  if (result.severity !== undefined && result.severity !== null) expect(result.severity).toBe(0);
}

export function expectChangePointDetection(result: ChangePointDetection, series: SeriesFixture): void {
  const n = series.values.length;
  const isChangePoint = result.isChangePoint ?? [];
  const confidenceScores = result.confidenceScores ?? [];
  expect(result.period).toBe(WEEKLY_PERIOD);
  expect(isChangePoint).toHaveLength(n);
  expect(confidenceScores).toHaveLength(n);
  for (const score of confidenceScores) {
    expect(score).toBeGreaterThanOrEqual(0);
    expect(score).toBeLessThanOrEqual(1);
  }
  const flagged = indicesWhere(isChangePoint);
  const nearShift = (i: number): boolean => Math.abs(i - LEVEL_SHIFT_INDEX) <= CHANGE_POINT_TOLERANCE;
  expect(flagged.some(nearShift), `a changepoint within ${CHANGE_POINT_TOLERANCE} points of ${LEVEL_SHIFT_INDEX} (flagged: ${flagged.join(',')})`).toBe(true);
  expect(flagged.filter((i) => !nearShift(i)), 'changepoints away from the level shift').toEqual([]);
}

/** Awaits a call that must fail and hands back what it threw. */
export async function rejectionOf(call: Promise<unknown>): Promise<unknown> {
  try {
    await call;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

/**
 * The parts of a thrown RestError (core-http for @azure/ai-anomaly-detector 3.x, ms-rest-js for
 * @azure/cognitiveservices-anomalydetector) that a caller reads. Both packages keep RestError in
 * a nested dependency, so it is read structurally rather than by `instanceof`.
 */
export interface RestErrorView {
  /** The class name: ms-rest-js's RestError leaves `name` as "Error", so the constructor is read. */
  readonly type: unknown;
  readonly code: unknown;
  readonly statusCode: unknown;
  readonly message: unknown;
  readonly errorCodeHeader: unknown;
}

export function viewRestError(error: unknown): RestErrorView {
  if (typeof error !== 'object' || error === null) throw new Error(`not an error object: ${String(error)}`);
  const record = error as Record<string, unknown>;
  const response = record['response'] as { headers?: { get?: (name: string) => unknown } } | undefined;
  const getHeader = response?.headers?.get;
  return {
    type: (error as { constructor?: { name?: unknown } }).constructor?.name,
    code: record['code'],
    statusCode: record['statusCode'],
    message: record['message'],
    errorCodeHeader: typeof getHeader === 'function' ? getHeader.call(response?.headers, 'x-ms-error-code') : undefined,
  };
}
