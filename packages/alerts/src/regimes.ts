// Regime changes of a judged series, as alerting reports them: a series' regime is the one its
// points have held for `holdPoints` judged points in a row, so a regime that flickers for a point or
// two changes nothing. Points without a regime (UNKNOWN: no baseline, the model's warm-up) neither
// confirm nor interrupt. The first regime a series settles in is its start, not a change. Pure.
import type { JudgedPoint, RegimeName } from './episodes.js';

export interface RegimeState {
  /** The settled regime; null before the first. */
  readonly regime: RegimeName | null;
  /** The regime the latest points hold, if not the settled one; how many in a row, and since when. */
  readonly candidate: RegimeName | null;
  readonly count: number;
  readonly sinceMs: number;
}

export interface RegimeChange {
  readonly from: RegimeName;
  readonly to: RegimeName;
  /** The first point of the new regime. */
  readonly sinceMs: number;
  /** The point that settled it. */
  readonly point: JudgedPoint;
}

export const NO_REGIME: RegimeState = Object.freeze({ regime: null, candidate: null, count: 0, sinceMs: -1 });

export function followRegimes(
  state: RegimeState,
  points: readonly JudgedPoint[],
  options: { readonly holdPoints: number },
): { readonly state: RegimeState; readonly changes: readonly RegimeChange[] } {
  const hold = Math.max(1, Math.floor(options.holdPoints));
  const changes: RegimeChange[] = [];
  let { regime, candidate, count, sinceMs } = state;
  for (const point of points) {
    const seen = point.regime;
    if (seen === 'UNKNOWN') continue;
    if (seen === regime) {
      candidate = null;
      count = 0;
      continue;
    }
    if (seen === candidate) count++;
    else {
      candidate = seen;
      count = 1;
      sinceMs = point.tsMs;
    }
    if (count >= hold) {
      if (regime !== null) changes.push({ from: regime, to: seen, sinceMs, point });
      regime = seen;
      candidate = null;
      count = 0;
    }
  }
  const same = regime === state.regime && candidate === state.candidate && count === state.count && sinceMs === state.sinceMs;
  return { state: same ? state : { regime, candidate, count, sinceMs }, changes };
}
