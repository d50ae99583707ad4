// The judge of a batch: each series' replays dropped (points at or before its newest judged
// timestamp), then its new points judged after its window (new-points-judge.ts), in this thread
// in slices that let the bus heartbeat, or in the detection threads (detect-pool.ts).
import type { LastResult } from '@adp/detection';
import type { ResultRow } from '@adp/streaming';
import type { SeriesBaseline } from './baselines.js';
import type { PendingSeries } from './decode.js';
import type { Detector } from './detect-pool.js';
import type { LevelStream } from './level-hold.js';
import { judgeHistory, type SeriesWindow } from './series-window.js';
import { judgeNewPoints, type JudgeModelState, type JudgeResult, type JudgeSettings, type JudgeTask, type LiveJudges } from './new-points-judge.js';

/** Longest stretch of detection work in this thread before it yields, ms. */
const SLICE_MS = 50;

/** A series of the batch, ready to judge. */
export interface PreparedSeries {
  readonly pending: PendingSeries;
  readonly window: SeriesWindow;
  readonly baseline: SeriesBaseline | null;
  readonly newTsMs: number[];
  readonly newValues: number[];
  /** Null: nothing new. */
  readonly task: JudgeTask | null;
}

/** A judged series; the learned stage (learned-stage.ts) fills in the scores of one with a baseline. */
export interface JudgedSeries {
  readonly pending: PendingSeries;
  readonly window: SeriesWindow;
  readonly baseline: SeriesBaseline | null;
  readonly newTsMs: number[];
  readonly newValues: number[];
  /** One per new point. */
  readonly detections: LastResult[];
  /** The incremental judge's state after the new points (null: nothing was judged). */
  readonly judge: JudgeModelState | null;
  /** How many of the newest values the judge keeps as its history (`JudgeResult.historyLength`). */
  readonly historyLength: number | null;
  energies: Float64Array | null;
  zScores: Float64Array | null;
  /** The new points' z-scores as the regime rules judged them (spikes' echoes out); kept in the window. */
  judgedZScores: number[] | null;
  regimes: ResultRow['regime'][] | null;
  /** The new points' learned scores (z-scores plus the shape scores' excess); null without a baseline. */
  learnedScores: Float64Array | null;
  /** Where the newest point beyond the learned band was after the join, to keep with the window (-1: none). */
  lastLearnedExcessAt: number;
  /** The level model's stream after the new points, to keep with the window (null: no level model). */
  levelAfter: LevelStream | null;
}

/** Drops replays and out-of-order points and builds the detection task of series `key`. */
export function prepareSeries(
  key: string,
  pending: PendingSeries,
  window: SeriesWindow,
  baseline: SeriesBaseline | null,
  defaultSensitivity: number,
): PreparedSeries {
  const newTsMs: number[] = [];
  const newValues: number[] = [];
  let newest = window.lastJudgedTsMs;
  for (let i = 0; i < pending.tsMs.length; i++) {
    const ts = pending.tsMs[i]!;
    if (ts <= newest) continue;
    newest = ts;
    newTsMs.push(ts);
    newValues.push(pending.values[i]!);
  }
  const task: JudgeTask | null =
    newValues.length === 0
      ? null
      : {
          context: judgeHistory(window),
          newValues,
          seenPoints: window.seenPoints,
          sensitivity: baseline?.sensitivity ?? defaultSensitivity,
          judge: window.judge,
          series: key,
        };
  return { pending, window, baseline, newTsMs, newValues, task };
}

/** Where the judging runs: detection threads, or this thread with its live judges (if any). */
export interface JudgeRunner {
  readonly threads: Detector | null;
  readonly live: LiveJudges | undefined;
}

/**
 * Judges the prepared series in order. detectMs is this batch's own work in this thread (the
 * slices, not the other partitions' work between them), or with threads the wait for them.
 */
export async function judgeSeries(
  prepared: readonly PreparedSeries[],
  settings: JudgeSettings,
  runner: JudgeRunner,
): Promise<{ judged: JudgedSeries[]; detectMs: number }> {
  const tasks = prepared.flatMap((p) => (p.task ? [p.task] : []));
  let results: JudgeResult[];
  let detectMs = 0;
  if (runner.threads) {
    const started = performance.now();
    results = tasks.length === 0 ? [] : await runner.threads.judge(tasks, settings);
    detectMs = performance.now() - started;
  } else {
    results = [];
    let sliceStarted = performance.now();
    for (const task of tasks) {
      results.push(judgeNewPoints(task, settings, runner.live));
      const now = performance.now();
      if (now - sliceStarted >= SLICE_MS) {
        detectMs += now - sliceStarted;
        await new Promise((resolve) => setImmediate(resolve));
        sliceStarted = performance.now();
      }
    }
    detectMs += performance.now() - sliceStarted;
  }
  let nextResult = 0;
  const judged = prepared.map((p): JudgedSeries => {
    const result: Pick<JudgedSeries, 'detections' | 'judge' | 'historyLength'> = p.task
      ? results[nextResult++]!
      : { detections: [], judge: null, historyLength: null };
    return {
      pending: p.pending,
      window: p.window,
      baseline: p.baseline,
      newTsMs: p.newTsMs,
      newValues: p.newValues,
      detections: result.detections,
      judge: result.judge,
      historyLength: result.historyLength,
      energies: null,
      zScores: null,
      judgedZScores: null,
      regimes: null,
      learnedScores: null,
      lastLearnedExcessAt: -1,
      levelAfter: null,
    };
  });
  return { judged, detectMs };
}
