// A baselined detection's verdicts: the engine's (the statistical residual against the series'
// expected values) and the machine's learned model's, joined. The learned side reads the energies
// against the baseline's statistics, which come from data the predictor was not fitted on
// (energy-stats.ts), with the engine's own sensitivity rule: an energy is out of its band when its
// z-score exceeds marginMultiplier(sensitivity), the number of robust standard deviations the
// engine's band spans at that sensitivity. So one sensitivity means the same on both sides.
import { anomalyCap, bandHolding, baselineFindsOrdinary, EVENT_GAP_SHARE, flagHeld, learnedOverride, learnedSeverity, marginMultiplier, reportEvents, ROUTINE_EVENT_COUNT, widenedMargin, type EntireResult } from '@adp/detection';
import { levelCarry, type LevelVerdict } from '@adp/machine';
import { WINDOW_POINTS } from '@adp/model';

/** The fields of the answer the verdict decides. */
export type Verdicts = Omit<EntireResult, 'period' | 'expectedValues'>;

/** The verdicts, and where a departure the level model sees holds (flagged points it finds away). */
export type HeldVerdicts = Verdicts & { readonly held: readonly boolean[] };

export interface LearnedVerdictInput {
  readonly values: readonly number[];
  readonly entire: Pick<EntireResult, 'expectedValues' | keyof Verdicts>;
  /**
   * The points' learned scores, on a z-score's scale: the z-scores against the baseline's energy
   * statistics, plus the shape scores where the baseline keeps a shape reference.
   */
  readonly scores: ArrayLike<number>;
  /**
   * How severe a point the learned side flags is, on the same scale (absent: `scores`); never
   * less than its score in `scores`. Detection passes the z-scores plus the centred shape scores,
   * which see the whole unusual subsequence around a point, where `scores` (with the shape score
   * within) decides which points are flagged.
   */
  readonly severityScores?: ArrayLike<number>;
  readonly sensitivity: number;
  readonly maxAnomalyRatio: number;
  /**
   * The baseline's level model on the request's values (absent: no level model): a reported
   * event's flag holds while the level it moved to stays away from the healthy one (levelCarry).
   */
  readonly level?: LevelVerdict;
}

/**
 * The joined verdicts: a point is anomalous when its learned score is beyond the band, or when the
 * engine flags it and the baseline does not find it ordinary (`baselineFindsOrdinary`: a known
 * learned score within the band overrules a residual-only flag, whose band is then widened past
 * its value), with the larger severity (the learned one from `severityScores` where given). Where the learned severity is the larger, the point's band is the one that gives
 * the engine's rule (severity = 1 − margin / |deviation|) that severity, so "outside the band",
 * "anomaly" and the severity still agree for a client drawing the band; its direction is the side its value lies on (a value on its expected
 * value cannot be outside a band and is left to the engine). Points whose model window is partly
 * padding (before WINDOW_POINTS) keep the engine's verdict. The union is then reported as events,
 * by the rules entire-series detection applies to its own flags (reportEvents: flags close together
 * are one event; an event that many others reach is routine and not reported), so a baselined
 * machine pages once per event as any series does, and a learned excursion that recurs all
 * through the request is not one. An event that ended within the request is flagged at its most
 * severe point, where entire detection without a baseline flags its first: a learned excursion
 * can run for hundreds of points before the anomaly within it, and the point the baseline finds
 * worst is where to look (chosen on UCR dev's half A, docs/evaluation.md). An event still under
 * way at the request's end keeps its first point: a level shift's score keeps growing after the
 * jump, and the jump is what to page on. With a level model, a reported flag then holds for as long
 * as the series' level or spread stays away from the healthy state (each held point as severe as
 * the level model finds it, never more than the flag), so a departure that lasts is flagged while
 * it lasts and is one episode. The request's cap on flagged points
 * holds for the union's events (the most severe kept, an engine flag the cap drops with its band
 * widened past its value as the engine does); a held point is part of the event its flag reports,
 * so held points are added after the cap, from the flags it kept, and do not count against it.
 */
export function learnedVerdicts(input: LearnedVerdictInput): HeldVerdicts {
  const { values, entire, scores } = input;
  const n = values.length;
  const upperMargins = [...entire.upperMargins];
  const lowerMargins = [...entire.lowerMargins];
  const severity = [...entire.severity];
  const isAnomaly = [...entire.isAnomaly];
  const learnedOnly = new Array<boolean>(n).fill(false);
  const band = marginMultiplier(input.sensitivity);
  for (let i = WINDOW_POINTS; i < n; i++) {
    const score = scores[i] ?? Number.NaN;
    if (isAnomaly[i] && baselineFindsOrdinary(score, band)) {
      // The baseline finds the point ordinary: the residual alone does not flag it.
      isAnomaly[i] = false;
      severity[i] = 0;
      upperMargins[i] = bandHolding(values[i] ?? 0, entire.expectedValues[i] ?? 0, upperMargins[i] ?? 0);
      lowerMargins[i] = bandHolding(values[i] ?? 0, entire.expectedValues[i] ?? 0, lowerMargins[i] ?? 0);
      continue;
    }
    const value = values[i] ?? 0;
    const expectedValue = entire.expectedValues[i] ?? 0;
    const flagged = learnedOverride(value, expectedValue, severity[i] ?? 0, learnedSeverity(score, band));
    if (flagged === null) continue;
    // How severe: the severity score where it says more than the point's own score.
    const graded = input.severityScores?.[i] ?? Number.NaN;
    const override = graded > score ? (learnedOverride(value, expectedValue, severity[i] ?? 0, learnedSeverity(graded, band)) ?? flagged) : flagged;
    if (!isAnomaly[i]) learnedOnly[i] = true;
    severity[i] = override.severity;
    isAnomaly[i] = true;
    upperMargins[i] = override.margin;
    lowerMargins[i] = override.margin;
  }
  const expected = entire.expectedValues;
  const direction = (i: number, sign: number): boolean => isAnomaly[i] === true && Math.sign((values[i] ?? 0) - (expected[i] ?? 0)) === sign;
  const joined = {
    upperMargins,
    lowerMargins,
    isAnomaly,
    severity,
    isPositiveAnomaly: isAnomaly.map((_, i) => direction(i, 1)),
    isNegativeAnomaly: isAnomaly.map((_, i) => direction(i, -1)),
  };
  reportEvents(values, expected, joined, {
    routineCount: ROUTINE_EVENT_COUNT,
    gapPoints: Math.round(EVENT_GAP_SHARE * n),
    report: 'peak',
  });
  const flagged = isAnomaly.flatMap((flag, i) => (flag ? [i] : []));
  const cap = anomalyCap(input.maxAnomalyRatio, n);
  if (flagged.length > cap) {
    flagged.sort((a, b) => (severity[b] ?? 0) - (severity[a] ?? 0) || a - b);
    for (const i of flagged.slice(cap)) {
      isAnomaly[i] = false;
      severity[i] = 0;
      if (learnedOnly[i]) {
        upperMargins[i] = entire.upperMargins[i] ?? 0;
        lowerMargins[i] = entire.lowerMargins[i] ?? 0;
      } else {
        const widened = widenedMargin(values[i] ?? 0, entire.expectedValues[i] ?? 0);
        upperMargins[i] = widened;
        lowerMargins[i] = widened;
      }
    }
  }
  // The cap counts events; a departure's held points go with the flag the cap kept.
  // Points flagged only because a departure's level held (after the cap). A held point on its
  // expected value is still part of the departure (heldPoint), so its episode does not break there.
  const held =
    input.level === undefined
      ? []
      : flagHeld({ isAnomaly, severity, upperMargins, lowerMargins }, values, entire.expectedValues, levelCarry(isAnomaly, severity, input.level));
  const isPositiveAnomaly = isAnomaly.map((flag, i) => flag && (values[i] ?? 0) > (entire.expectedValues[i] ?? 0));
  const isNegativeAnomaly = isAnomaly.map((flag, i) => flag && (values[i] ?? 0) < (entire.expectedValues[i] ?? 0));
  // Where a departure holds: flagged points the level model finds away from the healthy state.
  const holding = isAnomaly.map((flag, i) => flag && (held[i] === true || input.level?.isAnomaly[i] === true));
  return { upperMargins, lowerMargins, isAnomaly, isPositiveAnomaly, isNegativeAnomaly, severity, held: holding };
}
