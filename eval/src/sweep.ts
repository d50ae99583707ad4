// The sensitivity sweep: what ships (row (a), the worker's following judge with its defaults) over
// NAB at several sensitivities, with window-level precision and recall (see nab-scorer
// windowPrecisionRecall) and the NAB scores.
import { lineChartPng } from './chart.js';
import type { EngineApi } from './engine.js';
import type { NabCorpus } from './nab-data.js';
import { type NabDetectorResult, runNab } from './nab-run.js';
import { shippedDetector } from './shipped.js';

export interface SweepPoint {
  readonly sensitivity: number;
  /** Detections inside windows / all detections (after probation); null with no detections. */
  readonly precision: number | null;
  /** Windows with a detection / all windows. */
  readonly recall: number | null;
  readonly detections: number;
  readonly detectionsInWindows: number;
  readonly recalledWindows: number;
  readonly windows: number;
  /** Normalised NAB score per profile at this sensitivity. */
  readonly nab: Readonly<Record<string, number>>;
  readonly elapsedMs: number;
  readonly errors: number;
}

/** The row the sweep runs at each sensitivity. */
export const SWEEP_ROW = 'shipped:stream';

export function runSweep(
  corpus: NabCorpus,
  api: EngineApi,
  sensitivities: readonly number[],
  onPoint: (p: SweepPoint) => void = () => {},
): SweepPoint[] {
  return sensitivities.map((sensitivity) => {
    const point = sweepPoint(sensitivity, runNab(corpus, shippedDetector(api, SWEEP_ROW, sensitivity).detector));
    onPoint(point);
    return point;
  });
}

/** A sweep point from one NAB run at `sensitivity` (here or in a thread). */
export function sweepPoint(sensitivity: number, result: NabDetectorResult): SweepPoint {
  const nab: Record<string, number> = {};
  for (const [profile, s] of Object.entries(result.profiles)) nab[profile] = s.score;
  const sum = (pick: (f: (typeof result.files)[number]) => number): number => result.files.reduce((n, f) => n + pick(f), 0);
  return {
    sensitivity,
    precision: result.precision,
    recall: result.recall,
    detections: sum((f) => f.detections),
    detectionsInWindows: sum((f) => f.detectionsInWindows),
    recalledWindows: sum((f) => f.detectedWindows),
    windows: sum((f) => f.windows),
    nab,
    elapsedMs: result.elapsedMs,
    errors: result.errors,
  };
}

export function sweepChartPng(points: readonly SweepPoint[]): Buffer {
  const xs = points.map((p) => p.sensitivity);
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  const pad = Math.max(2, (hi - lo) * 0.05);
  return lineChartPng({
    width: 900,
    height: 540,
    title: 'NAB dev: precision and recall vs sensitivity',
    xLabel: 'sensitivity',
    yLabel: 'share',
    xDomain: [lo - pad, hi + pad],
    yDomain: [0, 1],
    xTicks: xs,
    yTicks: [0, 0.2, 0.4, 0.6, 0.8, 1],
    series: [
      { name: 'precision', color: [31, 119, 180], points: points.map((p) => ({ x: p.sensitivity, y: p.precision })) },
      { name: 'recall', color: [214, 39, 40], points: points.map((p) => ({ x: p.sensitivity, y: p.recall })) },
    ],
  });
}
