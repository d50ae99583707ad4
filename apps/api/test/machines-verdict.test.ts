import { describe, expect, it } from 'vitest';
import { marginMultiplier } from '@adp/detection';
import { WINDOW_POINTS } from '@adp/model';
import { learnedVerdicts } from '../src/machines/verdict.js';

const N = WINDOW_POINTS + 20;

/** An engine answer that flags nothing: expected 0, margins 1. */
function quietEngine(n = N) {
  return {
    expectedValues: new Array<number>(n).fill(0),
    upperMargins: new Array<number>(n).fill(1),
    lowerMargins: new Array<number>(n).fill(1),
    isAnomaly: new Array<boolean>(n).fill(false),
    isPositiveAnomaly: new Array<boolean>(n).fill(false),
    isNegativeAnomaly: new Array<boolean>(n).fill(false),
    severity: new Array<number>(n).fill(0),
  };
}

const SENSITIVITY = 95;
const BAND = marginMultiplier(SENSITIVITY);

describe('learned verdicts of a baselined detection', () => {
  it('flags a point the engine passes when its energy is beyond the band, with a band that agrees', () => {
    const values = new Array<number>(N).fill(0.5);
    values[70] = -0.5;
    const z = new Array<number>(N).fill(0);
    z[70] = 4 * BAND;
    const out = learnedVerdicts({ values, entire: quietEngine(), scores: z, sensitivity: SENSITIVITY, maxAnomalyRatio: 0.25 });
    expect(out.isAnomaly[70]).toBe(true);
    expect(out.isNegativeAnomaly[70]).toBe(true);
    expect(out.isPositiveAnomaly[70]).toBe(false);
    expect(out.severity[70]).toBeCloseTo(0.75, 12);
    // The band gives the engine's severity rule the same severity: 1 - margin / |deviation|.
    expect(1 - (out.lowerMargins[70] ?? 0) / 0.5).toBeCloseTo(0.75, 12);
    expect(out.isAnomaly.filter(Boolean)).toHaveLength(1);
    expect(out.upperMargins[69]).toBe(1);
  });

  it('keeps the engine verdict inside the band, before full windows, and on a value at its expected value', () => {
    const values = new Array<number>(N).fill(0.5);
    values[75] = 0;
    const z = new Array<number>(N).fill(BAND * 0.99);
    z[WINDOW_POINTS - 1] = 10 * BAND;
    z[75] = 10 * BAND;
    const engine = quietEngine();
    engine.isAnomaly[80] = true;
    engine.isPositiveAnomaly[80] = true;
    engine.severity[80] = 0.3;
    engine.upperMargins[80] = 0.35;
    z[80] = Number.NaN;
    const out = learnedVerdicts({ values, entire: engine, scores: z, sensitivity: SENSITIVITY, maxAnomalyRatio: 0.25 });
    // No learned flag inside the band, before full windows or at the expected value; the engine's
    // flag where no learned score is known stands.
    expect(out.isAnomaly.flatMap((flag, i) => (flag ? [i] : []))).toEqual([80]);
    expect(out.severity[80]).toBe(0.3);
    expect(out.upperMargins[80]).toBe(0.35);
  });

  it("overrules the engine's flag where the baseline finds the point ordinary, widening its band past the value", () => {
    const values = new Array<number>(N).fill(0.5);
    const engine = quietEngine();
    for (const i of [WINDOW_POINTS - 2, 78, 80]) {
      engine.isAnomaly[i] = true;
      engine.isPositiveAnomaly[i] = true;
      engine.severity[i] = 0.3;
      engine.upperMargins[i] = 0.35;
    }
    const z = new Array<number>(N).fill(0);
    z[78] = BAND; // at the band: ordinary
    z[80] = BAND * 1.5; // beyond it: the baseline agrees
    const out = learnedVerdicts({ values, entire: engine, scores: z, sensitivity: SENSITIVITY, maxAnomalyRatio: 0.25 });
    // Before full windows the engine's verdict stands; at 80 both flag (the larger severity).
    expect(out.isAnomaly.flatMap((flag, i) => (flag ? [i] : []))).toEqual([WINDOW_POINTS - 2, 80]);
    expect(out.severity[78]).toBe(0);
    expect(out.isPositiveAnomaly[78]).toBe(false);
    expect(out.upperMargins[78]).toBeCloseTo(0.505, 12);
    expect(out.lowerMargins[78]).toBe(1); // already holds the value
    expect(out.severity[80]).toBeCloseTo(1 / 3, 12);
  });

  it('takes the larger severity where both flag, and narrows the band to match', () => {
    const values = new Array<number>(N).fill(0);
    values[80] = 2;
    const engine = quietEngine();
    engine.isAnomaly[80] = true;
    engine.isPositiveAnomaly[80] = true;
    engine.severity[80] = 0.5;
    const z = new Array<number>(N).fill(0);
    z[80] = 10 * BAND;
    const out = learnedVerdicts({ values, entire: engine, scores: z, sensitivity: SENSITIVITY, maxAnomalyRatio: 0.25 });
    expect(out.severity[80]).toBeCloseTo(0.9, 12);
    expect(out.upperMargins[80]).toBeCloseTo(0.2, 12);
    expect(out.isPositiveAnomaly[80]).toBe(true);
  });

  it('reports a learned burst as one event at its most severe point', () => {
    const values = new Array<number>(N).fill(1);
    const z = new Array<number>(N).fill(0);
    z[70] = 2 * BAND; // severity 0.5
    z[71] = 4 * BAND; // severity 0.75
    z[72] = 1.25 * BAND; // severity 0.2
    const out = learnedVerdicts({ values, entire: quietEngine(), scores: z, sensitivity: SENSITIVITY, maxAnomalyRatio: 0.25 });
    expect(out.isAnomaly.flatMap((flag, i) => (flag ? [i] : []))).toEqual([71]);
    expect(out.severity[71]).toBeCloseTo(0.75, 12);
    expect(out.upperMargins[71]).toBeCloseTo(0.25, 12);
    expect(out.severity[70]).toBe(0);
    expect(out.isPositiveAnomaly[71]).toBe(true);
    // The points no longer reported are inside their band again.
    expect(out.upperMargins[70]).toBeGreaterThan(1);
    expect(out.upperMargins[72]).toBeGreaterThan(1);
  });

  it('flags a learned excursion still under way at the end at its first point', () => {
    // A level shift: the learned score leaves the band at 70 and keeps growing to the last point.
    const values = new Array<number>(N).fill(1);
    const z = new Array<number>(N).fill(0);
    for (let i = 70; i < N; i++) z[i] = (1.25 + 0.25 * (i - 70)) * BAND;
    const out = learnedVerdicts({ values, entire: quietEngine(), scores: z, sensitivity: SENSITIVITY, maxAnomalyRatio: 0.25 });
    expect(out.isAnomaly.flatMap((flag, i) => (flag ? [i] : []))).toEqual([70]);
    // With the event's largest severity, that of the last point.
    expect(out.severity[70]).toBeCloseTo(1 - 1 / z[N - 1]! * BAND, 12);
    expect(out.severity[N - 1]).toBe(0);
  });

  it('grades the points the learned side flags by the severity scores, which flag nothing themselves', () => {
    const values = new Array<number>(N).fill(1);
    const z = new Array<number>(N).fill(0);
    const graded = new Array<number>(N).fill(0);
    // One event, 70-71: 70 is the more severe by its own score (0.5 against 1/3), 71 by the
    // severity scores (0.875), so the event is flagged at 71.
    z[70] = 2 * BAND;
    z[71] = 1.5 * BAND;
    graded[71] = 8 * BAND;
    graded[76] = 10 * BAND; // beyond the band, but its own score (0) is within it: not flagged
    z[80] = 4 * BAND; // its own score (0.75) says more than its severity score: that counts
    graded[80] = 2 * BAND;
    const out = learnedVerdicts({ values, entire: quietEngine(), scores: z, severityScores: graded, sensitivity: SENSITIVITY, maxAnomalyRatio: 0.25 });
    expect(out.isAnomaly.flatMap((flag, i) => (flag ? [i] : []))).toEqual([71, 80]);
    expect(out.severity[71]).toBeCloseTo(0.875, 12);
    expect(out.upperMargins[71]).toBeCloseTo(0.125, 12);
    expect(out.severity[76]).toBe(0);
    expect(out.severity[80]).toBeCloseTo(0.75, 12);
    // Graded by their own scores: the event at 70, severity 0.5.
    const plain = learnedVerdicts({ values, entire: quietEngine(), scores: z, sensitivity: SENSITIVITY, maxAnomalyRatio: 0.25 });
    expect(plain.isAnomaly.flatMap((flag, i) => (flag ? [i] : []))).toEqual([70, 80]);
    expect(plain.severity[70]).toBeCloseTo(0.5, 12);
  });

  it('a higher sensitivity flags a lower energy', () => {
    const values = new Array<number>(N).fill(1);
    const z = new Array<number>(N).fill(0);
    z[70] = marginMultiplier(99) + 0.1;
    const at = (sensitivity: number) =>
      learnedVerdicts({ values, entire: quietEngine(), scores: z, sensitivity, maxAnomalyRatio: 0.25 }).isAnomaly[70];
    expect(at(99)).toBe(true);
    expect(at(80)).toBe(false);
  });

  it('keeps the cap on flagged points over both sides, most severe first', () => {
    const n = 100;
    const values = new Array<number>(n).fill(1);
    const engine = quietEngine(n);
    engine.isAnomaly[90] = true;
    engine.isPositiveAnomaly[90] = true;
    engine.severity[90] = 0.1;
    const z = new Array<number>(n).fill(0);
    z[70] = 5 * BAND; // severity 0.8
    z[75] = 2 * BAND; // severity 0.5
    z[80] = 1.25 * BAND; // severity 0.2
    // Cap: floor(0.03 x 100) = 3 flags; the engine's weakest goes and its band is widened past its value.
    const out = learnedVerdicts({ values, entire: engine, scores: z, sensitivity: SENSITIVITY, maxAnomalyRatio: 0.03 });
    expect(out.isAnomaly.flatMap((flag, i) => (flag ? [i] : []))).toEqual([70, 75, 80]);
    expect(out.severity[90]).toBe(0);
    expect(out.upperMargins[90]).toBeCloseTo(1.01, 12);
    expect(out.isPositiveAnomaly[90]).toBe(false);
    // A learned-only flag the cap drops keeps the engine's band.
    const tight = learnedVerdicts({ values, entire: engine, scores: z, sensitivity: SENSITIVITY, maxAnomalyRatio: 0.01 });
    expect(tight.isAnomaly.flatMap((flag, i) => (flag ? [i] : []))).toEqual([70]);
    expect(tight.upperMargins[75]).toBe(1);
    expect(tight.severity[75]).toBe(0);
  });

  it('holds a flag while the level model finds the series away, under the flag, and with held points outside the cap', () => {
    const n = 200;
    const values = new Array<number>(n).fill(0.5);
    const z = new Array<number>(n).fill(0);
    z[100] = 4 * BAND; // severity 0.75 at the jump
    z[180] = 2 * BAND; // another event, severity 0.5
    const out = (level: boolean[], levelSeverity: number, maxAnomalyRatio: number) =>
      learnedVerdicts({
        values,
        entire: quietEngine(n),
        scores: z,
        sensitivity: SENSITIVITY,
        maxAnomalyRatio,
        level: { isAnomaly: level, severity: level.map((flag) => (flag ? levelSeverity : 0)), window: 10 },
      });
    const away = Array.from({ length: n }, (_, i) => i >= 95 && i < 150);
    const held = out(away, 0.9, 0.5);
    // Held from the run's start (before the reported flag) to its end, at the flag's severity at most.
    expect(held.isAnomaly.flatMap((flag, i) => (flag ? [i] : []))).toEqual([...Array.from({ length: 55 }, (_, k) => 95 + k), 180]);
    expect(held.severity[120]).toBe(0.75);
    // The departure holds where the level model sees it: not at the other event's flag.
    expect(held.held.flatMap((flag, i) => (flag ? [i] : []))).toEqual(Array.from({ length: 55 }, (_, k) => 95 + k));
    expect(held.severity[100]).toBe(0.75);
    // The band agrees with the held severity: 1 - margin / |deviation|.
    expect(1 - (held.upperMargins[120] ?? 0) / 0.5).toBeCloseTo(0.75, 12);
    expect(out(away, 0.3, 0.5).severity[120]).toBe(0.3);
    // A held point on its expected value stays in the departure, on a band of width zero.
    values[130] = 0;
    const onExpected = out(away, 0.9, 0.5);
    values[130] = 0.5;
    expect(onExpected.isAnomaly[130]).toBe(true);
    expect(onExpected.upperMargins[130]).toBe(0);
    expect(onExpected.isPositiveAnomaly[130] || onExpected.isNegativeAnomaly[130]).toBe(false);
    // A run that starts past the reach, or no run, holds nothing.
    expect(out(Array.from({ length: n }, (_, i) => i >= 115 && i < 150), 0.9, 0.5).isAnomaly.filter(Boolean)).toHaveLength(2);
    // The cap counts events: under a cap of one point the most severe flag stays, held whole; the
    // other event's flag goes.
    const capped = out(away, 0.9, 0.005);
    expect(capped.isAnomaly.flatMap((flag, i) => (flag ? [i] : []))).toEqual(Array.from({ length: 55 }, (_, k) => 95 + k));
    expect(capped.upperMargins[180]).toBe(1);
  });
});
