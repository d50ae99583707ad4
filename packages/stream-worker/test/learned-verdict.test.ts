import { LEARNED_ONSET_POINTS, learnedSeverity, marginMultiplier, type LastResult } from '@adp/detection';
import { WINDOW_POINTS } from '@adp/model';
import { describe, expect, it } from 'vitest';
import { joinLearnedVerdicts, type StreamLearnedInput } from '../src/learned-verdict.js';

const BAND = marginMultiplier(95);

function engine(expectedValue: number, overrides: Partial<LastResult> = {}): LastResult {
  return {
    period: 0,
    suggestedWindow: 120,
    expectedValue,
    upperMargin: 2,
    lowerMargin: 2,
    isAnomaly: false,
    isPositiveAnomaly: false,
    isNegativeAnomaly: false,
    severity: 0,
    ...overrides,
  };
}

/** Values 10 above (or below) an expected 50, the engine passing them all. */
function input(scores: readonly number[], overrides: Partial<StreamLearnedInput> = {}): StreamLearnedInput {
  return {
    values: scores.map((_, k) => (k % 2 === 0 ? 60 : 40)),
    detections: scores.map(() => engine(50)),
    scores: Float64Array.from(scores),
    lastExcessAt: -1,
    historyIndex: 1000,
    sensitivity: 95,
    ...overrides,
  };
}

const flags = (detections: readonly LastResult[]): number[] => detections.flatMap((d, k) => (d.isAnomaly ? [k] : []));

describe('joinLearnedVerdicts', () => {
  it('flags a learned excursion once, at its onset, however its score hovers about the band', () => {
    const high = BAND + 3;
    const scores = [0, high, high + 1, BAND - 1, high, 0, 0.5, high, high, Number.NaN, high];
    const joined = joinLearnedVerdicts(input(scores));
    expect(flags(joined.detections)).toEqual([1]);
    expect(joined.lastExcessAt).toBe(1000 + 10);
    // A point within the band says nothing about where the excursion was.
    expect(joinLearnedVerdicts(input([0, 1], { lastExcessAt: 900 })).lastExcessAt).toBe(900);
  });

  it('flags a new excursion once LEARNED_ONSET_POINTS points went by within the band', () => {
    const high = BAND + 2;
    const scores = new Array<number>(2 * LEARNED_ONSET_POINTS + 3).fill(0);
    scores[0] = high;
    scores[LEARNED_ONSET_POINTS] = high; // LEARNED_ONSET_POINTS after the first: the same excursion
    scores[2 * LEARNED_ONSET_POINTS + 1] = high; // LEARNED_ONSET_POINTS + 1 after the last: a new one
    expect(flags(joinLearnedVerdicts(input(scores)).detections)).toEqual([0, 2 * LEARNED_ONSET_POINTS + 1]);
  });

  it("continues an excursion across batches: the window's last point beyond the band decides the first point's onset", () => {
    const high = BAND + 2;
    expect(flags(joinLearnedVerdicts(input([high, high], { lastExcessAt: 999 })).detections)).toEqual([]);
    expect(flags(joinLearnedVerdicts(input([high, high], { lastExcessAt: 1000 - LEARNED_ONSET_POINTS })).detections)).toEqual([]);
    expect(flags(joinLearnedVerdicts(input([high, high], { lastExcessAt: 999 - LEARNED_ONSET_POINTS })).detections)).toEqual([0]);
    // At the band is within it (the engine's rule: out only beyond it).
    expect(joinLearnedVerdicts(input([BAND], { lastExcessAt: -1 })).lastExcessAt).toBe(-1);
  });

  it("agrees with the API's rule: severity, band and direction from the learned severity where it is the larger", () => {
    const score = 3 * BAND;
    const severity = learnedSeverity(score, BAND);
    expect(severity).toBeCloseTo(2 / 3, 12);
    // Value 40 against an expected 50: below.
    const below = joinLearnedVerdicts(input([0, score])).detections[1]!;
    expect(below).toMatchObject({ isAnomaly: true, isPositiveAnomaly: false, isNegativeAnomaly: true, expectedValue: 50 });
    expect(below.severity).toBeCloseTo(severity, 12);
    // severity = 1 - margin / |value - expected|
    expect(below.upperMargin).toBeCloseTo(10 * (1 - severity), 12);
    expect(below.lowerMargin).toBeCloseTo(10 * (1 - severity), 12);
    const above = joinLearnedVerdicts(input([score], { values: [57] })).detections[0]!;
    expect(above).toMatchObject({ isAnomaly: true, isPositiveAnomaly: true, isNegativeAnomaly: false });
    expect(above.severity).toBeCloseTo(severity, 12);
    expect(above.upperMargin).toBeCloseTo(7 * (1 - severity), 12);
    expect(above.lowerMargin).toBe(above.upperMargin);
  });

  it("keeps the engine's verdict where its severity is the larger, and where the value is on its expected value", () => {
    const score = BAND * 1.25; // learned severity 0.2
    const strong = engine(50, { isAnomaly: true, isPositiveAnomaly: true, severity: 0.5, upperMargin: 5, lowerMargin: 5 });
    const joined = joinLearnedVerdicts(input([score, BAND + 10], { detections: [strong, engine(50)] }));
    expect(joined.detections[0]).toBe(strong);
    // The engine reported the excursion's onset: the learned side does not page it again.
    expect(flags(joined.detections)).toEqual([0]);
    const on = joinLearnedVerdicts(input([score], { values: [50] }));
    expect(on.detections[0]).toEqual(engine(50));
    expect(on.lastExcessAt).toBe(1000);
  });

  it('raises the severity of an engine flag at a learned onset, with the band that severity gives', () => {
    const weak = engine(50, { isAnomaly: true, isPositiveAnomaly: true, severity: 0.1, upperMargin: 9, lowerMargin: 9 });
    const joined = joinLearnedVerdicts(input([4 * BAND], { detections: [weak] })).detections[0]!;
    expect(joined).toMatchObject({ isAnomaly: true, isPositiveAnomaly: true, isNegativeAnomaly: false });
    expect(joined.severity).toBeCloseTo(0.75, 12);
    expect(joined.upperMargin).toBeCloseTo(2.5, 12);
  });

  it("keeps the engine's verdict on points whose model window is padding, and counts them as within the band", () => {
    const high = BAND + 5;
    const detections = [engine(50), engine(50, { isAnomaly: true, isNegativeAnomaly: true, severity: 0.05 }), engine(50), engine(50)];
    // Points WINDOW_POINTS-2 and -1 are padded; WINDOW_POINTS is the first judged one: an onset.
    const joined = joinLearnedVerdicts(input([high, high, high, high], { detections, historyIndex: WINDOW_POINTS - 2 }));
    expect(joined.detections[0]).toBe(detections[0]);
    expect(joined.detections[1]).toBe(detections[1]);
    expect(flags(joined.detections)).toEqual([1, 2]);
    expect(joined.detections[2]!.severity).toBeCloseTo(learnedSeverity(high, BAND), 12);
    expect(joinLearnedVerdicts(input([high, high], { historyIndex: 0 })).lastExcessAt).toBe(-1);
  });

  it('treats a NaN score as no learned verdict and as within the band', () => {
    const joined = joinLearnedVerdicts(input([Number.NaN, BAND + 1]));
    expect(joined.detections[0]).toEqual(engine(50));
    expect(flags(joined.detections)).toEqual([1]);
    expect(joinLearnedVerdicts(input([Number.NaN])).lastExcessAt).toBe(-1);
  });

  it('is the engine verdict, unchanged, when no score is beyond the band (a baseline without shapes adds only its z-scores)', () => {
    const base = input([0, 1, BAND, -4, Number.NaN]);
    const joined = joinLearnedVerdicts(base);
    base.detections.forEach((d, k) => expect(joined.detections[k]).toBe(d));
    expect(joined.lastExcessAt).toBe(-1);
  });

  it("overrules the engine's flag where the baseline finds the point ordinary, widening its band past the value", () => {
    const flagged = engine(50, { isAnomaly: true, isPositiveAnomaly: true, severity: 0.4, upperMargin: 6, lowerMargin: 6 });
    const base = input([BAND, Number.NaN, BAND + 1, 0], { detections: [flagged, flagged, flagged, flagged] });
    const joined = joinLearnedVerdicts(base);
    // 0 and 3: ordinary by the baseline; 1: no learned score (the engine's flag stands); 2: both flag.
    expect(flags(joined.detections)).toEqual([1, 2]);
    expect(joined.detections[0]).toEqual({ ...flagged, isAnomaly: false, isPositiveAnomaly: false, severity: 0, upperMargin: 10.1, lowerMargin: 10.1 });
    expect(joined.detections[3]).toMatchObject({ isAnomaly: false, severity: 0, upperMargin: 10.1 });
    // While the model's window is padding there is no learned verdict: the engine's flag stands.
    const early = joinLearnedVerdicts({ ...base, historyIndex: WINDOW_POINTS - 4 });
    expect(flags(early.detections)).toEqual([0, 1, 2, 3]);
  });

  it("uses the given sensitivity's band", () => {
    const score = marginMultiplier(99) + 0.5;
    expect(score).toBeLessThan(marginMultiplier(50));
    expect(flags(joinLearnedVerdicts(input([score], { sensitivity: 99 })).detections)).toEqual([0]);
    expect(flags(joinLearnedVerdicts(input([score], { sensitivity: 50 })).detections)).toEqual([]);
  });
});
