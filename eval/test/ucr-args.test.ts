import { describe, expect, it } from 'vitest';
import { emptyTally, parseUcrArgs, tallyFlags, UCR_ROW_GROUPS } from '../src/ucr-run.js';

describe('eval:ucr command line', () => {
  it('reads every option', () => {
    expect(parseUcrArgs([])).toEqual({});
    expect(
      parseUcrArgs(['--series', '4, 8', '--limit', '20', '--rows', 'generic,tuned', '--half', 'B', '--finetune-mode', 'full', '--out', '/tmp/u.json', '--data', '/d/ucr_dev']),
    ).toEqual({ seriesIds: [4, 8], limit: 20, groups: ['generic', 'tuned'], half: 'B', mode: 'full', out: '/tmp/u.json', data: '/d/ucr_dev' });
    expect(parseUcrArgs(['--rows', UCR_ROW_GROUPS.join(',')]).groups).toEqual([...UCR_ROW_GROUPS]);
  });

  it('refuses what it does not know, naming what it accepts', () => {
    expect(() => parseUcrArgs(['--bogus', '1'])).toThrow(/unknown option --bogus \(--series, --limit, --rows, --half, --finetune-mode, --out, --data\)/);
    expect(() => parseUcrArgs(['--limit'])).toThrow(/--limit needs a value/);
    expect(() => parseUcrArgs(['--limit', '--half', 'A'])).toThrow(/--limit needs a value/);
    for (const limit of ['0', '-3', '2.5', 'ten']) expect(() => parseUcrArgs(['--limit', limit])).toThrow(`--limit: ${limit} is not a positive integer`);
    expect(() => parseUcrArgs(['--series', '4,x'])).toThrow('--series: x is not a series number');
    expect(() => parseUcrArgs(['--series', '0'])).toThrow('--series: 0 is not a series number');
    expect(() => parseUcrArgs(['--series', '4,,8'])).toThrow(/--series: an empty item/);
    expect(() => parseUcrArgs(['--rows', 'generic,nope'])).toThrow('--rows: nope is not one of generic, stats, tuned');
    expect(() => parseUcrArgs(['--half', 'C'])).toThrow('--half: C is not A or B');
    expect(() => parseUcrArgs(['--finetune-mode', 'deep'])).toThrow('--finetune-mode: deep is not one of ridge, head, full');
  });
});

describe("eval:ucr's flag counts", () => {
  it('counts flags on healthy and labelled points and false episodes by the scoring window', () => {
    // Test part from index 10 (position 11); the anomaly is positions 150..159, so its scoring
    // window is 50 < p < 259 (100 points either side, more than its length).
    const series = { trainEnd: 10, begin: 150, end: 159 };
    const scores = new Float64Array(400).fill(0);
    for (const index of [20, 21, 100, 152, 153, 300]) scores[index] = 0.5;
    scores[5] = 0.9; // in the training part: not counted
    const tally = emptyTally();
    tallyFlags(tally, scores, [{ start: 20, end: 21 }, { start: 152, end: 153 }, { start: 255, end: 300 }, { start: 300, end: 300 }], series);
    // Healthy: positions 11..50 and 259..400 (40 + 142); flagged among them: 21, 22, 301.
    expect(tally).toEqual({ flagged: 6, points: 390, healthy: 182, healthyFlagged: 3, anomaly: 10, anomalyFlagged: 2, episodes: 4, falseEpisodes: 2 });
  });
});
