// The learned side of a baselined verdict: a machine's baseline turns each point into a learned
// score on a z-score's scale (its energies against the baseline's statistics, plus how unusual the
// point's shape is against the baseline's shapes), judged with the engine's own band at the
// request's sensitivity (marginMultiplier), so one sensitivity means the same on both sides.
import { widenedMargin } from './scoring.js';
import { TUNING } from './tuning.js';

/**
 * A streamed point beyond the learned band within this many points of the last one beyond it
 * belongs to the same learned excursion (the worker flags an excursion at its onset only).
 */
export const LEARNED_ONSET_POINTS = TUNING.LEARNED_ONSET_POINTS.value;

/**
 * A baselined point's learned score: its energy z-score plus its shape score where that is above
 * the usual (0), so an unusual shape adds its excess and an ordinary one leaves the z-score as is.
 */
export function learnedScores(zScores: ArrayLike<number>, shapeScores: ArrayLike<number>): Float64Array {
  return Float64Array.from({ length: zScores.length }, (_, i) => (zScores[i] ?? Number.NaN) + Math.max(0, shapeScores[i] ?? 0));
}

/**
 * Severity of a z-score with the band at `band` standard deviations, as the engine's severity of a
 * deviation with its margin: 1 − band / z above the band, 0 inside.
 */
export function learnedSeverity(z: number, band: number): number {
  if (!(z > band) || !(band > 0)) return 0;
  return Math.min(1, 1 - band / z);
}

/** A point's verdict where the learned side outranks the engine: see `learnedOverride`. */
export interface LearnedOverride {
  readonly severity: number;
  /** Half-width of the band on both sides. */
  readonly margin: number;
  readonly isPositiveAnomaly: boolean;
  readonly isNegativeAnomaly: boolean;
}

/**
 * The learned side's verdict on a point when its severity `learned` is larger than the engine's
 * `engineSeverity`, else null (the engine's verdict stands). Its band is the one that gives the
 * engine's rule (severity = 1 − margin / |deviation|) that severity, so a client drawing the band
 * sees the point outside it by as much as its severity says; its direction is the side its value
 * lies on. A value on its expected value (or either not finite) cannot be outside a band and is
 * left to the engine.
 */
export function learnedOverride(value: number, expected: number, engineSeverity: number, learned: number): LearnedOverride | null {
  if (learned <= engineSeverity) return null;
  const deviation = value - expected;
  if (deviation === 0 || !Number.isFinite(deviation)) return null;
  return {
    severity: learned,
    margin: Math.abs(deviation) * (1 - learned),
    isPositiveAnomaly: deviation > 0,
    isNegativeAnomaly: deviation < 0,
  };
}

/**
 * Whether a baseline overrules the engine's flag on a point: its learned score is known and within
 * the band, so the machine's baseline finds the point ordinary (its energy and shape are ones the
 * machine shows when healthy) and the residual alone does not make it an anomaly. A point without
 * a learned score (NaN: the model's window is still padding) keeps the engine's verdict.
 */
export function baselineFindsOrdinary(score: number, band: number): boolean {
  return Number.isFinite(score) && score <= band;
}

/**
 * The half-width of a band that holds `value`: an overruled flag's band is widened just past its
 * value (1 % beyond the deviation), as a point the cap on flagged points drops, so "outside the
 * band" and "anomaly" still agree for a client drawing it.
 */
export function bandHolding(value: number, expected: number, margin: number): number {
  return Math.max(margin, widenedMargin(value, expected));
}

/**
 * A point flagged because the departure its flag reported still holds (a baseline's level model
 * finds the series away), with `severity`: its band gives that severity by the engine's rule, on
 * the side its value lies. A value on its expected value (the engine's fit can follow a level it
 * moved to) is still part of the departure: flagged on a band of width zero, no side.
 */
export function heldPoint(value: number, expected: number, severity: number): LearnedOverride {
  return learnedOverride(value, expected, 0, severity) ?? { severity, margin: 0, isPositiveAnomaly: false, isNegativeAnomaly: false };
}

/** The per-point verdict arrays a hold writes into (the sides too, where the caller keeps them). */
export interface HeldTarget {
  readonly isAnomaly: boolean[];
  readonly severity: number[];
  readonly upperMargins: number[];
  readonly lowerMargins: number[];
  readonly isPositiveAnomaly?: boolean[];
  readonly isNegativeAnomaly?: boolean[];
}

/**
 * Flags each point a departure holds (`carried[i]` > 0, the severity it holds at) that is not
 * flagged already, by heldPoint; which points it flagged.
 */
export function flagHeld(target: HeldTarget, values: ArrayLike<number>, expectedValues: ArrayLike<number>, carried: ArrayLike<number>): boolean[] {
  const held = new Array<boolean>(target.isAnomaly.length).fill(false);
  for (let i = 0; i < held.length; i++) {
    const carry = carried[i] ?? 0;
    if (carry <= 0 || target.isAnomaly[i]) continue;
    const holds = heldPoint(values[i] ?? 0, expectedValues[i] ?? 0, carry);
    held[i] = true;
    target.isAnomaly[i] = true;
    target.severity[i] = holds.severity;
    target.upperMargins[i] = holds.margin;
    target.lowerMargins[i] = holds.margin;
    if (target.isPositiveAnomaly) target.isPositiveAnomaly[i] = holds.isPositiveAnomaly;
    if (target.isNegativeAnomaly) target.isNegativeAnomaly[i] = holds.isNegativeAnomaly;
  }
  return held;
}
