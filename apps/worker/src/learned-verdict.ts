// A baselined series' streaming verdict: the engine's stream judgement joined with the machine's
// learned scores, point by point, by the rule POST /v1/detect applies to a whole request
// (apps/api/src/machines/verdict.ts): the larger severity wins, and where the learned one does,
// the band and direction follow from it (`learnedOverride`). A stream cannot look ahead to group
// an excursion into one event, so it pages at the excursion's onset only: a learned flag needs the
// previous point's learned score within the band, which is why the series' window keeps its last
// learned score (series-window.ts).
import { learnedOverride, learnedSeverity, marginMultiplier, type LastResult } from '@adp/detection';
import { WINDOW_POINTS } from '@adp/model';

export interface StreamLearnedInput {
  /** The batch's new values. */
  readonly values: readonly number[];
  /** The engine's judgement of each new value. */
  readonly detections: readonly LastResult[];
  /** Each new value's learned score (energy z-score plus shape excess); NaN: none. */
  readonly scores: ArrayLike<number>;
  /** The learned score of the point before values[0]; NaN: none (within the band). */
  readonly previousScore: number;
  /** Index of values[0] in the series' whole history. */
  readonly historyIndex: number;
  readonly sensitivity: number;
}

export interface StreamLearnedVerdict {
  /** One per new value: the engine's where the learned side adds nothing. */
  readonly detections: LastResult[];
  /** The learned score of the last new value, for the next batch's `previousScore` (NaN: none). */
  readonly lastScore: number;
}

/**
 * Joins each new point's learned score into its verdict. A point whose model window is partly
 * padding (history index below WINDOW_POINTS) keeps the engine's verdict and counts as within the
 * band for the next point's onset, as do points without a score.
 */
export function joinLearnedVerdicts(input: StreamLearnedInput): StreamLearnedVerdict {
  const band = marginMultiplier(input.sensitivity);
  const detections: LastResult[] = [];
  let previous = input.previousScore;
  for (let k = 0; k < input.values.length; k++) {
    const detection = input.detections[k]!;
    const padded = input.historyIndex + k < WINDOW_POINTS;
    const score = padded ? Number.NaN : (input.scores[k] ?? Number.NaN);
    const onset = !(previous > band);
    previous = score;
    const learned = onset ? learnedSeverity(score, band) : 0;
    const override = learned > 0 ? learnedOverride(input.values[k]!, detection.expectedValue, detection.severity, learned) : null;
    if (override === null) {
      detections.push(detection);
      continue;
    }
    detections.push({
      ...detection,
      isAnomaly: true,
      isPositiveAnomaly: override.isPositiveAnomaly,
      isNegativeAnomaly: override.isNegativeAnomaly,
      severity: override.severity,
      upperMargin: override.margin,
      lowerMargin: override.margin,
    });
  }
  return { detections, lastScore: previous };
}
