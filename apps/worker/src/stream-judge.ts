// Last-point judgement of a series' new points after its kept window. Pure (plain data in and
// out), so it runs in the worker's thread or in a detection thread (detect-pool.ts) alike.
//
// The engine's incremental judge (`createStreamJudge`) carries the model's fitted parts from one
// point to the next and refits them every few points, so a point costs a fraction of a full
// last-point detection over the window. Its state (period schedule, seasonal profile, noise
// scale) travels with the series' window and its checkpoint (series-window.ts); the history it
// needs is the window's own values, so it is not stored twice.
import { createStreamJudge, type LastResult, type StreamJudge, type StreamJudgeModelState, type StreamJudgeState } from '@adp/detection';

export interface JudgeSettings {
  /** Trailing window, the judged point included. */
  readonly windowPoints: number;
  readonly maxAnomalyRatio: number;
}

/** The incremental judge's state without its history (which is the window's newest values). */
export type JudgeModelState = StreamJudgeModelState;

export interface JudgeTask {
  /** The kept values before the new ones, oldest first (the last windowPoints - 1 are used). */
  readonly context: readonly number[];
  readonly newValues: readonly number[];
  /** Points of the series before newValues[0], ever. */
  readonly seenPoints: number;
  readonly sensitivity: number;
  /** The judge's state after the context's last point; null: fit afresh on the context. */
  readonly judge: JudgeModelState | null;
  /** The series' key, for `LiveJudges` (judging in the worker's own thread). */
  readonly series?: string;
}

export interface JudgeResult {
  /** One per new value. */
  readonly detections: LastResult[];
  /** The judge's state after the last new value, to keep with the window. */
  readonly judge: JudgeModelState;
}

/**
 * Judges the new points one by one with the incremental judge, resumed from the task's state
 * when it belongs to this context (same window size, same point count), else started on the
 * context (a window from an old checkpoint or another window size): then the period is detected
 * and the model fitted at the first new point. Either way the judgements do not depend on how the
 * stream was cut into batches, and a restarted worker resumes exactly where the checkpoint left.
 */
export function judgeNewPoints(task: JudgeTask, settings: JudgeSettings, live?: LiveJudges): JudgeResult {
  const kept = live?.take(task, settings.windowPoints) ?? null;
  if (kept !== null) {
    const detections = task.newValues.map((value) => kept.push(value));
    const after = kept.modelState();
    live!.keep(task, kept, after);
    return { detections, judge: after };
  }
  const history = task.context.slice(-(settings.windowPoints - 1));
  const resumable =
    task.judge !== null && task.judge.seen === task.seenPoints && task.judge.windowPoints === settings.windowPoints;
  const state: StreamJudgeState = resumable
    ? { ...task.judge!, values: history }
    : {
        version: 1,
        windowPoints: settings.windowPoints,
        values: history,
        seen: task.seenPoints,
        detectedAt: null,
        cachedPeriod: 0,
        model: null,
      };
  const judge = createStreamJudge(
    { windowPoints: settings.windowPoints, sensitivity: task.sensitivity, maxAnomalyRatio: settings.maxAnomalyRatio },
    state,
  );
  const detections = task.newValues.map((value) => judge.push(value));
  const after = judge.modelState();
  if (live === undefined || task.series === undefined) judge.release();
  else live.keep(task, judge, after);
  return { detections, judge: after };
}

/**
 * Judges kept alive between batches, one per series, so that a series' next batch continues the
 * same judge instead of restoring one from the window and the state (which costs about three
 * points' judging). A kept judge is used only for the task whose state is the very object it
 * returned last (and the same point count, window and sensitivity): a failed batch retried, a
 * window reloaded from a checkpoint or a state from elsewhere restores as before, so results are
 * the same either way. At most `capacity` judges (about 50 KB each at window 720); the least
 * recently used is released beyond that.
 */
export class LiveJudges {
  private readonly held = new Map<string, { judge: StreamJudge; state: JudgeModelState; sensitivity: number; windowPoints: number }>();

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.held.size;
  }

  /** The series' judge if it continues exactly from `task` (removed from the cache: keep it again). */
  take(task: JudgeTask, windowPoints: number): StreamJudge | null {
    if (task.series === undefined) return null;
    const entry = this.held.get(task.series);
    if (entry === undefined) return null;
    this.held.delete(task.series);
    const continues =
      entry.state === task.judge &&
      entry.judge.seen === task.seenPoints &&
      entry.sensitivity === task.sensitivity &&
      entry.windowPoints === windowPoints;
    if (continues) return entry.judge;
    entry.judge.release();
    return null;
  }

  keep(task: JudgeTask, judge: StreamJudge, state: JudgeModelState): void {
    if (task.series === undefined || this.capacity <= 0) {
      judge.release();
      return;
    }
    const previous = this.held.get(task.series);
    if (previous !== undefined && previous.judge !== judge) previous.judge.release();
    this.held.delete(task.series);
    while (this.held.size >= this.capacity) {
      const [oldest, entry] = this.held.entries().next().value!;
      this.held.delete(oldest);
      entry.judge.release();
    }
    this.held.set(task.series, { judge, state, sensitivity: task.sensitivity, windowPoints: state.windowPoints });
  }

  /** Releases every kept judge (partitions revoked, worker stopping). */
  clear(): void {
    for (const entry of this.held.values()) entry.judge.release();
    this.held.clear();
  }
}
