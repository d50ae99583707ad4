import { describe, expect, it } from 'vitest';
import {
  DEFAULT_REGIME_THRESHOLDS,
  classifyRegimes,
  countRegimes,
  unknownRegimes,
  zScoresOf,
  type Regime,
} from '../src/index.js';

/** z-scores of `length` calm points with the given overrides. */
function zs(length: number, overrides: Record<number, number>): number[] {
  const out = Array.from({ length }, (_, i) => ((i * 7) % 5) / 5 - 0.4);
  for (const [index, value] of Object.entries(overrides)) out[Number(index)] = value;
  return out;
}

function flags(length: number, at: readonly number[]): boolean[] {
  const out = new Array<boolean>(length).fill(false);
  for (const index of at) out[index] = true;
  return out;
}

function indicesOf(regimes: readonly Regime[], regime: Regime): number[] {
  return regimes.flatMap((value, index) => (value === regime ? [index] : []));
}

/** The rule tests use small round thresholds; the defaults have their own test below. */
const T = { ...DEFAULT_REGIME_THRESHOLDS, activeZ: 3, shockZ: 6, minEpisodePoints: 1 };

describe('classifyRegimes', () => {
  it('is HEALTHY everywhere for calm scores', () => {
    const regimes = classifyRegimes({ zScores: zs(50, {}) }, T);
    expect(countRegimes(regimes)).toEqual({ HEALTHY: 50, ACTIVE: 0, TRANSITION: 0, SHOCK: 0, UNKNOWN: 0 });
  });

  it('marks a sudden extreme spike SHOCK and its elevated tail ACTIVE', () => {
    const regimes = classifyRegimes({ zScores: zs(60, { 20: 12, 21: 7, 22: 4, 23: 3.5 }) }, T);
    expect(indicesOf(regimes, 'SHOCK')).toEqual([20, 21]);
    expect(indicesOf(regimes, 'ACTIVE')).toEqual([22, 23]);
    expect(indicesOf(regimes, 'HEALTHY')).toHaveLength(56);
  });

  it('counts a rise over two points as sudden, over three as gradual', () => {
    const twoPoints = classifyRegimes({ zScores: zs(30, { 10: 4, 11: 9 }) }, T);
    expect(twoPoints[11]).toBe('SHOCK');
    expect(twoPoints[10]).toBe('ACTIVE');
    const gradual = classifyRegimes({ zScores: zs(30, { 10: 3.2, 11: 4.5, 12: 9 }) }, T);
    expect(gradual.slice(10, 13)).toEqual(['ACTIVE', 'ACTIVE', 'ACTIVE']);
  });

  it('marks moderate elevation ACTIVE', () => {
    const regimes = classifyRegimes({ zScores: zs(30, { 5: 3, 6: 5.9 }) }, T);
    expect(indicesOf(regimes, 'ACTIVE')).toEqual([5, 6]);
  });

  it('marks sustained elevation around a changepoint TRANSITION, bridging short calm gaps', () => {
    const overrides: Record<number, number> = {};
    for (let i = 40; i < 52; i++) overrides[i] = i === 45 ? 1 : 8;
    const regimes = classifyRegimes({ zScores: zs(100, overrides), changePoints: flags(100, [38]) }, T);
    expect(indicesOf(regimes, 'TRANSITION')).toEqual(Array.from({ length: 12 }, (_, i) => 40 + i));
    expect(indicesOf(regimes, 'SHOCK')).toEqual([]);
  });

  it('ends TRANSITION transitionMaxPoints after the changepoint; the lasting elevation is ACTIVE', () => {
    const { transitionMaxPoints } = DEFAULT_REGIME_THRESHOLDS;
    const overrides: Record<number, number> = {};
    for (let i = 20; i < 20 + transitionMaxPoints + 10; i++) overrides[i] = 4;
    const length = 20 + transitionMaxPoints + 30;
    const regimes = classifyRegimes({ zScores: zs(length, overrides), changePoints: flags(length, [20]) }, T);
    expect(indicesOf(regimes, 'TRANSITION')).toHaveLength(transitionMaxPoints + 1);
    expect(indicesOf(regimes, 'ACTIVE')).toEqual(Array.from({ length: 9 }, (_, i) => 21 + transitionMaxPoints + i));
  });

  it('keeps a spike SHOCK when the nearest changepoint is far or the elevation is short', () => {
    const far = classifyRegimes({ zScores: zs(80, { 30: 15 }), changePoints: flags(80, [60]) }, T);
    expect(far[30]).toBe('SHOCK');
    const short = classifyRegimes({ zScores: zs(80, { 30: 15, 31: 9 }), changePoints: flags(80, [30]) }, T);
    expect(short.slice(30, 32)).toEqual(['SHOCK', 'SHOCK']);
  });

  it('ends SHOCK shockMaxPoints after the onset; the lasting deviation is ACTIVE', () => {
    const { shockMaxPoints } = DEFAULT_REGIME_THRESHOLDS;
    const overrides: Record<number, number> = {};
    for (let i = 10; i < 10 + shockMaxPoints + 5; i++) overrides[i] = 20;
    const regimes = classifyRegimes({ zScores: zs(10 + shockMaxPoints + 20, overrides) }, T);
    expect(indicesOf(regimes, 'SHOCK')).toEqual(Array.from({ length: shockMaxPoints }, (_, i) => 10 + i));
    expect(indicesOf(regimes, 'ACTIVE')).toHaveLength(5);
  });

  it('never calls the rest of a transition episode SHOCK', () => {
    const { transitionMaxPoints } = DEFAULT_REGIME_THRESHOLDS;
    const overrides: Record<number, number> = {};
    for (let i = 20; i < 20 + transitionMaxPoints + 10; i++) overrides[i] = 20;
    const length = 20 + transitionMaxPoints + 30;
    const regimes = classifyRegimes({ zScores: zs(length, overrides), changePoints: flags(length, [20]) }, T);
    expect(indicesOf(regimes, 'SHOCK')).toEqual([]);
    expect(indicesOf(regimes, 'ACTIVE')).toHaveLength(9);
  });

  it('ignores the warm-up points', () => {
    const regimes = classifyRegimes({ zScores: zs(30, { 2: 9, 3: 9, 12: 9 }), warmupPoints: 10 }, T);
    expect(indicesOf(regimes, 'SHOCK')).toEqual([12]);
    expect(() => classifyRegimes({ zScores: [1], warmupPoints: -1 }, T)).toThrow(RangeError);
  });

  it('treats non-finite scores as calm', () => {
    const regimes = classifyRegimes({ zScores: [Number.NaN, Number.POSITIVE_INFINITY, 0, 10] }, T);
    expect(regimes).toEqual(['HEALTHY', 'HEALTHY', 'HEALTHY', 'SHOCK']);
  });

  it('handles an empty series and refuses mismatched flags or bad thresholds', () => {
    expect(classifyRegimes({ zScores: [] }, T)).toEqual([]);
    expect(() => classifyRegimes({ zScores: [1, 2], changePoints: [false] }, T)).toThrow(RangeError);
    expect(() => classifyRegimes({ zScores: [1] }, { ...T, shockZ: 1 })).toThrow(RangeError);
    expect(() => classifyRegimes({ zScores: [1] }, { ...T, bridgePoints: -1 })).toThrow(
      RangeError,
    );
  });
});

describe('the default thresholds', () => {
  it('ignore short moderate excursions but not extreme points or lasting elevation', () => {
    const { activeZ, shockZ } = DEFAULT_REGIME_THRESHOLDS;
    const regimes = classifyRegimes({
      zScores: zs(60, { 5: activeZ + 0.5, 6: activeZ + 0.2, 20: shockZ + 1, 40: activeZ, 41: activeZ, 42: activeZ }),
    });
    expect(regimes.slice(5, 7)).toEqual(['HEALTHY', 'HEALTHY']);
    expect(regimes[20]).toBe('SHOCK');
    expect(regimes.slice(40, 43)).toEqual(['ACTIVE', 'ACTIVE', 'ACTIVE']);
  });
});

describe('helpers', () => {
  it('unknownRegimes fills UNKNOWN', () => {
    expect(unknownRegimes(3)).toEqual(['UNKNOWN', 'UNKNOWN', 'UNKNOWN']);
  });

  it('zScoresOf scales by the reference and floors a zero deviation', () => {
    expect(Array.from(zScoresOf([1, 3, 5], 3, 2))).toEqual([-1, 0, 1]);
    const flat = zScoresOf([2, 2.5], 2, 0);
    expect(flat[0]).toBe(0);
    expect(Number.isFinite(flat[1])).toBe(true);
    expect(flat[1]).toBeGreaterThan(1000);
  });
});
