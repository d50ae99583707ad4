import os from 'node:os';
import path from 'node:path';
import type { ChangePointResult, LastResult, SeriesInput } from '@adp/detection';
import { describe, expect, it } from 'vitest';
import { parseConfig, UsageError } from '../src/config.js';
import {
  engineChangePointDetector,
  type EngineApi,
  engineStreamingDetector,
  granularityOfSpacing,
  HARNESS_STREAM,
} from '../src/engine.js';
import { markdownTable } from '../src/table.js';

const ROOT = '/repo';

describe('command line', () => {
  it('a full run writes eval/out/results.json and the summary eval/results.json; a filtered one writes nothing unless --out', () => {
    const full = parseConfig([], ROOT);
    expect(full.resultsPath).toBe(path.join(ROOT, 'eval', 'out', 'results.json'));
    expect(full.summaryPath).toBe(path.join(ROOT, 'eval', 'results.json'));
    expect(full.benchmarks).toEqual(['nab', 'tcpd']);
    expect(full.detectors).toEqual(['engine', 'zscore', 'sr', 'null']);
    expect(full.datasetsDir).toBe(path.resolve('/shared/datasets'));
    const only = parseConfig(['--only', 'tcpd', '--detector', 'engine,null'], ROOT);
    expect(only.benchmarks).toEqual(['tcpd']);
    expect(only.detectors).toEqual(['engine', 'null']);
    expect(only.resultsPath).toBeUndefined();
    expect(only.summaryPath).toBeUndefined();
    expect(parseConfig(['--only', 'nab', '--out', '/tmp/r.json'], ROOT)).toMatchObject({ resultsPath: '/tmp/r.json', summaryPath: undefined });
    expect(parseConfig(['--out', '/tmp/r.json'], ROOT).summaryPath).toBeUndefined();
    expect(Object.isFrozen(full)).toBe(true);
  });

  it('runs the shipped rows and the harness window by default, the ablation only with --ablation', () => {
    const full = parseConfig([], ROOT);
    expect(full.ablation).toBe(false);
    expect(full.rows).toBeUndefined();
    expect(full.variants).toBeUndefined();
    expect(parseConfig(['--ablation'], ROOT)).toMatchObject({ ablation: true, variants: undefined, rows: undefined });
    expect(parseConfig(['--ablation'], ROOT)).toMatchObject({
      resultsPath: path.join(ROOT, 'eval', 'out', 'results.json'),
      summaryPath: path.join(ROOT, 'eval', 'results.json'),
    });
    // --row alone: those rows, no variant; --variant alone: those variants, no row.
    const rows = parseConfig(['--row', 'shipped:stream,window:8640'], ROOT);
    expect(rows).toMatchObject({ rows: ['shipped:stream', 'window:8640'], variants: [] });
    expect(rows.resultsPath).toBeUndefined();
    expect(parseConfig(['--variant', 'default'], ROOT)).toMatchObject({ rows: [], variants: ['default'] });
    expect(() => parseConfig(['--row', 'shipped:nope'], ROOT)).toThrow(UsageError);
  });

  it('sweep sensitivities default and parse', () => {
    expect(parseConfig(['--sweep'], ROOT).sweepSensitivities).toEqual([50, 70, 80, 90, 95, 99]);
    expect(parseConfig(['--sweep', '--sensitivities', '90,60'], ROOT).sweepSensitivities).toEqual([60, 90]);
  });

  it('threads: the cores up to 4 by default, 1 to 64 when given', () => {
    expect(parseConfig([], ROOT).threads).toBe(Math.min(4, Math.max(1, os.cpus().length)));
    expect(parseConfig(['--threads', '1'], ROOT).threads).toBe(1);
    expect(parseConfig(['--threads', '8'], ROOT).threads).toBe(8);
    for (const bad of ['0', '65', '1.5', 'many']) expect(() => parseConfig(['--threads', bad], ROOT), bad).toThrow(UsageError);
  });

  it('rejects unknown values and flags', () => {
    expect(() => parseConfig(['--only', 'ucr'], ROOT)).toThrow(UsageError);
    expect(() => parseConfig(['--detector', 'htm'], ROOT)).toThrow(UsageError);
    expect(() => parseConfig(['--frobnicate'], ROOT)).toThrow(UsageError);
    expect(() => parseConfig(['--sensitivities', '120'], ROOT)).toThrow(UsageError);
  });
});

function record(isAnomaly: boolean): LastResult {
  return {
    period: 0,
    suggestedWindow: 0,
    expectedValue: 0,
    upperMargin: 0,
    lowerMargin: 0,
    isAnomaly,
    isPositiveAnomaly: isAnomaly,
    isNegativeAnomaly: false,
    severity: isAnomaly ? 1 : 0,
  };
}

/** A fake engine that records what the harness asks of it. */
function fakeEngine() {
  const calls: { granularity?: [string, number]; periodOn?: number; suggested?: [number, string]; stream?: unknown; changePoint?: unknown; input?: SeriesInput } = {};
  const api: EngineApi = {
    detectPeriod(values, granularity, customInterval) {
      calls.periodOn = values.length;
      calls.granularity = [granularity, customInterval];
      return 24;
    },
    suggestedWindow(period, granularity) {
      calls.suggested = [period, granularity];
      return 4 * period + 1;
    },
    detectStream(input, opts) {
      calls.stream = opts;
      calls.input = input;
      return input.values.map((v) => record(v > 100));
    },
    detectChangePointSeries(input, opts): ChangePointResult {
      calls.changePoint = opts;
      return { period: 0, isChangePoint: input.values.map((_, i) => i === 3), confidenceScores: input.values.map(() => 0) };
    },
  };
  return { api, calls };
}

describe('engine adapter', () => {
  it("streams with the service's defaults, a window from the learning prefix, and the variant's overrides", () => {
    const { api, calls } = fakeEngine();
    const values = Array.from({ length: 1000 }, (_, i) => (i === 900 ? 500 : 1));
    const detector = engineStreamingDetector(api, { name: 'x', description: '', detect: { components: { sr: false } } });
    const flags = detector.flags(values);
    expect(flags.flatMap((f, i) => (f ? [i] : []))).toEqual([900]);
    // Probation of 1000 rows = 150: the period and the window come from those rows only.
    expect(calls.periodOn).toBe(150);
    expect(calls.suggested).toEqual([24, 'none']);
    // No period: as a last/detect request, the engine detects it in each window.
    // The window: the suggested 97 points (4 × 24 + 1), raised to the 150 learning rows.
    // The client keeps 8,640 points and sends the range of those before its window.
    expect(calls.stream).toEqual({
      sensitivity: 95,
      maxAnomalyRatio: 0.25,
      windowPoints: 150,
      memoryPoints: 8640,
      components: { sr: false },
    });
    expect(calls.input).toMatchObject({ timestampsMs: null, granularity: 'none', customInterval: 1 });
    expect(detector.lastPlan()).toEqual({ learningPoints: 150, granularity: 'none', customInterval: 1, period: 24, windowPoints: 150 });
    expect(HARNESS_STREAM).toMatchObject({ sensitivity: 95, maxAnomalyRatio: 0.25 });
  });

  it('reads the granularity for period detection from the rows spacing in the learning prefix', () => {
    const { api, calls } = fakeEngine();
    const t0 = Date.UTC(2014, 0, 1);
    const timestamps = Array.from({ length: 200 }, (_, i) => t0 + i * 300_000);
    engineStreamingDetector(api, { name: 'd', description: '' }).flags(new Array<number>(200).fill(1), timestamps);
    expect(calls.granularity).toEqual(['minutely', 5]);
    expect(calls.input).toMatchObject({ granularity: 'none', timestampsMs: null });
    expect(granularityOfSpacing([0, 3_600_000, 7_200_000, 7_200_000, 10_800_000])).toEqual({ granularity: 'hourly', customInterval: 1 });
    expect(granularityOfSpacing([0, 1_800_000, 3_600_000])).toEqual({ granularity: 'minutely', customInterval: 30 });
    expect(granularityOfSpacing([0, 86_400_000 * 7])).toEqual({ granularity: 'daily', customInterval: 7 });
    expect(granularityOfSpacing([0, 1500])).toEqual({ granularity: 'secondly', customInterval: 2 });
    expect(granularityOfSpacing(undefined)).toEqual({ granularity: 'none', customInterval: 1 });
  });

  it('keeps the suggested window when it is longer than the learning prefix, or when a variant asks for it alone', () => {
    const { api, calls } = fakeEngine();
    // 80 learning rows (probation of 540): the suggested 97 points win.
    engineStreamingDetector(api, { name: 'd', description: '' }).flags(new Array<number>(540).fill(1));
    expect((calls.stream as { windowPoints: number }).windowPoints).toBe(97);
    const suggestedOnly = engineStreamingDetector(api, {
      name: 's',
      description: '',
      stream: { window: { kind: 'suggested', minPoints: 12, atLeastLearning: false } },
    });
    suggestedOnly.flags(new Array<number>(1000).fill(1));
    expect((calls.stream as { windowPoints: number }).windowPoints).toBe(97);
  });

  it('a variant may override the streaming rule: fixed window, period from the prefix', () => {
    const { api, calls } = fakeEngine();
    const detector = engineStreamingDetector(api, {
      name: 'fixed',
      description: '',
      stream: { window: { kind: 'fixed', points: 500 }, period: 'prefix', sensitivity: 80, memoryPoints: 0 },
    });
    detector.flags(new Array<number>(200).fill(1));
    expect(calls.stream).toEqual({ sensitivity: 80, maxAnomalyRatio: 0.25, windowPoints: 500, period: 24 });
  });

  it('takes change points from isChangePoint with default options', () => {
    const { api, calls } = fakeEngine();
    expect(engineChangePointDetector(api, { name: 'default', description: '' }).changePoints([1, 2, 3, 4, 5])).toEqual([3]);
    expect(calls.changePoint).toEqual({});
  });

  it('refuses a stream answer with the wrong number of records', () => {
    const { api } = fakeEngine();
    const short: EngineApi = { ...api, detectStream: (input) => input.values.slice(1).map(() => record(false)) };
    expect(() => engineStreamingDetector(short, { name: 'd', description: '' }).flags([1, 2, 3])).toThrow(/2 records for 3 points/);
  });
});

describe('table', () => {
  it('prints one markdown row per entry with dashes for missing figures', () => {
    const t = markdownTable([
      { name: 'a', nab: [1.234, 2, 3], tcpdF1: 0.64687, note: 'n' },
      { name: 'b', tcpdCover: 0.5 },
    ]);
    expect(t.split('\n')).toEqual([
      '| detector | NAB standard | NAB low FP | NAB low FN | NAB standard folds: mean (min–max) | TCPD F1 | TCPD cover | note |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
      '| a | 1.2 | 2.0 | 3.0 | — | 0.647 | — | n |',
      '| b | — | — | — | — | — | 0.500 |  |',
    ]);
    expect(markdownTable([{ name: 'c', nab: [1, 2, 3], folds: '1.0 (0.5–1.5)' }]).split('\n')[2]).toBe('| c | 1.0 | 2.0 | 3.0 | 1.0 (0.5–1.5) | — | — |  |');
  });
});
