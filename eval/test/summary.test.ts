// The committed summaries of `npm run eval` and `npm run eval:tune`: what they keep of a run
// (the figures the docs print) and what they leave to the full results under eval/out/.
import { describe, expect, it } from 'vitest';
import type { EvalResults } from '../src/harness.js';
import { resultsSummary } from '../src/summary.js';
import { type ConstantOutcome, tuneSummary } from '../src/tune.js';

const folds = (scores: number[]) => ({
  profile: 'standard',
  folds: scores.map((score, i) => ({ heldOut: `c${i}`, files: 3, windows: 2, score })),
  mean: scores.reduce((a, b) => a + b, 0) / scores.length,
  min: Math.min(...scores),
  max: Math.max(...scores),
});
const profile = { score: 50, raw: 1, nullRaw: -2, perfectRaw: 2, lost: { missedWindows: 0.5, lateDetections: 0.25, falsePositives: 0.25 } };
const nabRow = (id: string) => ({
  id,
  name: `row ${id}`,
  detector: id,
  elapsedMs: 10,
  precision: 0.5,
  recall: 1,
  errors: 0,
  profiles: { standard: profile },
  files: [{ file: 'c0/a.csv', detections: [3, 4] }],
  folds: { standard: folds([40, 60]) },
});

describe('the committed summary of npm run eval (eval/results.json)', () => {
  const full = {
    engine: { package: '@adp/detection', version: '9.9.9', sourceSha256: 'abc', status: 'loaded' },
    date: '2026-01-01T00:00:00.000Z',
    elapsedMs: 5,
    machine: { node: 'v20', cpus: 2 },
    settings: { large: 'settings' },
    nab: {
      files: 1,
      windows: 2,
      profiles: [],
      headline: [],
      windowRobustness: { windows: [{ window: 720, id: 'window:720', standard: 50, folds: folds([40, 60]) }], spread: 0 },
      detectors: [nabRow('shipped:stream'), nabRow('engine:default'), nabRow('engine:no-echo')],
    },
    tcpd: {
      series: 1,
      detectors: ['changepoint', 'engine:default', 'engine:cp-no-refine'].map((id) => ({ id, name: id, f1: 0.5, cover: 0.25, errors: 0, series: [{ series: 's' }] })),
    },
    anchors: [],
    peers: [],
    table: '| the printed table |',
    ablation: null,
  } as unknown as EvalResults;
  interface Row {
    readonly id: string;
    readonly folds?: unknown;
  }
  const summary = resultsSummary(full) as {
    engine: unknown;
    nab: { categories: string[]; detectors: Row[]; windowRobustness: { windows: Row[] } };
    tcpd: { detectors: Row[] };
  };

  it("keeps every row's scores, lost points and folds, each fold's score in the order of the categories", () => {
    expect(summary.nab.categories).toEqual(['c0', 'c1']);
    expect(summary.nab.detectors[0]).toEqual({
      id: 'shipped:stream',
      name: 'row shipped:stream',
      precision: 0.5,
      recall: 1,
      errors: 0,
      profiles: { standard: profile },
      folds: { standard: { mean: 50, min: 40, max: 60, scores: [40, 60] } },
    });
    expect(summary.nab.windowRobustness.windows[0]!.folds).toEqual({ mean: 50, min: 40, max: 60, scores: [40, 60] });
    expect(summary.engine).toEqual(full.engine);
  });

  it('leaves the per-file results, the settings, the table and the ablation variants (eval/ablation.json) to the full results', () => {
    expect(summary.nab.detectors.map((d) => d.id)).toEqual(['shipped:stream', 'engine:default']);
    expect(summary.tcpd.detectors.map((d) => d.id)).toEqual(['changepoint', 'engine:default']);
    expect(summary.tcpd.detectors[0]).toEqual({ id: 'changepoint', name: 'changepoint', f1: 0.5, cover: 0.25, errors: 0 });
    expect(JSON.stringify(summary)).not.toMatch(/"files":\[|"settings"|"table"|"headline"/);
  });
});

describe('the committed summary of npm run eval:tune (eval/tune.json)', () => {
  const constant: ConstantOutcome = {
    name: 'REFRACTORY_POINTS',
    shipped: 150,
    values: [120, 150],
    whole: [{ standard: 60, reward_low_FP_rate: 50 }, { standard: 70, reward_low_FP_rate: 55 }],
    folds: ['c0', 'c1'].map((heldOut) => ({
      heldOut,
      chosen: 150,
      trainStandard: [60, 70],
      heldOutChosen: null,
      heldOutShipped: null,
      heldOutFalsePositiveRowsChosen: 0,
      heldOutFalsePositiveRowsShipped: 0,
    })),
    verdict: 'shipped',
  };
  it("keeps each constant's values, NAB standard by value, the folds' choices and the verdict, and the table", () => {
    const summary = tuneSummary({
      engine: { sourceSha256: 'abc' },
      date: 'd',
      elapsedMs: 1,
      set: {},
      rows: [{ row: 'shipped:stream', shipped: { standard: 70 }, constants: [constant, { ...constant, name: 'X', verdict: 'moves', movesTo: 120 }], table: '| t |' }],
    });
    expect(summary).toEqual({
      engine: { sourceSha256: 'abc' },
      date: 'd',
      elapsedMs: 1,
      set: {},
      categories: ['c0', 'c1'],
      rows: [
        {
          row: 'shipped:stream',
          shipped: { standard: 70 },
          constants: [
            { name: 'REFRACTORY_POINTS', shipped: 150, values: [120, 150], standard: [60, 70], chosen: [150, 150], verdict: 'shipped' },
            { name: 'X', shipped: 150, values: [120, 150], standard: [60, 70], chosen: [150, 150], verdict: 'moves', movesTo: 120 },
          ],
          table: '| t |',
        },
      ],
    });
  });
});
