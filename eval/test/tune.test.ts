import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import * as detection from '@adp/detection';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EngineApi } from '../src/engine.js';
import { loadNabCorpus, type NabCorpus } from '../src/nab-data.js';
import { detectNab } from '../src/nab-run.js';
import type { NabFileDetections } from '../src/nab-scorer.js';
import { shippedDetector } from '../src/shipped.js';
import { type ConstantOutcome, detectWithOverrides, foldConstant, parseSettings, TUNE_ROWS, tuneRun, tuneTable, verdictText } from '../src/tune.js';
import { datasetTitle } from '../../test/datasets.js';
import { NAB, nabSubset, SHORTEST_FILES } from './nab-subset.js';

// The two shortest files of the split, as a corpus of their own.
const FILES = SHORTEST_FILES;

/** A 1,000-row file of `category` with one window [500, 600], flagged at `rows`. */
function file(category: string, rows: readonly number[]): NabFileDetections {
  const detections = new Array<boolean>(1000).fill(false);
  for (const r of rows) detections[r] = true;
  return { file: `${category}/f.csv`, rowCount: 1000, windows: [{ startRow: 500, endRow: 600 }], detections };
}

describe.skipIf(!NAB.run)(datasetTitle('leave-one-category-out folds for a tuned constant', NAB), () => {
  let corpus: NabCorpus;
  let dir: string;
  beforeAll(async () => {
    dir = await nabSubset(FILES, 'tune-');
    corpus = await loadNabCorpus(dir);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const shipped = [file('A', [550]), file('B', [550]), file('C', [550])];

  it('keeps the shipped value when no fold does better without it (a tie keeps it too)', () => {
    // The other value adds a false positive in A: the fold holding A out ties, the others lose.
    const o = foldConstant('X', 1, [1, 2], [shipped, [file('A', [550, 300]), file('B', [550]), file('C', [550])]], corpus);
    expect(o.verdict).toBe('shipped');
    expect(o.movesTo).toBeUndefined();
    expect(o.folds.map((f) => [f.heldOut, f.chosen])).toEqual([
      ['A', 1],
      ['B', 1],
      ['C', 1],
    ]);
    const a = o.folds[0]!;
    expect(a.trainStandard[0]).toBe(a.trainStandard[1]);
    expect(a.heldOutFalsePositiveRowsShipped).toBe(0);
    expect(a.heldOutFalsePositiveRowsChosen).toBe(0);
    // The fold holding out B scores A and C: the false positive costs A_FP = 0.11 of 4 (2 windows).
    const b = o.folds[1]!;
    expect(b.trainStandard[0]! - b.trainStandard[1]!).toBeCloseTo((100 * 0.11) / 4, 9);
    expect(o.whole).toHaveLength(2);
    expect(o.whole[0]!['standard']).toBeGreaterThan(o.whole[1]!['standard']!);
  });

  it('moves to a value every fold chooses', () => {
    // The shipped value has a false positive in every category that the other value avoids.
    const withFp = [file('A', [550, 300]), file('B', [550, 300]), file('C', [550, 300])];
    const o = foldConstant('X', 1, [0.5, 1], [shipped, withFp], corpus);
    expect(o.verdict).toBe('moves');
    expect(o.movesTo).toBe(0.5);
    expect(o.folds.map((f) => f.chosen)).toEqual([0.5, 0.5, 0.5]);
    expect(o.folds.map((f) => [f.heldOutFalsePositiveRowsChosen, f.heldOutFalsePositiveRowsShipped])).toEqual([
      [0, 1],
      [0, 1],
      [0, 1],
    ]);
    expect(o.folds[0]!.heldOutChosen!['standard']).toBeGreaterThan(o.folds[0]!.heldOutShipped!['standard']!);
    expect(tuneTable([o])).toMatch(/\| moves to 0\.5 \|$/);
  });

  it('leans to a value at least as good on every fold and better on one, when the folds disagree', () => {
    // The shipped value has a false positive in A only: the fold holding A out ties and keeps it.
    const withFp = [file('A', [550, 300]), file('B', [550]), file('C', [550])];
    const o = foldConstant('X', 1, [0.5, 1], [shipped, withFp], corpus);
    expect(o.verdict).toBe('leans');
    expect(o.movesTo).toBe(0.5);
    expect(o.folds.map((f) => f.chosen)).toEqual([1, 0.5, 0.5]);
    // Held out, A is scored at its fold's choice and at the shipped value alike (the same value here).
    expect(o.folds[0]!.heldOutChosen).toEqual(o.folds[0]!.heldOutShipped);
    expect(o.folds[1]!.heldOutFalsePositiveRowsChosen).toBe(0);
  });

  it('calls a value that helps one fold and hurts another a split, and keeps the shipped value', () => {
    // The other value avoids A's false positive but misses B's window.
    const withFp = [file('A', [550, 300]), file('B', [550]), file('C', [550])];
    const other = [file('A', [550]), file('B', []), file('C', [550])];
    const o = foldConstant('X', 1, [1, 2], [withFp, other], corpus);
    expect(o.folds.map((f) => f.chosen)).toEqual([1, 2, 1]);
    expect(o.verdict).toBe('split');
    // Held out, B at the fold's choice (2) lost its window: 0 − 1 = −1 of 2 → 0 normalised; shipped detects it.
    const b = o.folds[1]!;
    expect(b.heldOutChosen!['standard']).toBeCloseTo(0, 9);
    expect(b.heldOutShipped!['standard']).toBeGreaterThan(90);
    expect(tuneTable([o])).toContain('| X | 1 | 1: ');
    expect(tuneTable([o])).toMatch(/\| 1 \/ 2 \/ 1 \| .* \| split \|$/);
  });

  it('refuses a grid without the shipped value or with a run missing', () => {
    expect(() => foldConstant('X', 3, [1, 2], [shipped, shipped], corpus)).toThrow(/lacks the shipped value 3/);
    expect(() => foldConstant('X', 1, [1, 2], [shipped], corpus)).toThrow(/1 runs for 2 values/);
  });

  it('reads --set as tuned constants with finite values, and refuses anything else', () => {
    expect(parseSettings('')).toEqual({});
    expect(parseSettings('REFRACTORY_POINTS=150, SUSTAINED_Z=5.5')).toEqual({ REFRACTORY_POINTS: 150, SUSTAINED_Z: 5.5 });
    expect(() => parseSettings('NOT_A_CONSTANT=1')).toThrow(/does not name a tuned constant/);
    expect(() => parseSettings('SUSTAINED_Z')).toThrow(/does not name a tuned constant/);
    expect(() => parseSettings('SUSTAINED_Z=')).toThrow(/no finite value/);
    expect(() => parseSettings('SUSTAINED_Z=abc')).toThrow(/no finite value/);
  });

  it('reads the command line: rows, constants, threads and paths, and names what it does not know', () => {
    const all = tuneRun([], '/repo', 16);
    expect(all.rows.map((r) => r.row)).toEqual(TUNE_ROWS.map((r) => r.row));
    expect(all.rows.map((r) => r.grid.length)).toEqual(TUNE_ROWS.map((r) => r.grid.length));
    expect(all).toMatchObject({ base: {}, threads: 4, nabDir: '/shared/datasets/nab_dev', out: '/repo/eval/out/tune.json', summary: '/repo/eval/tune.json' });
    expect(tuneRun([], '/repo', 1).threads).toBe(1);
    const stream = tuneRun(['--row', 'shipped:stream', '--only', 'REFRACTORY_POINTS', '--threads', '2', '--set', 'SUSTAINED_Z=6', '--out', '/tmp/t.json', '--datasets', '/d'], '/repo', 2);
    expect(stream.rows).toEqual([{ row: 'shipped:stream', grid: TUNE_ROWS[0]!.grid.filter((g) => g.name === 'REFRACTORY_POINTS') }]);
    expect(stream).toMatchObject({ base: { SUSTAINED_Z: 6 }, threads: 2, nabDir: '/d/nab_dev', out: '/tmp/t.json', summary: undefined });
    // A filtered run never overwrites the committed summary.
    expect(tuneRun(['--set', 'SUSTAINED_Z=6'], '/repo', 2)).toMatchObject({ out: '/repo/eval/out/tune.json', summary: undefined });
    // A constant of one row's grid only: the other row is not run at all.
    const entireOnly = TUNE_ROWS[1]!.grid.find((g) => !TUNE_ROWS[0]!.grid.some((h) => h.name === g.name))!.name;
    expect(tuneRun(['--only', entireOnly], '/repo', 2).rows.map((r) => r.row)).toEqual(['shipped:entire']);
    expect(() => tuneRun(['--row', 'shipped:nope'], '/repo', 2)).toThrow(/--row: shipped:nope \(the rows: shipped:stream, shipped:entire\)/);
    expect(() => tuneRun(['--only', 'NOT_A_CONSTANT'], '/repo', 2)).toThrow(/--only: not in the grids: NOT_A_CONSTANT/);
    expect(() => tuneRun(['--row', 'shipped:stream', '--only', entireOnly], '/repo', 2)).toThrow(/--only: not in the grids/);
    for (const t of ['0', '65', '1.5', 'two']) expect(() => tuneRun(['--threads', t], '/repo', 2)).toThrow(/--threads: .* is not an integer from 1 to 64/);
    expect(() => tuneRun(['--set', 'NOPE=1'], '/repo', 2)).toThrow(/--set: NOPE=1 does not name a tuned constant/);
    expect(() => tuneRun(['--bogus'], '/repo', 2)).toThrow(/bogus/);
  });

  it("every constant of the rows' grids has its shipped value among its candidates, and no row lists one twice", () => {
    expect(TUNE_ROWS.map((r) => r.row)).toEqual(['shipped:stream', 'shipped:entire']);
    for (const { row, grid } of TUNE_ROWS) {
      for (const g of grid) expect(g.values, `${row} ${g.name}`).toContain(detection.TUNING[g.name].value);
      expect(new Set(grid.map((g) => g.name)).size, row).toBe(grid.length);
    }
  });

  it("records the committed run's verdict on every constant it checks in the engine's TUNING table", () => {
    const committed = JSON.parse(readFileSync(new URL('../tune.json', import.meta.url), 'utf8')) as {
      rows: { row: string; constants: Pick<ConstantOutcome, 'name' | 'verdict' | 'movesTo'>[] }[];
    };
    const label: Record<string, string> = { 'shipped:stream': 'row (a)', 'shipped:entire': 'row (c)' };
    expect(committed.rows.map((r) => r.row)).toEqual(TUNE_ROWS.map((r) => r.row));
    for (const r of committed.rows) {
      expect(r.constants.map((c) => c.name)).toEqual(TUNE_ROWS.find((t) => t.row === r.row)!.grid.map((g) => g.name));
      for (const c of r.constants) {
        const said = verdictText(c);
        const folds = (detection.TUNING as Record<string, { folds?: string }>)[c.name]!.folds;
        expect(folds, c.name).toBeDefined();
        expect(folds!.split('; ').some((part) => part.startsWith(`${label[r.row]!}: ${said}`)), `${c.name}: ${folds}`).toBe(true);
      }
    }
  });

  it('runs the engine with a constant changed in a thread of its own, and as shipped without one', async () => {
    const here = detectNab(corpus, shippedDetector(detection as unknown as EngineApi, 'shipped:stream').detector).detections;
    const asShipped = await detectWithOverrides(dir, {}, 'shipped:stream');
    expect(asShipped.map((f) => Array.from(f, (x) => x === 1))).toEqual(here.map((d) => d.detections));
    const count = (flags: readonly Uint8Array[]): number => flags.reduce((n, f) => n + f.reduce((s, x) => s + x, 0), 0);
    expect(count(asShipped)).toBeGreaterThan(0);
    // A band 20 times wider reports fewer rows; this process's engine keeps its own value.
    const wide = await detectWithOverrides(dir, { LAST_POINT_BAND_FACTOR: 20 * detection.TUNING.LAST_POINT_BAND_FACTOR.value }, 'shipped:stream');
    expect(count(wide)).toBeLessThan(count(asShipped));
    expect(detection.TUNING.LAST_POINT_BAND_FACTOR.value).toBe(1.45);
    await expect(detectWithOverrides(dir, { NOT_A_CONSTANT: 1 }, 'shipped:stream')).rejects.toThrow(/no tuned constant NOT_A_CONSTANT/);
    // Row (c) through the same threads: entire-series detection per file, its own constants.
    const entire = detectNab(corpus, shippedDetector(detection as unknown as EngineApi, 'shipped:entire').detector).detections;
    const entireThere = await detectWithOverrides(dir, {}, 'shipped:entire');
    expect(entireThere.map((f) => Array.from(f, (x) => x === 1))).toEqual(entire.map((d) => d.detections));
    const noRoutine = await detectWithOverrides(dir, { ROUTINE_EVENT_COUNT: 1 }, 'shipped:entire');
    expect(noRoutine.map((f) => Array.from(f, (x) => x === 1))).not.toEqual(entire.map((d) => d.detections));
  }, 120_000);
});
