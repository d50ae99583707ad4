// Last-point judgement of a series' new points after its kept window. Pure (plain data in and
// out), so it runs in the worker's thread or in a detection thread (detect-pool.ts) alike.
//
// The engine's incremental judge (`createStreamJudge`) carries the model's fitted parts from one
// point to the next and refits them every few points, so a point costs a fraction of a full
// last-point detection over the window. Its state (period schedule, seasonal profile, noise
// scale) travels with the series' window and its checkpoint (series-window.ts); the history it
// needs is the window's own values, so it is not stored twice.
import { createStreamJudge, type LastResult, type StreamJudgeModelState, type StreamJudgeState } from '@adp/detection';

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
export function judgeNewPoints(task: JudgeTask, settings: JudgeSettings): JudgeResult {
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
  judge.release();
  return { detections, judge: after };
}
