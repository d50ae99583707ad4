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
// least its period-recheck interval (half of it, `DEFAULT_FULL_PERIOD_RECHECK_SHARE`): a fresh
// judge detects the period and runs the seasonal check at its first point, and a period the
// larger window drops but the smaller keeps would otherwise switch the window at every point.
// The past range over the points older than the kept history travels in two monotonic queues, so
// a new judge starts with the same past range the old one had.
import { followedWindow, largestFollowedWindow } from './scoring.js';
import {
  createStreamJudge,
  DEFAULT_FULL_PERIOD_RECHECK_SHARE,
  ExtremeQueue,
  type StreamJudge,
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
  release(): void;
}

/** Room beyond the kept history before the oldest values are moved out (amortised trimming). */
const TRIM_SLACK = 256;

/**
 * A following judge on `opts` (its `windowPoints` is the smallest window). `restored`: a state
 * and the history it was taken with (at least the state's current window less one point, or as
 * many as were ever pushed), to continue exactly where that judge stopped.
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

  let history: number[] = [];
  let historyPoints = floor - 1;
  let target = floor;
  let switchedAt: number | null = null;
  let released = false;
  let judge: StreamJudge;

  if (restored === undefined) {
    judge = createStreamJudge({ ...inner, windowPoints: floor });
  } else {
    const s = restored.state;
    historyPoints = Math.min(Math.max(floor - 1, Math.floor(s.historyPoints)), largest - 1);
    target = Math.min(Math.max(floor, Math.floor(s.targetWindow)), largest);
    switchedAt = s.switchedAt ?? null;
    history = restored.history.slice(-historyPoints);
    lows?.load(s.pastLows);
    highs?.load(s.pastHighs);
    const window = Math.min(Math.max(floor, Math.floor(s.judge.windowPoints)), largest);
    judge = createStreamJudge({ ...inner, windowPoints: window }, { ...s.judge, windowPoints: window, values: history.slice(-(window - 1)) });
  }
  let window = windowOf(judge);

  function windowOf(j: StreamJudge): number {
    return j.modelState().windowPoints;
  }

  /** Moves the oldest kept values beyond `historyPoints` into the past range. */
  function trim(force: boolean): void {
    const excess = history.length - historyPoints;
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
    return switchedAt === null || judge.seen - switchedAt >= Math.max(1, Math.floor(DEFAULT_FULL_PERIOD_RECHECK_SHARE * window));
  }

  function push(value: number): LastResult {
    if (released) throw new Error('this following judge was released');
    const result = judge.push(value);
    history.push(value);
    target = followedWindow(result.period, floor, largest);
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

/** Every point of a series without timestamps through one following judge. */
export function judgeStreamFollowing(values: readonly number[], opts: StreamJudgeOptions): LastResult[] {
  const judge = createFollowingJudge(opts);
  const out = values.map((value) => judge.push(value));
  judge.release();
  return out;
}
