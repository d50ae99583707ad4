// The entire-series benchmark's counting (eval/src/batch.ts), by hand.
import { describe, expect, it } from 'vitest';
import { alertRuns, batchRow, eventFolds, fileOutcome, nabScores, REQUEST_POINTS, requestFlags, type BatchDetector } from '../src/batch.js';
import { scoreCorpus, type NabProfile } from '../src/nab-scorer.js';

describe('alertRuns', () => {
  it('joins consecutive flagged rows into one alert', () => {
    expect(alertRuns([])).toEqual([]);
    expect(alertRuns([false, false])).toEqual([]);
    expect(alertRuns([true, true, false, true, false, false, true, true, true])).toEqual([
      [0, 1],
      [3, 3],
      [6, 8],
    ]);
  });
});

describe('fileOutcome and batchRow', () => {
  const windows = [
    { startRow: 10, endRow: 19 },
    { startRow: 40, endRow: 49 },
  ];
  it('counts alerts that touch no window, and windows touched by any flagged row', () => {
    const flags = new Array<boolean>(60).fill(false);
    for (const row of [2, 3, 9, 10, 30, 55, 56, 57]) flags[row] = true;
    // Alerts: [2,3] false, [9,10] touches the first window at its edge, [30] false, [55,57] false.
    expect(fileOutcome('realX/a.csv', flags, windows)).toEqual({
      file: 'realX/a.csv',
      rows: 60,
      flagged: 8,
      alerts: 4,
      falseAlerts: 3,
      windows: 2,
      windowsDetected: 1,
    });
    const clean = fileOutcome('artificialNoAnomaly/b.csv', [true, false, true, true], []);
    expect(clean).toMatchObject({ alerts: 2, falseAlerts: 2, windowsDetected: 0 });
    const row = batchRow('d', [fileOutcome('realX/a.csv', flags, windows), clean]);
    expect(row).toMatchObject({ detector: 'd', windowsDetected: 1, windows: 2, falseAlerts: 5, falseAlertsNoAnomaly: 2 });
    expect(row.flaggedShare).toBeCloseTo(11 / 64, 12);
  });
});

describe('requestFlags', () => {
  it('sends at most REQUEST_POINTS rows a request, in equal consecutive parts, and joins the flags in order', () => {
    const sizes: number[] = [];
    const detector: BatchDetector = {
      name: 'first of each request',
      flags: (input) => {
        sizes.push(input.values.length);
        expect(input).toMatchObject({ timestampsMs: null, granularity: 'none' });
        return input.values.map((_, i) => i === 0);
      },
    };
    const values = Array.from({ length: 2 * REQUEST_POINTS + 1 }, (_, i) => i);
    const flags = requestFlags(values, detector);
    expect(sizes).toEqual([5760, 5760, 5761]);
    expect(flags).toHaveLength(values.length);
    expect(flags.flatMap((f, i) => (f ? [i] : []))).toEqual([0, 5760, 11520]);
    sizes.length = 0;
    requestFlags(values.slice(0, REQUEST_POINTS), detector);
    expect(sizes).toEqual([REQUEST_POINTS]);
  });
});

const PROFILES: NabProfile[] = [
  { name: 'standard', tpWeight: 1, fnWeight: 1, fpWeight: 0.11 },
  { name: 'reward_low_FP_rate', tpWeight: 1, fnWeight: 1, fpWeight: 0.22 },
  { name: 'reward_low_FN_rate', tpWeight: 1, fnWeight: 2, fpWeight: 0.11 },
];

describe('nabScores', () => {
  it('scores the flags with every profile as the streaming rows are', () => {
    const flags = new Array<boolean>(100).fill(false);
    flags[50] = true;
    flags[90] = true;
    const detections = [{ file: 'realX/a.csv', rowCount: 100, windows: [{ startRow: 45, endRow: 55 }], detections: flags }];
    const scores = nabScores(detections, PROFILES);
    for (const p of PROFILES) expect(scores[p.name]).toBe(scoreCorpus(detections, p).score);
    expect(scores.standard).toBeLessThan(100);
  });
});

describe('eventFolds', () => {
  it('chooses each fold on the other categories and scores the held-out one, null where it has no windows', () => {
    const series = (file: string, spikes: readonly number[]) => {
      const values = Array.from({ length: 600 }, (_, i) => 50 + Math.sin(i * 1.7) + (spikes.includes(i) ? 40 : 0));
      return { file, timestampsMs: values.map((_, i) => i * 300_000), values, windows: spikes.map((s) => ({ startRow: s - 10, endRow: s + 10 })) };
    };
    const corpus = { series: [series('a/x.csv', [300]), series('b/y.csv', [400]), series('c/z.csv', [])], profiles: PROFILES };
    const grid = [
      { routineCount: 1, gapShare: 0 },
      { routineCount: 4, gapShare: 0.01 },
    ];
    const { folds, wholeSetChoice } = eventFolds(corpus, grid[1]!, grid);
    expect(folds.map((f) => f.heldOut)).toEqual(['a', 'b', 'c']);
    expect(grid).toContainEqual(wholeSetChoice);
    for (const f of folds.slice(0, 2)) {
      expect(grid).toContainEqual(f.chosen);
      // One spike in its window, nothing else outside the band: every profile scores the detection.
      expect(f.heldOutNab?.standard).toBeGreaterThan(50);
      expect(f.heldOutNabWithoutEvents).not.toBeNull();
    }
    expect(folds[2]).toMatchObject({ heldOutNab: null, heldOutNabShipped: null, heldOutFalsePositiveRows: 0 });
  });
});
