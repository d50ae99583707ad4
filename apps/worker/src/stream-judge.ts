// Last-point judgement of a series' new points after its kept window. Pure (plain data in and
// out), so it runs in the worker's thread or in a detection thread (detect-pool.ts) alike.
import { detectStream, type LastResult, type SeriesInput } from '@adp/detection';

export interface JudgeSettings {
  /** Trailing window, the judged point included. */
  readonly windowPoints: number;
  readonly maxAnomalyRatio: number;
}

export interface JudgeTask {
  /** The kept values before the new ones, oldest first (the last windowPoints - 1 are used). */
  readonly context: readonly number[];
  readonly newValues: readonly number[];
  /** Points of the series before newValues[0], ever. */
  readonly seenPoints: number;
  readonly sensitivity: number;
}

export interface JudgeResult {
  /** One per new value. */
  readonly detections: LastResult[];
}

/** Points between period re-detections: a tenth of the window, 1..100, as the engine's own default for a full window. */
export function periodRecheckPoints(windowPoints: number): number {
  return Math.max(1, Math.min(100, Math.floor(windowPoints / 10)));
}

function seriesInput(values: readonly number[]): SeriesInput {
  return { timestampsMs: null, values, granularity: 'none', customInterval: 1, imputeMode: 'auto' };
}

/**
 * The engine re-detects the period every `recheck` points counted from the start of each call
 * (at the call's first judged point). The new points are cut into stretches at multiples of
 * `recheck` in the series' own history, so the re-detections happen at the same points whatever
 * the batches were: a stream cut into batches at stretch boundaries is judged exactly as one
 * uninterrupted call would judge it. A batch that starts inside a stretch detects the period
 * afresh at its first point (the engine's own rule for a new call), so there the judgement can
 * differ slightly from an uninterrupted run's; each point is still judged once per delivery.
 */
export function judgeNewPoints(task: JudgeTask, settings: JudgeSettings): JudgeResult {
  const { newValues, seenPoints } = task;
  const context = task.context.slice(-(settings.windowPoints - 1));
  const series = context.concat(newValues);
  const detections: LastResult[] = [];
  const recheck = periodRecheckPoints(settings.windowPoints);
  let start = 0;
  while (start < newValues.length) {
    const end = Math.min(newValues.length, start + recheck - ((seenPoints + start) % recheck));
    const from = Math.max(0, context.length + start - (settings.windowPoints - 1));
    const firstJudged = context.length + start - from;
    const chunk = detectStream(seriesInput(series.slice(from, context.length + end)), {
      windowPoints: settings.windowPoints,
      sensitivity: task.sensitivity,
      maxAnomalyRatio: settings.maxAnomalyRatio,
      periodRecheckPoints: recheck,
      firstJudged,
    });
    for (let i = firstJudged; i < chunk.length; i++) detections.push(chunk[i]!);
    start = end;
  }
  return { detections };
}
