import { describe, expect, it } from 'vitest';
import {
  DEFAULT_REGIME_THRESHOLDS,
  classifyRegimes,
  countRegimes,
  echoFreeZScores,
  echoPoints,
  repairedValues,
  spikeRepairs,
  withoutEchoes,
} from '../src/index.js';

const REACH = 8;

/** A calm series: small deterministic wiggles around 10. */
function calm(length: number): number[] {
  return Array.from({ length }, (_, i) => 10 + (((i * 7) % 5) - 2) * 0.1);
}

/**
 * A stand-in for the model and baseline: a point's z-score is the largest departure from 10 in its
 * window of REACH + 1 points, x 10. One extreme value raises the next REACH points too (its echo).
 */
function windowScores(values: readonly number[]): Float64Array {
  return Float64Array.from(values, (_, t) => {
    let largest = 0;
    for (let k = Math.max(0, t - REACH); k <= t; k++) largest = Math.max(largest, Math.abs((values[k] ?? 10) - 10));
    return largest * 10;
  });
}

describe('spikeRepairs', () => {
  it('repairs a single spike with the line through its neighbours, and nothing else', () => {
    const values = calm(40);
    values[20] = 30;
    const repairs = spikeRepairs({ zScores: windowScores(values), values });
    expect(repairs).toHaveLength(1);
    expect(repairs[0]?.index).toBe(20);
    expect(repairs[0]?.value).toBeCloseTo(((values[19] ?? 0) + (values[21] ?? 0)) / 2, 10);
  });

  it('does not take the point before a spike for one, even when its own score is extreme', () => {
    const values = calm(40);
    values[10] = 30;
    values[18] = -10; // inside the first spike's echo: the point before it scores extreme too
    const zScores = windowScores(values);
    expect(zScores[17]).toBeGreaterThan(DEFAULT_REGIME_THRESHOLDS.shockZ);
    expect(spikeRepairs({ zScores, values }).map((repair) => repair.index)).toEqual([10, 18]);
  });

  it('repairs a two-point spike as one run, on the line between the points around it', () => {
    const values = calm(40);
    values[20] = 30;
    values[21] = 31;
    const repairs = spikeRepairs({ zScores: windowScores(values), values });
    expect(repairs.map((repair) => repair.index)).toEqual([20, 21]);
    const before = values[19] ?? 0;
    const after = values[22] ?? 0;
    expect(repairs[0]?.value).toBeCloseTo(before + (after - before) / 3, 10);
    expect(repairs[1]?.value).toBeCloseTo(before + (2 * (after - before)) / 3, 10);
  });

  it('repairs only the start of a level shift: the shifted values after it stay', () => {
    const values = calm(60).map((value, i) => (i >= 30 ? value + 20 : value));
    const repairs = spikeRepairs({ zScores: windowScores(values), values });
    // The first shifted points, as a ramp into the new level (each next one departs less from the
    // line through the repaired one before it); the level itself is never repaired away.
    expect(repairs.map((repair) => repair.index)).toEqual(Array.from({ length: repairs.length }, (_, i) => 30 + i));
    expect(repairs.length).toBeGreaterThan(0);
    expect(repairs.length).toBeLessThanOrEqual(6);
  });

  it('leaves departing values alone where the energy is not extreme, and at the end', () => {
    const values = calm(40);
    values[20] = 30;
    const quiet = new Float64Array(40).fill(DEFAULT_REGIME_THRESHOLDS.shockZ - 0.1);
    expect(spikeRepairs({ zScores: quiet, values })).toEqual([]);
    const last = calm(40);
    last[39] = 30;
    expect(spikeRepairs({ zScores: windowScores(last), values: last })).toEqual([]);
  });

  it('repairs a spike in the warm-up on its value alone (its echo reaches past the warm-up)', () => {
    const values = calm(40);
    values[20] = 30;
    const quiet = new Float64Array(40);
    expect(spikeRepairs({ zScores: quiet, values, warmupPoints: 21 }).map((repair) => repair.index)).toEqual([20]);
    expect(spikeRepairs({ zScores: quiet, values, warmupPoints: 20 })).toEqual([]);
  });

  it('refuses mismatched lengths and a bad spikeDeparture', () => {
    expect(() => spikeRepairs({ zScores: [1, 2], values: [1] })).toThrow(RangeError);
    expect(() => spikeRepairs({ zScores: [1], values: [1] }, { ...DEFAULT_REGIME_THRESHOLDS, spikeDeparture: 0 })).toThrow(
      RangeError,
    );
  });
});

describe('echoPoints, repairedValues and withoutEchoes', () => {
  it('lists the points a repair reaches, without the repaired points, inside the series', () => {
    const repairs = [
      { index: 3, value: 0 },
      { index: 4, value: 0 },
      { index: 10, value: 0 },
    ];
    expect(echoPoints(repairs, 13, 3)).toEqual([5, 6, 7, 11, 12]);
    expect(repairedValues([1, 2, 3, 4, 5], [{ index: 1, value: 9 }])).toEqual([1, 9, 3, 4, 5]);
  });

  it('keeps the lower score: a repair only explains energy away', () => {
    const out = withoutEchoes([50, 50, 50, Number.NaN], [1, 2, 3], [0, 2, 80, 1]);
    expect(Array.from(out)).toEqual([50, 2, 50, Number.NaN]);
  });
});

describe('echoFreeZScores with the regime rules', () => {
  const score = async (values: readonly number[], points: readonly number[]) => {
    calls.push(points.length);
    return windowScores(values);
  };
  let calls: number[] = [];

  it('a spike is SHOCK at its point only, and the points after it are HEALTHY again', async () => {
    calls = [];
    const values = calm(80);
    values[40] = 60;
    const zScores = windowScores(values);
    const changePoints = new Array<boolean>(80).fill(false);
    changePoints[42] = true; // a changepoint next to the spike must not make its echo a transition
    const before = classifyRegimes({ zScores, changePoints });
    expect(before.slice(41, 41 + REACH).every((regime) => regime !== 'HEALTHY')).toBe(true);

    const judged = await echoFreeZScores({ zScores, values, reach: REACH, repairedZScores: score });
    expect(calls).toEqual([REACH]);
    const regimes = classifyRegimes({ zScores: judged, changePoints });
    expect(regimes[40]).toBe('SHOCK');
    expect(countRegimes(regimes)).toMatchObject({ SHOCK: 1, HEALTHY: 79, TRANSITION: 0, ACTIVE: 0 });
    // The series' own scores are left as they were.
    expect(zScores[41]).toBeGreaterThan(DEFAULT_REGIME_THRESHOLDS.shockZ);
  });

  it('a level shift keeps its elevation and reads TRANSITION, then ACTIVE', async () => {
    const values = calm(120).map((value, i) => (i >= 40 ? value + 20 : value));
    const zScores = windowScores(values);
    const changePoints = new Array<boolean>(120).fill(false);
    changePoints[40] = true;
    const judged = await echoFreeZScores({ zScores, values, reach: REACH, repairedZScores: score });
    const regimes = classifyRegimes({ zScores: judged, changePoints });
    const { transitionRadius, transitionMaxPoints } = DEFAULT_REGIME_THRESHOLDS;
    expect(regimes.slice(40, 40 + transitionMaxPoints - transitionRadius).every((regime) => regime === 'TRANSITION')).toBe(true);
    expect(regimes.slice(40).every((regime) => regime === 'TRANSITION' || regime === 'ACTIVE')).toBe(true);
    expect(regimes.slice(0, 40).every((regime) => regime === 'HEALTHY')).toBe(true);
  });

  it('leaves the echo points before `from` as given (a stream re-judges its new points only)', async () => {
    calls = [];
    const values = calm(80);
    values[40] = 60;
    const zScores = windowScores(values);
    const judged = await echoFreeZScores({ zScores, values, reach: REACH, from: 45, repairedZScores: score });
    expect(calls).toEqual([REACH - 4]);
    expect(Array.from(judged.subarray(0, 45))).toEqual(Array.from(zScores.subarray(0, 45)));
    expect(Math.max(...judged.subarray(45))).toBeLessThan(DEFAULT_REGIME_THRESHOLDS.activeZ);
  });

  it('asks the model nothing when there is no spike', async () => {
    calls = [];
    const values = calm(50);
    const zScores = windowScores(values);
    expect(Array.from(await echoFreeZScores({ zScores, values, reach: REACH, repairedZScores: score }))).toEqual(Array.from(zScores));
    expect(calls).toEqual([]);
  });
});
