// The SKAB evaluation's pieces (the file parser, the scorer, the command line) on small data made
// here, and docs/machine-model.md's table against the committed summary (eval/skab.json).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseSkabExperiment } from '../src/skab-data.js';
import { addExperiment, emptyCounts, parseSkabArgs, runsOf, skabScore, skabTable, type SkabResult } from '../src/skab-run.js';

describe('parseSkabExperiment', () => {
  const text = [
    'datetime;Accelerometer1RMS;Volume Flow RateRMS;anomaly;changepoint',
    '2020-03-09 10:34:33;0.027;32.0;0.0;0.0',
    '2020-03-09 10:34:34;0.026;31.0;1.0;1.0',
  ].join('\n');

  it('reads channels (named as the API takes them), timestamps, readings and labels', () => {
    expect(parseSkabExperiment('valve1/0', text)).toEqual({
      id: 'valve1/0',
      channels: ['Accelerometer1RMS', 'Volume_Flow_RateRMS'],
      timestamps: ['2020-03-09T10:34:33Z', '2020-03-09T10:34:34Z'],
      values: [
        [0.027, 0.026],
        [32, 31],
      ],
      anomaly: [false, true],
    });
  });

  it('refuses a file that is not an experiment, and a reading that is not a number', () => {
    expect(() => parseSkabExperiment('x', 'a;b\n1;2')).toThrow(/not a SKAB experiment/);
    expect(() => parseSkabExperiment('x', text.replace('31.0', 'n/a'))).toThrow(/row 2 has a reading that is not a number/);
  });
});

describe('the SKAB scorer', () => {
  it('finds runs of flags', () => {
    expect(runsOf([false, true, true, false, true])).toEqual([
      [1, 2],
      [4, 4],
    ]);
    expect(runsOf([])).toEqual([]);
  });

  it('counts rows, faults found and false episodes, and rates them as the benchmark does', () => {
    const counts = emptyCounts();
    const labels = [false, false, true, true, true, true, false, false, false, false];
    const flags = [false, true, false, true, true, true, true, false, false, true];
    addExperiment(counts, flags, labels, [
      [1, 1],
      [3, 6],
      [9, 9],
    ]);
    expect(counts).toEqual({ tp: 3, fp: 3, fn: 1, tn: 3, faultsFound: 1, faults: 1, falseEpisodes: 2, episodes: 3 });
    // F1 = 2 tp / (2 tp + fp + fn) = 6 / 10; FAR = fp / (fp + tn); MAR = fn / (fn + tp).
    expect(skabScore(counts)).toMatchObject({ f1: 0.6, far: 50, mar: 25 });
    const none = emptyCounts();
    addExperiment(none, [false, false], [true, false], []);
    expect(skabScore(none)).toMatchObject({ f1: 0, far: 0, mar: 100, counts: { faults: 1, faultsFound: 0 } });
  });

  it('reads its command line or refuses it clearly', () => {
    expect(parseSkabArgs(['--limit', '3', '--out', '/tmp/x.json'])).toEqual({ limit: 3, out: '/tmp/x.json' });
    expect(parseSkabArgs(['--scale-out'])).toEqual({ scaleOut: true });
    expect(() => parseSkabArgs(['--limit', '0'])).toThrow("--limit takes a positive integer, not '0'");
    expect(() => parseSkabArgs(['--limit'])).toThrow('--limit needs a value');
    expect(() => parseSkabArgs(['--fast'])).toThrow("unknown option '--fast'");
  });
});

describe('docs/machine-model.md', () => {
  const page = readFileSync(fileURLToPath(new URL('../../docs/machine-model.md', import.meta.url)), 'utf8');
  const committed = JSON.parse(readFileSync(fileURLToPath(new URL('../skab.json', import.meta.url)), 'utf8')) as Pick<SkabResult, 'rows'>;

  it("shows the committed SKAB run's table", () => {
    expect(page).toContain(skabTable(committed));
  });
});
