import { learnedSeverity, marginMultiplier, type LastResult } from '@adp/detection';
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
    previousScore: Number.NaN,
    historyIndex: 1000,
    sensitivity: 95,
    ...overrides,
  };
}

const flags = (detections: readonly LastResult[]): number[] => detections.flatMap((d, k) => (d.isAnomaly ? [k] : []));

describe('joinLearnedVerdicts', () => {
  it('flags a learned excursion once, at its onset, and again only after it went back within the band', () => {
    const high = BAND + 3;
    const joined = joinLearnedVerdicts(input([0, high, high + 1, high, 0, 0.5, high, high]));
    expect(flags(joined.detections)).toEqual([1, 6]);
    expect(joined.lastScore).toBe(high);
  });

  it("continues an excursion across batches: the window's last learned score decides the first point's onset", () => {
    const high = BAND + 2;
    expect(flags(joinLearnedVerdicts(input([high, high], { previousScore: high })).detections)).toEqual([]);
    expect(flags(joinLearnedVerdicts(input([high, high], { previousScore: BAND - 0.1 })).detections)).toEqual([0]);
    // At the band is within it (the engine's rule: out only beyond it).
    expect(flags(joinLearnedVerdicts(input([high], { previousScore: BAND })).detections)).toEqual([0]);
  });

  it("agrees with the API's rule: severity, band and direction from the learned severity where it is the larger", () => {
    const score = 3 * BAND;
    const joined = joinLearnedVerdicts(input([0, score, 0, score]));
    const severity = learnedSeverity(score, BAND);
    expect(severity).toBeCloseTo(2 / 3, 12);
    // Point 1 lies 10 below its expected value, point 3 too: both onsets.
    for (const k of [1, 3]) {
      const d = joined.detections[k]!;
      expect(d).toMatchObject({ isAnomaly: true, isPositiveAnomaly: false, isNegativeAnomaly: true, expectedValue: 50 });
      expect(d.severity).toBeCloseTo(severity, 12);
      // severity = 1 - margin / |value - expected|
      expect(d.upperMargin).toBeCloseTo(10 * (1 - severity), 12);
      expect(d.lowerMargin).toBeCloseTo(10 * (1 - severity), 12);
      expect(1 - d.lowerMargin / 10).toBeCloseTo(d.severity, 12);
    }
    const above = joinLearnedVerdicts(input([score], { values: [57] })).detections[0]!;
    expect(above).toMatchObject({ isAnomaly: true, isPositiveAnomaly: true, isNegativeAnomaly: false });
    expect(above.upperMargin).toBeCloseTo(7 * (1 - severity), 12);
  });

  it("keeps the engine's verdict where its severity is the larger, and where the value is on its expected value", () => {
    const score = BAND * 1.25; // learned severity 0.2
    const strong = engine(50, { isAnomaly: true, isPositiveAnomaly: true, severity: 0.5, upperMargin: 5, lowerMargin: 5 });
    const joined = joinLearnedVerdicts(input([score], { detections: [strong] }));
    expect(joined.detections[0]).toBe(strong);
    const on = joinLearnedVerdicts(input([score], { values: [50] }));
    expect(on.detections[0]).toEqual(engine(50));
    // Either way the excursion has begun: its next point is no onset.
    expect(on.lastScore).toBe(score);
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
  });

  it('treats a NaN score as no learned verdict, within the band for the next point', () => {
    const high = BAND + 1;
    const joined = joinLearnedVerdicts(input([Number.NaN, high, Number.NaN, high], { previousScore: high }));
    expect(joined.detections[0]).toEqual(engine(50));
    expect(flags(joined.detections)).toEqual([1, 3]);
    expect(joinLearnedVerdicts(input([high, Number.NaN])).lastScore).toBeNaN();
  });

  it('is the engine verdict, unchanged, when no score is beyond the band (a baseline without shapes adds only its z-scores)', () => {
    const base = input([0, 1, BAND, -4, Number.NaN]);
    const joined = joinLearnedVerdicts(base);
    base.detections.forEach((d, k) => expect(joined.detections[k]).toBe(d));
  });

  it("uses the given sensitivity's band", () => {
    const score = marginMultiplier(99) + 0.5;
    expect(score).toBeLessThan(marginMultiplier(50));
    expect(flags(joinLearnedVerdicts(input([score], { sensitivity: 99 })).detections)).toEqual([0]);
    expect(flags(joinLearnedVerdicts(input([score], { sensitivity: 50 })).detections)).toEqual([]);
  });
});
