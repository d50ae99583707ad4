// A baselined series' streaming verdict: the engine's stream judgement joined with the machine's
// learned scores, point by point, by the rule POST /v1/detect applies to a whole request
// (apps/api/src/machines/verdict.ts): the larger severity wins, and where the learned one does,
// the band and direction follow from it (`learnedOverride`); an engine flag on a point whose
// learned score is within the band is overruled (`baselineFindsOrdinary`). A stream cannot look ahead to group
// an excursion into one event, so it pages at the excursion's onset only: a point whose learned
// score is beyond the band is a learned flag only when no point of the LEARNED_ONSET_POINTS before
// it was, so a score that hovers about the band, or dips within it for a while, is one excursion. The series' window keeps where the last point beyond
// the band was (series-window.ts), so this holds across batches and restarts.
import { bandHolding, baselineFindsOrdinary, LEARNED_ONSET_POINTS, learnedOverride, learnedSeverity, marginMultiplier, type LastResult } from '@adp/detection';
import { WINDOW_POINTS } from '@adp/model';

export interface StreamLearnedInput {
  /** The batch's new values. */
  readonly values: readonly number[];
  /** The engine's judgement of each new value. */
  readonly detections: readonly LastResult[];
  /** Each new value's learned score (energy z-score plus shape excess); NaN: none. */
  readonly scores: ArrayLike<number>;
  /** History index of the newest earlier point whose learned score was beyond the band; -1: none. */
  readonly lastExcessAt: number;
  /** Index of values[0] in the series' whole history. */
  readonly historyIndex: number;
  readonly sensitivity: number;
}

export interface StreamLearnedVerdict {
  /** One per new value: the engine's where the learned side adds nothing. */
  readonly detections: LastResult[];
  /** History index of the newest point beyond the band so far, for the next batch's `lastExcessAt`. */
  readonly lastExcessAt: number;
}

/**
 * Joins each new point's learned score into its verdict. A point whose model window is partly
 * padding (history index below WINDOW_POINTS) keeps the engine's verdict and counts as within the
 * band, as does a point without a score.
 */
export function joinLearnedVerdicts(input: StreamLearnedInput): StreamLearnedVerdict {
  const band = marginMultiplier(input.sensitivity);
  const detections: LastResult[] = [];
  let lastExcessAt = input.lastExcessAt;
  for (let k = 0; k < input.values.length; k++) {
    const detection = input.detections[k]!;
    const index = input.historyIndex + k;
    const score = index < WINDOW_POINTS ? Number.NaN : (input.scores[k] ?? Number.NaN);
    if (detection.isAnomaly && baselineFindsOrdinary(score, band)) {
      // The baseline finds the point ordinary: the residual alone does not flag it.
      detections.push({
        ...detection,
        isAnomaly: false,
        isPositiveAnomaly: false,
        isNegativeAnomaly: false,
        severity: 0,
        upperMargin: bandHolding(input.values[k]!, detection.expectedValue, detection.upperMargin),
        lowerMargin: bandHolding(input.values[k]!, detection.expectedValue, detection.lowerMargin),
      });
      continue;
    }
    const learned = learnedSeverity(score, band);
    if (learned <= 0) {
      detections.push(detection);
      continue;
    }
    const onset = lastExcessAt < 0 || index - lastExcessAt > LEARNED_ONSET_POINTS;
    lastExcessAt = index;
    const override = onset ? learnedOverride(input.values[k]!, detection.expectedValue, detection.severity, learned) : null;
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
  return { detections, lastExcessAt };
}
