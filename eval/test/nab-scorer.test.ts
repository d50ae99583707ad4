import { describe, expect, it } from 'vitest';
import { datasetGate, datasetTitle } from '../../test/datasets.js';
import { loadNabCorpus } from '../src/nab-data.js';
import {
  type NabFileDetections,
  type NabProfile,
  type NabWindow,
  probationaryRows,
  scaledSigmoid,
  scoreCorpus,
  scoreFile,
  windowPrecisionRecall,
} from '../src/nab-scorer.js';

const STANDARD: NabProfile = { name: 'standard', tpWeight: 1, fnWeight: 1, fpWeight: 0.11 };
const LOW_FP: NabProfile = { name: 'reward_low_FP_rate', tpWeight: 1, fnWeight: 1, fpWeight: 0.22 };
const LOW_FN: NabProfile = { name: 'reward_low_FN_rate', tpWeight: 1, fnWeight: 2, fpWeight: 0.11 };

// A 100-row file: probation P = min(floor(0.15 * 100), 750) = 15 rows (0..14 ignored).
// One window [40, 49]: width W = 10.
const WINDOW: NabWindow = { startRow: 40, endRow: 49 };

function file(detectedRows: readonly number[], windows: readonly NabWindow[] = [WINDOW], rowCount = 100): NabFileDetections {
  const detections = Array.from({ length: rowCount }, (_, i) => detectedRows.includes(i));
  return { file: 'f.csv', rowCount, windows, detections };
}

// sig(-1) = 2 / (1 + e^-5) - 1 = 2 / 1.0067379 - 1 = 0.9866143
const SIG_MINUS_1 = 2 / (1 + Math.exp(-5)) - 1;

describe('NAB building blocks', () => {
  it('probationary period is min(floor(0.15 N), 750)', () => {
    expect(probationaryRows(100)).toBe(15);
    expect(probationaryRows(4032)).toBe(604); // floor(604.8)
    expect(probationaryRows(22695)).toBe(750); // capped
  });

  it('scaled sigmoid: 0 at y = 0, sig(-1) = 0.98661, -1 beyond y = 3', () => {
    expect(scaledSigmoid(0)).toBe(0);
    expect(scaledSigmoid(-1)).toBeCloseTo(0.986614, 6);
    expect(scaledSigmoid(3)).toBeCloseTo(2 / (1 + Math.exp(15)) - 1, 12); // -0.9999994, not clamped
    expect(scaledSigmoid(3.0001)).toBe(-1);
  });
});

describe('scoreFile (standard profile unless stated)', () => {
  it('a detection at the left edge of a window earns exactly A_TP', () => {
    // y = -(49 - 40 + 1) / 10 = -1; value = sig(-1) * A_TP / sig(-1) = 1.
    expect(scoreFile(file([40]), STANDARD).raw).toBe(1);
  });

  it('a detection at the right edge earns sig(-1/W) / sig(-1)', () => {
    // y = -(49 - 49 + 1) / 10 = -0.1; sig(-0.1) = 2 / (1 + e^-0.5) - 1 = 2 / 1.6065307 - 1 = 0.2449187;
    // 0.2449187 / 0.9866143 = 0.2482416.
    const raw = scoreFile(file([49]), STANDARD).raw;
    expect(raw).toBeCloseTo(0.2482416, 6);
    expect(raw).toBeCloseTo((2 / (1 + Math.exp(-0.5)) - 1) / SIG_MINUS_1, 12);
  });

  it('only the first detection of a window counts', () => {
    // Rows 40 and 45 both in the window: max(1, sig(-0.5)/sig(-1)) = 1; no false positives.
    const s = scoreFile(file([40, 45]), STANDARD);
    expect(s.raw).toBe(1);
    expect(s.falsePositiveRows).toBe(0);
    expect(s.detectionRowsInWindows).toBe(2);
  });

  it('a missed window costs -A_FN', () => {
    expect(scoreFile(file([]), STANDARD).raw).toBe(-1);
    expect(scoreFile(file([]), LOW_FN).raw).toBe(-2);
  });

  it('an FP before any window costs -A_FP (plus the missed window)', () => {
    // Row 20: after probation, before the window: s = -1, so 0.11 * -1 = -0.11; window missed: -1.
    expect(scoreFile(file([20]), STANDARD).raw).toBeCloseTo(-1.11, 12);
    // Low FP profile: -0.22 - 1 = -1.22.
    expect(scoreFile(file([20]), LOW_FP).raw).toBeCloseTo(-1.22, 12);
    // With no window at all: just -A_FP.
    expect(scoreFile(file([20], []), STANDARD).raw).toBeCloseTo(-0.11, 12);
  });

  it('an FP right after a window costs little, a far one costs about A_FP', () => {
    // Row 50: y = |50 - 49| / (10 - 1) = 1/9; sig(1/9) = 2 / (1 + e^(5/9)) - 1 = 2 / 2.7429089 - 1
    // = -0.2708471; contribution 0.11 * -0.2708471 = -0.0297932; plus the window's +1 = 0.9702068.
    expect(scoreFile(file([40, 50]), STANDARD).raw).toBeCloseTo(0.9702068, 6);
    // Row 90: y = 41/9 = 4.56 > 3, so sig = -1: 1 - 0.11 = 0.89.
    expect(scoreFile(file([40, 90]), STANDARD).raw).toBeCloseTo(0.89, 12);
    // Row 60: y = 11/9 = 1.2222; sig = 2 / (1 + e^6.1111) - 1 = -0.9955744; 1 - 0.1095132 = 0.8904868.
    expect(scoreFile(file([40, 60]), STANDARD).raw).toBeCloseTo(0.8904868, 6);
  });

  it('every FP row counts separately, weighted by the most recent preceding window', () => {
    // Windows [20, 29] (W 10) and [60, 69] (W 10); FPs at 18 (before any window: -0.11),
    // 30 (after window 1: y = 1/9, -0.0297932) and 70 (after window 2: y = 1/9, -0.0297932);
    // both windows detected at their left edge: +2. Total 2 - 0.11 - 0.0595864 = 1.8304136.
    const windows = [
      { startRow: 20, endRow: 29 },
      { startRow: 60, endRow: 69 },
    ];
    const s = scoreFile(file([18, 20, 30, 60, 70], windows), STANDARD);
    expect(s.raw).toBeCloseTo(1.8304136, 6);
    expect(s.falsePositiveRows).toBe(3);
    expect(s.detectedWindows).toBe(2);
  });

  it('rows in the probationary period are ignored', () => {
    // Rows 0..14 are probationary: a detection there is neither an FP nor anything else.
    const s = scoreFile(file([0, 5, 14], []), STANDARD);
    expect(s.raw).toBe(0);
    expect(s.detectionRows).toBe(0);
    // Row 15 is the first judged row: an FP before any window.
    expect(scoreFile(file([15], []), STANDARD).raw).toBeCloseTo(-0.11, 12);
  });

  it('rejects flags that do not match the rows', () => {
    expect(() => scoreFile({ file: 'x', rowCount: 3, windows: [], detections: [false] }, STANDARD)).toThrow(RangeError);
  });
});

describe('losses against a perfect score', () => {
  it('split into missed windows, late detections and false positives, adding up to S_perfect - S', () => {
    // Windows [20,29] (detected at row 25) and [60,69] (missed); false positives at 15 (before any
    // window: weight -1) and 30 (y = 1/9 after the first window).
    const windows = [
      { startRow: 20, endRow: 29 },
      { startRow: 60, endRow: 69 },
    ];
    // Row 25 of [20,29]: y = -(29 - 25 + 1) / 10 = -0.5.
    const value = scaledSigmoid(-0.5) / SIG_MINUS_1;
    const fpAfter = -scaledSigmoid(1 / 9);
    for (const profile of [STANDARD, LOW_FP, LOW_FN]) {
      const s = scoreFile(file([15, 25, 30], windows), profile);
      expect(s.lost.missedWindows).toBeCloseTo(profile.tpWeight + profile.fnWeight, 12);
      expect(s.lost.lateDetections).toBeCloseTo(profile.tpWeight - value, 12);
      expect(s.lost.falsePositives).toBeCloseTo(profile.fpWeight * (1 + fpAfter), 12);
      const lost = s.lost.missedWindows + s.lost.lateDetections + s.lost.falsePositives;
      expect(lost).toBeCloseTo(profile.tpWeight * 2 - s.raw, 12);
    }
  });

  it('a detection at the left edge loses nothing; the corpus adds its files up', () => {
    const edge = file([40]);
    expect(scoreFile(edge, STANDARD).lost).toEqual({ missedWindows: 0, lateDetections: 0, falsePositives: 0 });
    const corpus = scoreCorpus([edge, file([], [WINDOW]), file([80], [])], STANDARD);
    expect(corpus.lost.missedWindows).toBe(2);
    expect(corpus.lost.lateDetections).toBe(0);
    expect(corpus.lost.falsePositives).toBeCloseTo(0.11, 12);
    expect(corpus.lost.missedWindows + corpus.lost.falsePositives).toBeCloseTo(corpus.perfectRaw - corpus.raw, 12);
  });
});

describe('scoreCorpus normalisation', () => {
  it('hand case: (S - S_null) / (S_perfect - S_null)', () => {
    // File a: windows [40,49] detected at the edge (+1) and [70,79] missed (-1); file b: [40,49]
    // missed (-1). S = -1, S_null = -3, S_perfect = 3: 100 * (-1 + 3) / 6 = 33.333...
    const a = file([40], [WINDOW, { startRow: 70, endRow: 79 }]);
    const b = file([], [WINDOW]);
    const s = scoreCorpus([a, b], STANDARD);
    expect(s.raw).toBe(-1);
    expect(s.nullRaw).toBe(-3);
    expect(s.perfectRaw).toBe(3);
    expect(s.score).toBeCloseTo(100 / 3, 12);
    // Low FN: S = 1 - 2 - 2 = -3, S_null = -6, S_perfect = 3: 100 * 3 / 9 = 33.333...
    expect(scoreCorpus([a, b], LOW_FN).score).toBeCloseTo(100 / 3, 12);
  });

  const nab = datasetGate('nab_dev');
  it.skipIf(!nab.run)(datasetTitle('on the real dev split, the null detector scores 0 and the perfect detector 100', nab), async () => {
    const corpus = await loadNabCorpus(nab.dir);
    expect(corpus.series).toHaveLength(35);
    expect(corpus.series.reduce((n, s) => n + s.windows.length, 0)).toBe(55);
    const asDetections = (pick: (rows: number, windows: readonly NabWindow[]) => boolean[]): NabFileDetections[] =>
      corpus.series.map((s) => ({
        file: s.file,
        rowCount: s.values.length,
        windows: s.windows,
        detections: pick(s.values.length, s.windows),
      }));
    const nothing = asDetections((n) => new Array<boolean>(n).fill(false));
    const perfect = asDetections((n, windows) => {
      const d = new Array<boolean>(n).fill(false);
      for (const w of windows) d[w.startRow] = true;
      return d;
    });
    for (const profile of corpus.profiles) {
      expect(scoreCorpus(nothing, profile).score).toBe(0);
      expect(scoreCorpus(perfect, profile).score).toBeCloseTo(100, 10);
    }
    expect(corpus.profiles.map((p) => [p.name, p.tpWeight, p.fnWeight, p.fpWeight])).toEqual([
      ['standard', 1, 1, 0.11],
      ['reward_low_FP_rate', 1, 1, 0.22],
      ['reward_low_FN_rate', 1, 2, 0.11],
    ]);
  });
});

describe('windowPrecisionRecall', () => {
  it('counts detections after probation, inside windows, and recalled windows', () => {
    // File 1: detections 5 (probation, ignored), 20 (FP), 40 and 41 (in window) -> 3 counted, 2 in
    // windows, window recalled. File 2: window missed, no detections.
    const pr = windowPrecisionRecall([file([5, 20, 40, 41]), file([])]);
    expect(pr).toEqual({ precision: 2 / 3, recall: 1 / 2, detections: 3, detectionsInWindows: 2, windows: 2, recalledWindows: 1 });
    expect(windowPrecisionRecall([file([])]).precision).toBeNull();
  });
});
