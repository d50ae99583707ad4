// From residuals to verdicts: the band a point must stay inside, how bad it is when it does
// not, and the cap on how many points one request may flag.

import { STREAM_DEFAULTS } from './stream-defaults.js';
import { TUNING } from './tuning.js';
import type { Granularity } from './types.js';

/** Margin multiplier at sensitivity 100: the narrowest band, 2.5 robust standard deviations. */
const NARROWEST_Z = TUNING.NARROWEST_Z.value;

/**
 * How many robust standard deviations the band extends on each side of the expected value:
 *
 *   z(s) = 2.5 + 0.5 × (100 − s)^0.75,   s = sensitivity clamped to 0..100
 *
 * Strictly decreasing in s, so a higher sensitivity always gives narrower margins and at least
 * as many anomalies. z(100) = 2.5, z(99) = 3.0, z(95) ≈ 4.17, z(90) ≈ 5.31, z(80) ≈ 7.23,
 * z(50) ≈ 11.9, z(0) ≈ 18.3. For Gaussian noise z(95) flags about 3 points in 100,000.
 */
export function marginMultiplier(sensitivity: number): number {
  const s = Math.min(Math.max(Number.isFinite(sensitivity) ? sensitivity : 100, 0), 100);
  return NARROWEST_Z + 0.5 * Math.pow(100 - s, 0.75);
}

/**
 * Severity of a point `deviation` away from its expected value with a band of half-width
 * `margin`: 0 inside the band; outside it, the share of the deviation that lies beyond the band,
 *
 *   severity = 1 − margin / |deviation|,
 *
 * which is in (0, 1), rising monotonically with the distance outside the band: just outside
 * → ~0, twice the margin → 0.5, ten times → 0.9.
 */
export function severityOf(deviation: number, margin: number): number {
  const d = Math.abs(deviation);
  if (!(d > margin) || d === 0) return 0;
  return Math.min(1, 1 - margin / d);
}

/** Most anomalies one request may flag: floor(ratio × n), at least 1 (the vendor's rule). */
export function anomalyCap(maxAnomalyRatio: number, count: number): number {
  // The epsilon keeps 0.29 × 100 = 28.999999999999996 at 29.
  return Math.max(1, Math.floor(maxAnomalyRatio * count + 1e-9));
}

/** Per-point verdicts, input order. */
export interface Verdicts {
  readonly upperMargins: number[];
  readonly lowerMargins: number[];
  readonly isAnomaly: boolean[];
  readonly isPositiveAnomaly: boolean[];
  readonly isNegativeAnomaly: boolean[];
  readonly severity: number[];
}

/**
 * The half-width of a band widened just past a value that is no longer flagged: 1.01 × its
 * deviation (the vendor's rule), so "outside the band" and "anomaly" keep meaning the same thing to
 * a client drawing the band.
 */
export function widenedMargin(value: number, expected: number): number {
  return Math.abs(value - expected) * 1.01;
}

/**
 * Flags every point whose deviation from its expected value exceeds its margin, then keeps only
 * the `cap` most severe (ties: the larger deviation in margins, then the earlier point). A point
 * that is un-flagged by the cap but lies outside its band gets both margins widened to
 * 1.01 × its deviation, as the vendor does, so that "outside the band" and "anomaly" keep
 * meaning the same thing to a client drawing the band.
 */
export function judgePoints(
  values: readonly number[],
  expected: ArrayLike<number>,
  margins: ArrayLike<number>,
  cap: number,
): Verdicts {
  const n = values.length;
  const upperMargins: number[] = new Array<number>(n);
  const lowerMargins: number[] = new Array<number>(n);
  const isAnomaly: boolean[] = new Array<boolean>(n).fill(false);
  const isPositiveAnomaly: boolean[] = new Array<boolean>(n).fill(false);
  const isNegativeAnomaly: boolean[] = new Array<boolean>(n).fill(false);
  const severity: number[] = new Array<number>(n).fill(0);
  const outside: number[] = [];
  for (let i = 0; i < n; i++) {
    const margin = margins[i]!;
    upperMargins[i] = margin;
    lowerMargins[i] = margin;
    const deviation = values[i]! - expected[i]!;
    if (Math.abs(deviation) > margin && deviation !== 0) {
      outside.push(i);
      severity[i] = severityOf(deviation, margin);
    }
  }
  if (outside.length > cap) {
    const excess = (i: number): number => Math.abs(values[i]! - expected[i]!) / margins[i]!;
    outside.sort((a, b) => severity[b]! - severity[a]! || excess(b) - excess(a) || a - b);
    for (const i of outside.slice(cap)) {
      const widened = widenedMargin(values[i]!, expected[i]!);
      upperMargins[i] = widened;
      lowerMargins[i] = widened;
      severity[i] = 0;
    }
    outside.length = cap;
  }
  for (const i of outside) {
    isAnomaly[i] = true;
    if (values[i]! > expected[i]!) isPositiveAnomaly[i] = true;
    else isNegativeAnomaly[i] = true;
  }
  return { upperMargins, lowerMargins, isAnomaly, isPositiveAnomaly, isNegativeAnomaly, severity };
}

/**
 * The vendor's suggestion without a period: a cycle of the granularity's usual season and one
 * point (BEHAVIOUR.md section 7). The service suggests the worker's window instead.
 */
export const DEFAULT_WINDOW_WITHOUT_PERIOD: Readonly<Record<Granularity, number>> = {
  yearly: 13,
  monthly: 13,
  weekly: 13,
  daily: 29,
  hourly: 169,
  minutely: 1441,
  secondly: 1441,
  microsecond: 1001,
  none: 1441,
};

/**
 * Window a client should send to last-point detection: four periods and one point (the vendor's
 * rule), but never fewer points than the worker judges from (`STREAM_DEFAULTS.windowPoints`) nor
 * more than one request may carry (`STREAM_DEFAULTS.memoryPoints`); without a period, the
 * worker's window (not the vendor's default per granularity). A seasonal profile fitted on four
 * cycles of a short period flags ordinary points (docs/evaluation.md, "Window robustness"), so
 * the service asks for at least the window its own streaming judge uses, and the worker's judge
 * follows the same rule (`createFollowingJudge`). It does not depend on how many points the
 * request held, so a client that follows it grows its window to the same size whatever it
 * started with.
 */
export function suggestedWindow(period: number, granularity: Granularity): number {
  if (!(period > 0)) return STREAM_DEFAULTS.windowPoints;
  return Math.min(Math.max(vendorSuggestedWindow(period, granularity), STREAM_DEFAULTS.windowPoints), STREAM_DEFAULTS.memoryPoints);
}

/**
 * The window a judge that follows its own suggestion uses for the next point, after a verdict
 * with `period`: four periods and one point, never fewer than `floor` (the configured window) nor
 * more than `largest` (`largestFollowedWindow`).
 */
export function followedWindow(period: number, floor: number, largest: number): number {
  return Math.min(Math.max(floor, period > 0 ? period * 4 + 1 : 0), largest);
}

/**
 * Points a followed window is kept before it may change again: its full-window period-recheck
 * interval (`DEFAULT_FULL_PERIOD_RECHECK_SHARE` of it). A fresh judge detects the period and runs
 * the seasonal check at its first point, so without the wait a period that the larger window
 * drops and the smaller keeps would switch the window at every point.
 */
export function followDwellPoints(window: number): number {
  return Math.max(1, Math.floor(TUNING.DEFAULT_FULL_PERIOD_RECHECK_SHARE.value * window));
}

/** The largest window a following judge grows to: its memory (or a request's most points), at least `floor`. */
export function largestFollowedWindow(floor: number, memoryPoints: number): number {
  return Math.max(floor, memoryPoints > 0 ? memoryPoints : STREAM_DEFAULTS.memoryPoints);
}

/** The vendor's suggestion alone: four periods and one point, or the granularity's default. */
export function vendorSuggestedWindow(period: number, granularity: Granularity): number {
  return period > 0 ? period * 4 + 1 : DEFAULT_WINDOW_WITHOUT_PERIOD[granularity];
}
