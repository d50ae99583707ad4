// The streaming judge whose window follows what its own verdicts suggest: four periods and one
// point once a period is found (the rule behind `suggestedWindow`), never fewer points than the
// configured window nor more than the memory. A client of last/detect that sends the suggested
// window gets the same verdicts; the worker judges this way so that the two agree.
//
// The judge of the current window is `createStreamJudge`'s. When the suggestion changes, a judge
// of the new window is started on the kept history: at once when the window shrinks or the
// history already holds the larger window, else once enough points have arrived (the history
// kept grows to the largest window suggested so far and never shrinks, so a series without a
// long period keeps no more than the configured window). A window, once started, is kept for at
// least its period-recheck interval (`followDwellPoints`, half of it).
// The past range over the points older than the kept history travels in two monotonic queues, so
// a new judge starts with the same past range the old one had.
import { followDwellPoints, followedWindow, largestFollowedWindow } from './scoring.js';
import {
  createStreamJudge,
  ExtremeQueue,
  type StreamJudgeModelState,
  type StreamJudgeOptions,
} from './stream-judge.js';
import type { LastResult } from './types.js';

/** A following judge's state without its history, plain and serialisable (a worker's checkpoint). */
export interface FollowingJudgeState {
  readonly version: 1;
  /** Most history points kept: the largest window suggested so far, less the judged point. */
  readonly historyPoints: number;
  /** The window the next points should be judged with (pending while the history is shorter). */
  readonly targetWindow: number;
  /** Point index at which the current window started; null: the judge's first window. */
  readonly switchedAt: number | null;
  /** The current window's judge, without its history (the newest windowPoints − 1 values). */
  readonly judge: StreamJudgeModelState;
  /**
   * The past range over the points older than the kept history (within the memory): the lowest
   * values ascending and the highest descending, as (point index, value) pairs flattened.
   */
  readonly pastLows: readonly number[];
  readonly pastHighs: readonly number[];
}

export interface FollowingJudge {
  /** Judges the next point from the points before it, then keeps it as history. */
  push(value: number): LastResult;
  /** The window the current judge uses. */
  readonly windowPoints: number;
  /** Points pushed ever (restored ones included). */
  readonly seen: number;
  /** The state to restore from, with `history()`. */
  state(): FollowingJudgeState;
  /** The kept history, oldest first (at most `state().historyPoints` values). */
  history(): number[];
  /**
   * How many values `history()` holds: after the kept history grew, fewer than
   * `state().historyPoints` until enough points arrive. A caller that keeps the history itself
   * (the worker's window) keeps this many, so a judge restored from it continues exactly.
   */
  readonly historyLength: number;
  release(): void;
}

/** Room beyond the kept history before the oldest values are moved out (amortised trimming). */
const TRIM_SLACK = 256;

/**
 * A following judge on `opts` (its `windowPoints` is the smallest window). `restored`: a state
 * and the history it was taken with (at least the state's current window less one point, or as
 * many as were ever pushed), to continue exactly where that judge stopped; absent, a fresh
 * judge (`freshFollowingState` with no history).
 */
export function createFollowingJudge(
  opts: StreamJudgeOptions,
  restored?: { readonly state: FollowingJudgeState; readonly history: readonly number[] },
): FollowingJudge {
  const floor = Math.max(2, Math.floor(opts.windowPoints));
  const inner: StreamJudgeOptions = { ...opts, followSuggestedWindow: false };
  const memory = Math.max(0, Math.floor(opts.memoryPoints ?? 0));
  const largest = largestFollowedWindow(floor, memory);
  const strictBelow = (x: number, y: number): boolean => x < y;
  const strictAbove = (x: number, y: number): boolean => x > y;
  const lows = memory > 0 ? new ExtremeQueue(memory + 2, strictBelow) : null;
  const highs = memory > 0 ? new ExtremeQueue(memory + 2, strictAbove) : null;

  const start = restored ?? { state: freshFollowingState(floor, 0), history: [] };
  const s = start.state;
  let historyPoints = Math.min(Math.max(floor - 1, Math.floor(s.historyPoints)), largest - 1);
  let target = Math.min(Math.max(floor, Math.floor(s.targetWindow)), largest);
  let switchedAt = s.switchedAt ?? null;
  let history = start.history.slice(-historyPoints);
  lows?.load(s.pastLows);
  highs?.load(s.pastHighs);
  let window = Math.min(Math.max(floor, Math.floor(s.judge.windowPoints)), largest);
  let judge = createStreamJudge({ ...inner, windowPoints: window }, { ...s.judge, windowPoints: window, values: history.slice(-(window - 1)) });
  let released = false;

  /** Moves the oldest kept values beyond `limit` (the kept history's bound) into the past range. */
  function trim(force: boolean, limit = historyPoints): void {
    const excess = history.length - limit;
    if (excess <= 0 || (!force && excess < TRIM_SLACK)) return;
    const firstPoint = judge.seen - history.length;
    if (lows !== null && highs !== null) {
      for (let k = 0; k < excess; k++) {
        const x = history[k]!;
        if (Number.isNaN(x)) continue;
        lows.push(firstPoint + k, x);
        highs.push(firstPoint + k, x);
      }
      lows.dropBefore(judge.seen - memory + 1);
      highs.dropBefore(judge.seen - memory + 1);
    }
    history = history.slice(excess);
  }

  /** A judge of `next` points started on the kept history, the past range before it given. */
  function switchTo(next: number): void {
    trim(true);
    const seen = judge.seen;
    judge.release();
    judge = createStreamJudge(
      { ...inner, windowPoints: next },
      {
        version: 1,
        windowPoints: next,
        values: [],
        seen: seen - history.length,
        detectedAt: null,
        cachedPeriod: 0,
        model: null,
        ...(lows !== null && highs !== null ? { pastLows: lows.entries(), pastHighs: highs.entries() } : {}),
      },
    );
    judge.prime(history);
    window = next;
    switchedAt = seen;
  }

  /** Whether the current window has been kept for its period-recheck interval. */
  function settled(): boolean {
    return switchedAt === null || judge.seen - switchedAt >= followDwellPoints(window);
  }

  function push(value: number): LastResult {
    if (released) throw new Error('this following judge was released');
    const result = judge.push(value);
    history.push(value);
    target = followedWindow(result.period, floor, largest);
    // The kept history grows from here on: values beyond the bound it had before this point are
    // the past range's already, though amortised trimming may not have moved them yet (state()
    // moves them at once). Moved now, so a larger window never starts sooner on values a
    // checkpoint would have dropped, and the judge continues the same whenever it was checkpointed.
    if (target - 1 > historyPoints) trim(true, historyPoints + 1);
    historyPoints = Math.max(historyPoints, target - 1);
    trim(false);
    if (settled() && (target < window || (target > window && history.length >= target - 1))) switchTo(target);
    return result;
  }

  return {
    push,
    get windowPoints() {
      return window;
    },
    get seen() {
      return judge.seen;
    },
    get historyLength() {
      return Math.min(history.length, historyPoints);
    },
    state() {
      trim(true);
      return {
        version: 1,
        historyPoints,
        targetWindow: target,
        switchedAt,
        judge: judge.modelState(),
        pastLows: lows?.entries() ?? [],
        pastHighs: highs?.entries() ?? [],
      };
    },
    history() {
      trim(true);
      return history.slice();
    },
    release() {
      if (!released) judge.release();
      released = true;
    },
  };
}

/**
 * The state of a following judge that has not judged yet, after `seen` points of history: its
 * window `windowPoints`, its history that window less one point, no model, no past range.
 */
export function freshFollowingState(windowPoints: number, seen: number): FollowingJudgeState {
  return {
    version: 1,
    historyPoints: windowPoints - 1,
    targetWindow: windowPoints,
    switchedAt: null,
    judge: { version: 1, windowPoints, seen, detectedAt: null, cachedPeriod: 0, model: null },
    pastLows: [],
    pastHighs: [],
  };
}

/** Every point of a series without timestamps through one following judge. */
export function judgeStreamFollowing(values: readonly number[], opts: StreamJudgeOptions): LastResult[] {
  const judge = createFollowingJudge(opts);
  const out = values.map((value) => judge.push(value));
  judge.release();
  return out;
}
