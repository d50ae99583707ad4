// The comparison's arithmetic and the command line, without running a benchmark.
import { describe, expect, it } from 'vitest';
import { BenchArgsError, parseBenchArgs } from '../args.js';
import { compareRuns, comparisonTable } from '../compare.js';

const run = (rows: Array<[string, number, number]>) => ({
  rows: rows.map(([name, p50Ms, throughput]) => ({ section: 'http', name, latency: { p50Ms }, throughput, throughputUnit: 'req/s' })),
  machine: { loadAverageAtStart: [1], loadAverageAtEnd: [1] },
});

describe('compareRuns', () => {
  it('pairs the rounds row by row and gives this tree / the revision per round', () => {
    const head = [run([['entire/detect', 10, 100], ['last/detect', 2, 500]]), run([['entire/detect', 12, 80], ['last/detect', 3, 400]])];
    const base = [run([['entire/detect', 20, 50], ['last/detect', 2, 500]]), run([['entire/detect', 16, 40]])];
    const [entire, last] = compareRuns(head, base);
    expect(entire).toEqual({
      section: 'http',
      name: 'entire/detect',
      baseP50Ms: 18,
      headP50Ms: 11,
      p50Ratios: [0.5, 0.75],
      throughputUnit: 'req/s',
      throughputRatios: [2, 2],
    });
    // The second round's revision run has no last/detect row: only the first round counts.
    expect(last?.p50Ratios).toEqual([1]);
    const table = comparisonTable(compareRuns(head, base), 'main').split('\n');
    expect(table[0]).toBe(
      '| Case | main p50 ms | this tree p50 ms | p50 ratio (median) | p50 ratio (min–max) | throughput ratio (median) | throughput ratio (min–max) |',
    );
    expect(table[2]).toBe('| entire/detect | 18 | 11 | 0.63 | 0.5–0.75 | 2 (req/s) | 2–2 |');
  });
});

describe('parseBenchArgs', () => {
  it('reads every option', () => {
    const args = parseBenchArgs(['--quick', '--compare', 'main', '--rounds', '5', '--sections', 'http,native', '--json-out', '/tmp/x.json']);
    expect(args).toEqual({ quick: true, compare: 'main', rounds: 5, sections: new Set(['http', 'native']), jsonOut: '/tmp/x.json', jobPoints: null, jobSeries: 1 });
    expect(parseBenchArgs([]).sections).toEqual(new Set(['engine', 'model', 'http', 'native', 'jobs']));
    expect(parseBenchArgs(['--sections', 'jobs', '--job-points', '100000', '--job-series', '10'])).toMatchObject({ jobPoints: 100_000, jobSeries: 10 });
  });

  it('refuses what it does not know', () => {
    expect(() => parseBenchArgs(['--sections', 'http,disk'])).toThrow(new BenchArgsError('unknown section disk (sections: engine, model, http, native, jobs)'));
    expect(() => parseBenchArgs(['--job-points', '100', '--job-series', '10'])).toThrow(BenchArgsError);
    expect(() => parseBenchArgs(['--job-points', '1.5'])).toThrow(BenchArgsError);
    expect(() => parseBenchArgs(['--rounds', '0'])).toThrow(BenchArgsError);
    expect(() => parseBenchArgs(['--compare'])).toThrow(new BenchArgsError('--compare needs a value'));
    expect(() => parseBenchArgs(['--fast'])).toThrow(new BenchArgsError('unknown option --fast'));
  });
});
