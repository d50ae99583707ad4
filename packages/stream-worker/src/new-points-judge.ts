// Last-point judgement of a series' new points after its kept window. Pure (plain data in and
// out), so it runs in the worker's thread or in a detection thread (detect-pool.ts) alike.
//
// The engine's following judge (`createFollowingJudge`): the incremental judge, which carries the
// model's fitted parts from one point to the next and refits them every few points (a point costs
// a fraction of a full last-point detection over the window), over the window its own verdicts
// suggest: the configured one, or four periods and one point once a longer period is found, as a
// client of last/detect that follows `suggestedWindow` gets. Its state (window, period schedule,
// seasonal profile, noise scale, past range) travels with the series' window and its checkpoint
// (series-window.ts); the history it needs is the window's own values (and, for a grown window,
// the older values kept beside them), so it is not stored twice.
import { createFollowingJudge, freshFollowingState, type FollowingJudge, type FollowingJudgeState, type LastResult } from '@adp/detection';

export interface JudgeSettings {
  /** Trailing window, the judged point included: the least the judge uses (it grows to 4 periods + 1). */
  readonly windowPoints: number;
  /** Points the judge's past range spans (`StreamOptions.memoryPoints`); 0 or absent: none. */
  readonly memoryPoints?: number;
  readonly maxAnomalyRatio: number;
  /** Judges a detection thread keeps alive between batches (`LiveJudges`); 0 or absent: none. */
  readonly liveJudges?: number;
}

/**
 * The following judge's state without its history (the window's values and the older ones kept
 * beside them), and, when a `LiveJudges` kept the judge that returned it, that judge's stamp (not
 * checkpointed).
 */
export type JudgeModelState = FollowingJudgeState & { readonly stamp?: number };

export interface JudgeTask {
  /** The kept values before the new ones, oldest first (the judge's history: window and older values). */
  readonly context: readonly number[];
  readonly newValues: readonly number[];
  /** Points of the series before newValues[0], ever. */
  readonly seenPoints: number;
  readonly sensitivity: number;
  /** The judge's state after the context's last point; null: fit afresh on the context. */
  readonly judge: JudgeModelState | null;
  /** The series' key, for `LiveJudges`. */
  readonly series?: string;
}

export interface JudgeResult {
  /** One per new value. */
  readonly detections: LastResult[];
  /** The judge's state after the last new value, to keep with the window. */
  readonly judge: JudgeModelState;
  /**
   * How many of the newest values (the context and the new ones) the judge keeps as its history:
   * the window keeps as many (`appendToWindow`'s `historyPoints`), no more, so a judge restored
   * from the window continues exactly. Below `judge.historyPoints` after the history grew.
   */
  readonly historyLength: number;
}

/**
 * Judges the new points one by one with the following judge, resumed from the task's state when
 * it belongs to this context (same point count; a state of a window below the configured one is
 * refitted on the configured one), else started on the context (a window from an old checkpoint):
 * then the period is detected and the model fitted at the first new point. Either way the judgements do not depend on how the
 * stream was cut into batches, and a restarted worker resumes exactly where the checkpoint left.
 */
export function judgeNewPoints(task: JudgeTask, settings: JudgeSettings, live?: LiveJudges): JudgeResult {
  const kept = live?.take(task, settings.windowPoints) ?? null;
  if (kept !== null) {
    const detections = task.newValues.map((value) => kept.push(value));
    return { detections, judge: live!.keep(task, kept, kept.state(), settings.windowPoints), historyLength: kept.historyLength };
  }
  const resumable = task.judge !== null && task.judge.judge.seen === task.seenPoints;
  const state: FollowingJudgeState = resumable ? task.judge! : freshFollowingState(settings.windowPoints, task.seenPoints);
  const judge = createFollowingJudge(
    {
      windowPoints: settings.windowPoints,
      sensitivity: task.sensitivity,
      maxAnomalyRatio: settings.maxAnomalyRatio,
      ...(settings.memoryPoints === undefined ? {} : { memoryPoints: settings.memoryPoints }),
    },
    { state, history: task.context },
  );
  const detections = task.newValues.map((value) => judge.push(value));
  const after = judge.state();
  const historyLength = judge.historyLength;
  if (live === undefined) {
    judge.release();
    return { detections, judge: after, historyLength };
  }
  return { detections, judge: live.keep(task, judge, after, settings.windowPoints), historyLength };
}

/**
 * Judges kept alive between batches, one per series, so that a series' next batch continues the
 * same judge instead of restoring one from the window and the state (which costs about three
 * points' judging). The state a kept judge returns carries a random stamp; the judge is used
 * again only for a task whose state has that stamp (and the same point count, window and
 * sensitivity): a failed batch retried, a window reloaded from a checkpoint (stamps are not
 * checkpointed) or a state from another thread restores as before, so results are the same either
 * way. At most `capacity` judges (about 50 KB each at window 720); the least recently used is
 * released beyond that.
 */
export class LiveJudges {
  private readonly held = new Map<string, { judge: FollowingJudge; stamp: number; sensitivity: number; windowPoints: number }>();

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.held.size;
  }

  /** The series' judge if it continues exactly from `task` (removed from the cache: keep it again). */
  take(task: JudgeTask, windowPoints: number): FollowingJudge | null {
    if (task.series === undefined) return null;
    const entry = this.held.get(task.series);
    if (entry === undefined) return null;
    this.held.delete(task.series);
    const continues =
      task.judge !== null &&
      entry.stamp === task.judge.stamp &&
      entry.judge.seen === task.seenPoints &&
      entry.sensitivity === task.sensitivity &&
      entry.windowPoints === windowPoints;
    if (continues) return entry.judge;
    entry.judge.release();
    return null;
  }

  /**
   * Keeps `judge` for the task's series (after `take`, which removed any earlier one); returns
   * its state stamped for `take`, or as it is when not kept.
   */
  keep(task: JudgeTask, judge: FollowingJudge, state: FollowingJudgeState, windowPoints: number): JudgeModelState {
    if (task.series === undefined || this.capacity <= 0) {
      judge.release();
      return state;
    }
    while (this.held.size >= this.capacity) {
      const [oldest, entry] = this.held.entries().next().value!;
      this.held.delete(oldest);
      entry.judge.release();
    }
    const stamp = Math.random();
    this.held.set(task.series, { judge, stamp, sensitivity: task.sensitivity, windowPoints });
    return { ...state, stamp };
  }

  /** Releases every kept judge (partitions revoked, worker stopping). */
  clear(): void {
    for (const entry of this.held.values()) entry.judge.release();
    this.held.clear();
  }
}
