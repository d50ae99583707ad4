import { describe, expect, it } from 'vitest';
import { checkUcrSeries, parseUcrFileName, parseUcrValues, ucrHalf } from '../src/ucr-data.js';
import { isUcrHit, rankedBy, scoreUcrSeries, topUcrLocations, ucrAccuracy, ucrHitWithin } from '../src/ucr-scorer.js';

describe('UCR hit rule', () => {
  it('a short anomaly gets 100 points either side, exclusive', () => {
    const anomaly = { begin: 1000, end: 1009 }; // L = 10: min(990, 900) < P < max(1019, 1109)
    expect(isUcrHit(900, anomaly)).toBe(false);
    expect(isUcrHit(901, anomaly)).toBe(true);
    expect(isUcrHit(1005, anomaly)).toBe(true);
    expect(isUcrHit(1108, anomaly)).toBe(true);
    expect(isUcrHit(1109, anomaly)).toBe(false);
  });

  it('a long anomaly gets its own length either side', () => {
    const anomaly = { begin: 1000, end: 1199 }; // L = 200: min(800, 900) < P < max(1399, 1299)
    expect(isUcrHit(800, anomaly)).toBe(false);
    expect(isUcrHit(801, anomaly)).toBe(true);
    expect(isUcrHit(1398, anomaly)).toBe(true);
    expect(isUcrHit(1399, anomaly)).toBe(false);
  });

  it('at L = 100 both rules agree', () => {
    const anomaly = { begin: 1000, end: 1099 };
    expect(isUcrHit(900, anomaly)).toBe(false);
    expect(isUcrHit(901, anomaly)).toBe(true);
    expect(isUcrHit(1198, anomaly)).toBe(true);
    expect(isUcrHit(1199, anomaly)).toBe(false);
  });
});

describe('UCR top-k locations', () => {
  it('names 1-based positions of the test part only, best first', () => {
    const scores = new Float64Array(1000);
    scores[10] = 100; // training part: never named
    scores[499] = 5;
    expect(topUcrLocations(scores, 200, 1)).toEqual([500]);
  });

  it('skips locations closer than the exclusion to one already taken', () => {
    const scores = new Float64Array(1000);
    scores[500] = 10; // position 501
    scores[520] = 9; // 20 from 501: same location
    scores[700] = 8; // 701
    scores[650] = 7; // 50 from 701: same location
    scores[601] = 6.5; // 602: exactly 101 from 501 and 99 from 701: same as 701
    scores[850] = 6; // 851
    expect(topUcrLocations(scores, 0, 3, 100)).toEqual([501, 701, 851]);
    // At exactly the exclusion apart, two points are two locations.
    const edge = new Float64Array(400);
    edge[100] = 2;
    edge[200] = 1;
    expect(topUcrLocations(edge, 0, 2, 100)).toEqual([101, 201]);
  });

  it('ignores non-finite scores and breaks ties by the earlier position', () => {
    const scores = Float64Array.from({ length: 600 }, () => 1);
    scores[300] = Number.NaN;
    scores[301] = Number.POSITIVE_INFINITY;
    expect(topUcrLocations(scores, 100, 2, 100)).toEqual([101, 201]);
  });

  it('top-3 hits when a later location does; top-1 only by the first', () => {
    const anomaly = { begin: 800, end: 810 };
    expect(ucrHitWithin([100, 300, 805], 1, anomaly)).toBe(false);
    expect(ucrHitWithin([100, 300, 805], 3, anomaly)).toBe(true);
    const scores = new Float64Array(1000);
    scores[99] = 3;
    scores[299] = 2;
    scores[804] = 1;
    const scored = scoreUcrSeries(4, scores, 50, anomaly);
    expect(scored).toEqual({ id: 4, locations: [100, 300, 805], top1: false, top3: true });
    expect(ucrAccuracy([scored, { ...scored, top1: true }])).toEqual({ series: 2, top1: 0.5, top3: 1 });
    expect(ucrAccuracy([])).toEqual({ series: 0, top1: 0, top3: 0 });
  });
});

describe('UCR files', () => {
  it('reads the labels from the file name', () => {
    expect(parseUcrFileName('004_UCR_Anomaly_DISTORTEDBIDMC1_2500_5400_5600.txt')).toEqual({
      id: 4,
      name: 'DISTORTEDBIDMC1',
      file: '004_UCR_Anomaly_DISTORTEDBIDMC1_2500_5400_5600.txt',
      trainEnd: 2500,
      begin: 5400,
      end: 5600,
    });
    expect(parseUcrFileName('README.md')).toBeNull();
  });

  it('reads one value a line and all values on one whitespace-separated line alike', () => {
    expect([...parseUcrValues('  1.5e+00\n  -2\n3\n')]).toEqual([1.5, -2, 3]);
    expect([...parseUcrValues('  1.5e+00  -2   3.25\t4 \n')]).toEqual([1.5, -2, 3.25, 4]);
    expect(() => parseUcrValues('1\nabc\n', 'x.txt')).toThrow(/x\.txt: value 2/);
  });

  it('refuses labels that do not fit the values', () => {
    const info = parseUcrFileName('002_UCR_Anomaly_X_3_5_6.txt')!;
    expect(() => checkUcrSeries({ ...info, values: new Float64Array(6) })).not.toThrow();
    expect(() => checkUcrSeries({ ...info, values: new Float64Array(5) })).toThrow(RangeError);
    expect(() => checkUcrSeries({ ...info, trainEnd: 5, values: new Float64Array(6) })).toThrow(RangeError);
  });

  it('halves the even series numbers by id mod 4', () => {
    expect([4, 8, 2, 6].map(ucrHalf)).toEqual(['A', 'A', 'B', 'B']);
  });
});

describe('UCR ranking with a tie-break', () => {
  it('orders by the score, then by the tie-break, and leaves non-finite scores out', () => {
    const severity = Float64Array.from([0, 0.5, 0, 0.5, Number.NaN]);
    const z = Float64Array.from([9, 1, 2, 3, 100]);
    const ranks = rankedBy(severity, z);
    expect([...ranks.slice(0, 4)]).toEqual([1, 2, 0, 3]);
    expect(Number.isNaN(ranks[4])).toBe(true);
    expect(topUcrLocations(ranks, 0, 4, 1)).toEqual([4, 2, 1, 3]);
    expect(rankedBy(severity, undefined)).toBe(severity);
  });
});
