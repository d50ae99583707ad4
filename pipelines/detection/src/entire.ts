// Entire-series detection: one model over all points, every input point judged against it.
import { decompose, seasonalAt } from './decomposition.js';
import { prepareSeries } from './prepare.js';
import { robustScale, scaleFloor } from './robust.js';
import { anomalyCap, judgePoints, marginMultiplier } from './scoring.js';
import type { DetectOptions, EntireResult, SeriesInput } from './types.js';

/**
 * Aligns and imputes the series, settles the period, fits the robust seasonal-trend model
 * (`decompose`) and flags the points outside expected ± z(sensitivity) × residual scale, at most
 * maxAnomalyRatio × n of them. Imputed points shape the fit but are not reported.
 */
export function detectEntireSeries(input: SeriesInput, opts: DetectOptions): EntireResult {
  const { prepared, period } = prepareSeries(input, opts.period);
  const model = decompose(prepared.values, prepared.slots, prepared.imputed, period);

  // One scale for the whole series, from the observed points only: imputed points sit on the
  // model by construction and would shrink it.
  const scale = robustScale(model.scaleResiduals, scaleFloor(prepared.values));
  const margin = marginMultiplier(opts.sensitivity) * scale;

  const n = input.values.length;
  const expectedValues: number[] = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const j = prepared.inputIndex[i]!;
    expectedValues[i] = model.trend[j]! + seasonalAt(model, j);
  }
  const margins = new Float64Array(n).fill(margin);
  const verdicts = judgePoints(input.values, expectedValues, margins, anomalyCap(opts.maxAnomalyRatio, n));
  return { period, expectedValues, ...verdicts };
}
