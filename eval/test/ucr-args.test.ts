import { describe, expect, it } from 'vitest';
import { parseUcrArgs, UCR_ROW_GROUPS } from '../src/ucr-run.js';

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
