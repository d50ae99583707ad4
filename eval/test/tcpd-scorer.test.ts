import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { datasetGate, datasetTitle } from '../../test/datasets.js';
import { zeroChangePoints } from '../src/reference/null.js';
import { fillMissing, loadTcpdSeries, TCPD_SERIES } from '../src/tcpd-data.js';
import { runTcpd } from '../src/tcpd-run.js';
import { countTruePositives, partition, tcpdCover, tcpdF1 } from '../src/tcpd-scorer.js';

const TCPD = datasetGate('tcpd');
const TCPD_DIR = TCPD.dir;

describe('TCPD F1', () => {
  it('matches within the margin of 5, each prediction at most once', () => {
    expect(countTruePositives(new Set([0, 10]), new Set([0, 14, 16]))).toBe(2); // 10 <-> 14 (4 apart)
    expect(countTruePositives(new Set([10]), new Set([16]))).toBe(0); // 6 apart
    expect(countTruePositives(new Set([10, 12]), new Set([11]))).toBe(1); // 11 used once
  });

  it('hand case: precision against the union, recall averaged over annotators', () => {
    // Annotators [10] and [12, 50]; predictions [11, 30]. With 0 added:
    // predicted {0, 11, 30} (3); union {0, 10, 12, 50}: 0<->0, 10<->11, 12 finds 11 taken, 50 none
    // -> 2 matches, P = 2/3. Annotator 1 {0, 10}: 2/2 = 1; annotator 2 {0, 12, 50}: 0<->0, 12<->11
    // -> 2/3. R = (1 + 2/3) / 2 = 5/6. F1 = 2 (2/3)(5/6) / (2/3 + 5/6) = (10/9) / (3/2) = 20/27.
    const f = tcpdF1([[10], [12, 50]], [11, 30]);
    expect(f.precision).toBeCloseTo(2 / 3, 12);
    expect(f.recall).toBeCloseTo(5 / 6, 12);
    expect(f.f1).toBeCloseTo(20 / 27, 12);
  });

  it('the zero detector: P = 1 (only 0, matched), recall 1/|T_k| per annotator', () => {
    // Annotators [] and [10]: R = (1/1 + 1/2) / 2 = 3/4; F1 = 2 * 1 * 0.75 / 1.75 = 6/7.
    const f = tcpdF1([[], [10]], []);
    expect(f.precision).toBe(1);
    expect(f.recall).toBe(0.75);
    expect(f.f1).toBeCloseTo(6 / 7, 12);
  });

  it('a prediction at 0 is not counted twice', () => {
    expect(tcpdF1([[10]], [0, 10]).f1).toBe(1);
  });
});

describe('TCPD cover', () => {
  it('partitions 0..n-1 at the change points', () => {
    expect(partition([5], 10)).toEqual([{ start: 0, end: 5 }, { start: 5, end: 10 }]);
    expect(partition([0, 12, 5, 5], 10)).toEqual([{ start: 0, end: 5 }, { start: 5, end: 10 }]);
    expect(partition([], 3)).toEqual([{ start: 0, end: 3 }]);
  });

  it('hand case', () => {
    // n = 10, annotator [5]: S = {[0,5), [5,10)}; predicted [3]: S' = {[0,3), [3,10)}.
    // [0,5): best Jaccard max(3/5, 2/10) = 0.6, weight 5 -> 3. [5,10): max(0, 5/7), weight 5 -> 25/7.
    // Cover = (3 + 25/7) / 10 = 46/70 = 23/35.
    expect(tcpdCover([[5]], [3], 10)).toBeCloseTo(23 / 35, 12);
    // Zero predictions: [0,5) and [5,10) each have Jaccard 1/2 with [0,10): 0.5. An annotator with
    // no change points is covered perfectly: 1. Mean over the two annotators: 0.75.
    expect(tcpdCover([[5], []], [], 10)).toBeCloseTo(0.75, 12);
    expect(tcpdCover([[5]], [5], 10)).toBe(1);
  });
});

describe('missing values', () => {
  it('fills gaps in place: linear inside, nearest at the ends', () => {
    expect(fillMissing([null, 1, 'NaN', 3, null])).toEqual({ values: [1, 1, 2, 3, 3], missingIndices: [0, 2, 4] });
    expect(fillMissing([1, null, null, 4])).toEqual({ values: [1, 2, 3, 4], missingIndices: [1, 2] });
  });
});

describe.skipIf(!TCPD.run)(datasetTitle('the local TCPD subset', TCPD), () => {
  let anchors: {
    series: string[];
    per_dataset: Record<string, Record<string, { default_f1: number; default_cover: number }>>;
    means_local: Record<string, { default_f1: number; default_cover: number }>;
  };
  beforeAll(() => {
    anchors = JSON.parse(readFileSync(path.join(TCPD_DIR, 'anchor_scores_local.json'), 'utf8')) as typeof anchors;
  });

  it('uses the 25 series ANCHORS.md lists', () => {
    expect([...TCPD_SERIES].sort()).toEqual([...anchors.series].sort());
  });

  it('reproduces the published zero-detector scores, per series and on average (F1 0.6469, cover 0.557)', async () => {
    const series = await loadTcpdSeries(TCPD_DIR);
    const result = runTcpd(series, zeroChangePoints());
    for (const s of result.series) {
      const published = anchors.per_dataset[s.series]?.zero;
      expect(published, s.series).toBeDefined();
      expect(s.f1, `${s.series} F1`).toBeCloseTo(published?.default_f1 ?? Number.NaN, 10);
      expect(s.cover, `${s.series} cover`).toBeCloseTo(published?.default_cover ?? Number.NaN, 10);
    }
    expect(result.f1).toBeCloseTo(0.6469, 4);
    expect(result.cover).toBeCloseTo(0.557, 3);
    expect(result.f1).toBeCloseTo(anchors.means_local.zero?.default_f1 ?? Number.NaN, 12);
    expect(result.cover).toBeCloseTo(anchors.means_local.zero?.default_cover ?? Number.NaN, 12);
  });

  it('a failing detector scores 0 on the series it fails (TCPDBench rule)', async () => {
    const series = (await loadTcpdSeries(TCPD_DIR, ['nile'])).slice(0, 1);
    const failing = {
      name: 'failing',
      changePoints: (): number[] => {
        throw new RangeError('boom');
      },
    };
    const r = runTcpd(series, failing);
    expect(r.f1).toBe(0);
    expect(r.cover).toBe(0);
    expect(r.series[0]?.error).toBe('RangeError: boom');
  });
});
