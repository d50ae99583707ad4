import * as detection from '@adp/detection';
import { type DetectOptions, type LastResult, type SeriesInput, STREAM_DEFAULTS } from '@adp/detection';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  appendToWindow,
  decodeWindow,
  emptyWindow,
  encodeWindow,
  judgeHistory,
  judgeNewPoints,
  loadWorkerConfig,
  windowCapacity,
  type JudgeModelState,
} from '@adp/stream-worker';
import { REQUEST_POINTS } from '../src/batch.js';
import { type EngineApi, SHIPPED_STREAM, type StreamOptions } from '../src/engine.js';
import { foldCell, leaveOneCategoryOut, nabCategory } from '../src/folds.js';
import { parseNabCsv } from '../src/nab-data.js';
import { windowRobustness } from '../src/harness.js';
import { lastClientRequest, lastDetectClient } from '../src/last-client.js';
import type { NabDetectorResult } from '../src/nab-run.js';
import { ROBUSTNESS_WINDOWS, SHIPPED_ROWS, shippedDetector, windowRowId, windowSettings } from '../src/shipped.js';
import { datasetTitle } from '../../test/datasets.js';
import { NAB, NAB_DIR } from './nab-subset.js';

function record(isAnomaly: boolean, suggestedWindow = 29): LastResult {
  return {
    period: 0,
    suggestedWindow,
    expectedValue: 0,
    upperMargin: 1,
    lowerMargin: 1,
    isAnomaly,
    isPositiveAnomaly: isAnomaly,
    isNegativeAnomaly: false,
    severity: isAnomaly ? 1 : 0,
  };
}

/** An engine that records what each row asks of it. */
function recordingEngine() {
  const calls = {
    judge: [] as StreamOptions[],
    following: [] as StreamOptions[],
    stream: 0,
    streamed: [] as StreamOptions[],
    period: [] as [number, string][],
    last: [] as { points: number; opts: DetectOptions }[],
    entire: [] as number[],
  };
  const api: EngineApi = {
    suggestedWindow: (period) => (period > 0 ? 4 * period + 1 : 1441),
    detectPeriod(values, granularity) {
      calls.period.push([values.length, granularity]);
      return 24;
    },
    detectStream(input, opts) {
      calls.stream += 1;
      calls.streamed.push(opts);
      return input.values.map(() => record(false));
    },
    judgeStream(values, opts) {
      calls.judge.push(opts);
      return values.map((v) => record(v > 100));
    },
    judgeStreamFollowing(values, opts) {
      calls.following.push(opts);
      return values.map((v) => record(v > 100));
    },
    detectLastPoint(input: SeriesInput, opts: DetectOptions) {
      calls.last.push({ points: input.values.length, opts });
      return record(input.values[input.values.length - 1]! > 100, 20);
    },
    detectEntireSeries(input: SeriesInput) {
      calls.entire.push(input.values.length);
      const flags = input.values.map((v) => v > 100);
      return { period: 0, expectedValues: input.values.map(() => 0), upperMargins: [], lowerMargins: [], isAnomaly: flags, isPositiveAnomaly: flags, isNegativeAnomaly: input.values.map(() => false), severity: [] };
    },
    detectChangePointSeries: () => ({ period: 0, isChangePoint: [], confidenceScores: [] }),
  };
  return { api, calls };
}

describe('row (a): the streaming worker with its defaults', () => {
  it("judges with the worker's default window, memory, sensitivity and ratio through the following judge, nothing from NAB's probation", () => {
    const worker = loadWorkerConfig({});
    expect(STREAM_DEFAULTS).toEqual({
      windowPoints: worker.windowPoints,
      memoryPoints: worker.memoryPoints,
      sensitivity: worker.sensitivity,
      maxAnomalyRatio: worker.maxAnomalyRatio,
    });
    const { api, calls } = recordingEngine();
    const values = Array.from({ length: 5000 }, (_, i) => (i === 4000 ? 500 : 1));
    const { detector, planOf } = shippedDetector(api, 'shipped:stream');
    expect(detector.flags(values).flatMap((f, i) => (f ? [i] : []))).toEqual([4000]);
    expect(calls.following).toEqual([
      { sensitivity: worker.sensitivity, maxAnomalyRatio: worker.maxAnomalyRatio, windowPoints: worker.windowPoints, memoryPoints: worker.memoryPoints },
    ]);
    // No period detected on a prefix, no fixed-window judge, no exact detectStream: the following judge alone.
    expect(calls.judge).toEqual([]);
    expect(calls.period).toEqual([]);
    expect(calls.stream).toBe(0);
    expect(planOf?.()).toMatchObject({ learningPoints: 0, period: null, windowPoints: 720 });
    expect(SHIPPED_STREAM.window).toEqual({ kind: 'fixed', points: STREAM_DEFAULTS.windowPoints });
    expect(SHIPPED_STREAM.judge).toEqual({ kind: 'following' });
  });

  it("flags what the worker's judge flags when the points arrive in batches", () => {
    // A noisy cycle of 240 points (the window grows to 4 × 240 + 1 = 961 once two cycles are in
    // it) with a spike and a level shift; the worker judges it in batches of 97 points, carrying
    // its window and judge state, as worker.ts does.
    const values = Array.from({ length: 2500 }, (_, i) => {
      const noise = ((Math.abs(Math.sin(i * 12.9898) * 43758.5453) % 1) - 0.5) * 2;
      return 50 + 10 * Math.sin((2 * Math.PI * i) / 240) + noise + (i === 1900 ? 40 : 0) + (i >= 2200 ? 15 : 0);
    });
    const ours = shippedDetector(detection as unknown as EngineApi, 'shipped:stream').detector.flags(values);
    const worker = loadWorkerConfig({});
    const theirs: boolean[] = [];
    let judge: JudgeModelState | null = null;
    for (let at = 0; at < values.length; at += 97) {
      const result = judgeNewPoints(
        { context: values.slice(0, at), newValues: values.slice(at, at + 97), seenPoints: at, sensitivity: worker.sensitivity, judge },
        { windowPoints: worker.windowPoints, memoryPoints: worker.memoryPoints, maxAnomalyRatio: worker.maxAnomalyRatio },
      );
      theirs.push(...result.detections.map((d) => d.isAnomaly));
      judge = result.judge;
    }
    expect(ours).toEqual(theirs);
    expect(ours[1900]).toBe(true);
    // The window grew (the history kept beyond 719 points) at some point of the stream.
    expect(judge!.historyPoints).toBeGreaterThan(worker.windowPoints - 1);
  });
});

describe.skipIf(!NAB.run)(datasetTitle("row (a) and the worker's checkpoints", NAB), () => {
  // Through the worker's glue (its window keeps the judge's history beside it, a checkpoint after
  // every batch, batches of 1 to 60 points), every verdict is row (a)'s, margins and expected
  // values included, on the NAB dev file whose judge's window grows after its kept history was
  // full (nyc_taxi: 720 → 1,345 at row 1,078) and on one whose window shrinks and grows back to a
  // size it had (art_daily_flatmiddle: the period dropped after its flat day, 1,153 → 720 → 1,153).
  const FILES = [
    { file: 'realKnownCause/nyc_taxi.csv', grows: true },
    { file: 'artificialWithAnomaly/art_daily_flatmiddle.csv', grows: false },
  ];

  it('judges each file as one uninterrupted judge does', async () => {
    const worker = loadWorkerConfig({});
    const settings = { windowPoints: worker.windowPoints, memoryPoints: worker.memoryPoints, maxAnomalyRatio: worker.maxAnomalyRatio };
    const capacity = windowCapacity(worker.windowPoints);
    let seed = 7;
    const draw = (): number => (seed = (seed * 16807) % 2147483647) / 2147483647;
    for (const { file, grows } of FILES) {
      const { values } = parseNabCsv(file, await readFile(path.join(NAB_DIR, 'data', file), 'utf8'));
      const whole = detection.judgeStreamFollowing(values, { ...settings, sensitivity: worker.sensitivity });
      const window = emptyWindow();
      let judge: JudgeModelState | null = null;
      const out: LastResult[] = [];
      let grewWithin = false;
      for (let at = 0; at < values.length; ) {
        const batch = values.slice(at, at + 1 + Math.floor(draw() * 60));
        const context = judgeHistory(window);
        const result = judgeNewPoints({ context, newValues: batch, seenPoints: at, sensitivity: worker.sensitivity, judge }, settings);
        out.push(...result.detections);
        // The kept history grew in this batch while it was full: the case the window must follow.
        if (judge !== null && context.length >= judge.historyPoints && result.judge.historyPoints > judge.historyPoints) grewWithin = true;
        appendToWindow(window, { values: batch, timestampsMs: batch.map((_, k) => at + k), zScores: batch.map(() => Number.NaN) }, capacity, result.historyLength);
        window.judge = result.judge;
        Object.assign(window, decodeWindow(encodeWindow(window), capacity)!);
        judge = window.judge;
        at += batch.length;
      }
      expect(grewWithin, `${file}: the kept history grew while full`).toBe(grows);
      if (!grows) expect(new Set(whole.map((r) => r.suggestedWindow))).toEqual(new Set([720, 1153]));
      expect(out, file).toEqual(whole);
    }
  });
});

describe('the window robustness row', () => {
  it('runs a last/detect client sending 720, 1441 and 8640 points, beside row (b) itself (the suggested window)', () => {
    expect(ROBUSTNESS_WINDOWS.map(windowRowId)).toEqual(['window:720', 'window:1441', 'shipped:last-client', 'window:8640']);
    expect(windowSettings(1441)).toEqual({ ...SHIPPED_STREAM, judge: { kind: 'exact' }, window: { kind: 'fixed', points: 1441 } });
    const { api, calls } = recordingEngine();
    shippedDetector(api, 'window:720').detector.flags(new Array<number>(3000).fill(1));
    shippedDetector(api, 'window:8640').detector.flags([1, 2, 3]);
    // Exact last-point detection over each window (detectStream), with the kept points' past range.
    expect(calls.streamed).toEqual([
      expect.objectContaining({ windowPoints: 720, memoryPoints: 8640 }),
      expect.objectContaining({ windowPoints: 8640, memoryPoints: 8640 }),
    ]);
    expect(calls.streamed.some((o) => 'followSuggestedWindow' in o)).toBe(false);
    expect(calls.judge).toEqual([]);
    expect(calls.following).toEqual([]);
    expect(calls.period).toEqual([]);
  });

  it("runs the vendor's suggestion (4 periods + 1) beside it, whatever the engine suggests", () => {
    const { api, calls } = recordingEngine();
    const engine: EngineApi = { ...api, suggestedWindow: () => 720 };
    shippedDetector(engine, 'window:vendor').detector.flags(new Array<number>(3000).fill(1));
    // The period the service finds in the first 720 points, as a request without timestamps: 4 × 24 + 1.
    expect(calls.period).toEqual([[720, 'none']]);
    expect(calls.streamed.map((j) => j.windowPoints)).toEqual([97]);
  });

  it('reports each window and the spread once every window ran', () => {
    const nab = (standard: number) => ({ profiles: { standard: { score: standard } } }) as unknown as NabDetectorResult;
    const entries = [
      { id: 'window:720', nab: nab(64) },
      { id: 'window:1441', nab: nab(66) },
      { id: 'shipped:last-client', nab: nab(58.5) },
    ];
    expect(windowRobustness(entries)).toBeUndefined();
    const r = windowRobustness([...entries, { id: 'window:8640', nab: nab(60) }]);
    expect(r?.windows.map((w) => [w.window, w.standard])).toEqual([[720, 64], [1441, 66], ['suggested', 58.5], [8640, 60]]);
    expect(r?.spread).toBeCloseTo(7.5, 10);
    expect(r?.vendor).toBeUndefined();
    const withVendor = windowRobustness([...entries, { id: 'window:8640', nab: nab(60) }, { id: 'window:vendor', nab: nab(20) }]);
    expect(withVendor?.vendor).toEqual({ standard: 20 });
    expect(withVendor?.spread).toBeCloseTo(7.5, 10);
  });
});

describe('row (b): a client of last/detect', () => {
  const settings = { sensitivity: 95, maxAnomalyRatio: 0.25, memoryPoints: 100, minPoints: 12, maxPoints: 8640 };
  const values = Array.from({ length: 300 }, (_, i) => i);

  it('starts at the 12th point with all it holds, then sends the suggested window and the range of the points it keeps before it', () => {
    expect(lastClientRequest(values, 10, undefined, settings)).toBeUndefined();
    expect(lastClientRequest(values, 11, undefined, settings)).toEqual({ from: 0, to: 11, pastRange: undefined });
    // Suggested 29 with 20 points held: all 20.
    expect(lastClientRequest(values, 19, 29, settings)).toEqual({ from: 0, to: 19, pastRange: undefined });
    // Suggested 29 with 50 held: rows 21..49, past range over rows 0..20.
    expect(lastClientRequest(values, 49, 29, settings)).toEqual({ from: 21, to: 49, pastRange: { min: 0, max: 20 } });
    // The client keeps 100 points: at row 250 those are rows 151..250; the window 222..250.
    expect(lastClientRequest(values, 250, 29, settings)).toEqual({ from: 222, to: 250, pastRange: { min: 151, max: 221 } });
    // A suggestion below the API's 12 points is raised to 12; above 8,640 cut to 8,640.
    expect(lastClientRequest(values, 250, 9, settings)?.from).toBe(239);
    expect(lastClientRequest(values, 250, 20_000, { ...settings, maxPoints: 200 })?.from).toBe(51);
  });

  it("calls the route's function once a row with the previous answer's suggestedWindow", () => {
    const { api, calls } = recordingEngine();
    const { detector, planOf } = shippedDetector(api, 'shipped:last-client');
    const series = Array.from({ length: 60 }, (_, i) => (i === 50 ? 500 : 1));
    expect(detector.flags(series).flatMap((f, i) => (f ? [i] : []))).toEqual([50]);
    // Rows 11..59: 12 points first (all it holds), then the fake's suggested 20 once it holds them.
    expect(calls.last.map((c) => c.points)).toEqual([12, 13, 14, 15, 16, 17, 18, 19, ...Array.from({ length: 41 }, () => 20)]);
    expect(calls.last[0]!.opts).toEqual({ sensitivity: 95, maxAnomalyRatio: 0.25 });
    expect(calls.last[1]!.opts).toEqual({ sensitivity: 95, maxAnomalyRatio: 0.25 });
    // Row 59: window rows 40..59, the client's past rows 0..39.
    expect(calls.last[48]!.opts).toEqual({ sensitivity: 95, maxAnomalyRatio: 0.25, pastRange: { min: 1, max: 1 } });
    expect(planOf?.()).toEqual({ windows: { 20: 41, 12: 1, 13: 1 } });
    const direct = lastDetectClient(api.detectLastPoint!, { ...settings, memoryPoints: 8640 }, 'x');
    expect(direct.flags(series)).toEqual(detector.flags(series));
  });
});

describe('row (c): entire-series detection per file', () => {
  it('sends each file in requests of at most 8,640 rows with the defaults', () => {
    const { api, calls } = recordingEngine();
    const values = Array.from({ length: 20_000 }, (_, i) => (i === 15_000 ? 500 : 1));
    const flags = shippedDetector(api, 'shipped:entire').detector.flags(values);
    expect(flags.flatMap((f, i) => (f ? [i] : []))).toEqual([15_000]);
    expect(calls.entire).toEqual([6666, 6667, 6667]);
    expect(Math.max(...calls.entire)).toBeLessThanOrEqual(REQUEST_POINTS);
    expect(SHIPPED_ROWS.slice(0, 3).map((r) => r.id)).toEqual(['shipped:stream', 'shipped:last-client', 'shipped:entire']);
  });
});

describe('leave-one-category-out folds', () => {
  it("scores each fold over the other categories' files as NAB normalises a corpus", () => {
    const profile = { name: 'standard', tpWeight: 1, fnWeight: 1, fpWeight: 0.11 };
    const files = [
      // A: 2 windows, raw 1.5 and -0.5; B: 1 window, raw -1 (missed); C: no window, two far FPs.
      { file: 'A/x.csv', windows: 1, raw: { standard: 1.5 } },
      { file: 'A/y.csv', windows: 1, raw: { standard: -0.5 } },
      { file: 'B/z.csv', windows: 1, raw: { standard: -1 } },
      { file: 'C/w.csv', windows: 0, raw: { standard: -0.22 } },
    ];
    const s = leaveOneCategoryOut(files, profile);
    // Without A: windows 1, S = -1.22, S_null = -1, S_perfect = 1: 100 (-1.22 + 1) / 2 = -11.
    // Without B: windows 2, S = 0.78, S_null = -2, S_perfect = 2: 100 × 2.78 / 4 = 69.5.
    // Without C: windows 3, S = 0, S_null = -3, S_perfect = 3: 100 × 3 / 6 = 50.
    expect(s.folds.map((f) => f.heldOut)).toEqual(['A', 'B', 'C']);
    expect(s.folds.map((f) => f.windows)).toEqual([1, 2, 3]);
    s.folds.forEach((f, i) => expect(f.score).toBeCloseTo([-11, 69.5, 50][i]!, 10));
    expect(s.mean).toBeCloseTo((-11 + 69.5 + 50) / 3, 10);
    expect(s.min).toBeCloseTo(-11, 10);
    expect(s.max).toBeCloseTo(69.5, 10);
    expect(foldCell(s)).toBe('36.2 (-11.0–69.5)');
    expect(nabCategory('realKnownCause/nyc_taxi.csv')).toBe('realKnownCause');
    expect(() => leaveOneCategoryOut(files.slice(0, 2), profile)).toThrow(RangeError);
  });
});
