import { describe, expect, it } from 'vitest';
import { seededRandom } from '@adp/detection';
import { baselineLevelModel, fitLevelModel, judgeMachine, levelCarry, MACHINE_MODEL_TUNING, NO_LEVEL_HOLD, streamLevelCarry, type LevelHoldState, type LevelVerdict } from '../src/index.js';
import { trimmedTrailingMeans } from '../src/model.js';

/** The trimmed means by the plain rule: sort each window, drop its largest tenth, average the rest. */
function referenceMeans(distance: Float64Array, parts: Float64Array[], points: number, prefix?: { distance: number[]; parts: number[][] }) {
  const carried = prefix ? Math.min(points - 1, prefix.distance.length) : 0;
  const all = [...(prefix?.distance.slice(prefix.distance.length - carried) ?? []), ...distance];
  const allParts = parts.map((part, c) => [...(prefix?.parts[c]?.slice((prefix.parts[c]?.length ?? 0) - carried) ?? []), ...part]);
  const score: number[] = [];
  const contributions: number[][] = parts.map(() => []);
  for (let i = carried; i < all.length; i++) {
    const window = Array.from({ length: Math.min(points, i + 1) }, (_, k) => i - Math.min(points, i + 1) + 1 + k);
    const trim = Math.floor(window.length * MACHINE_MODEL_TUNING.trimmedShare);
    const kept = trim === 0 ? window : [...window].sort((x, y) => all[x]! - all[y]! || x - y).slice(0, window.length - trim);
    score.push(kept.reduce((sum, k) => sum + all[k]!, 0) / kept.length);
    allParts.forEach((part, c) => contributions[c]!.push(kept.reduce((sum, k) => sum + part[k]!, 0) / kept.length));
  }
  return { score, contributions };
}

describe('trimmed trailing means', () => {
  it('equal the sort-each-window rule exactly, ties and carried prefixes included', () => {
    const next = seededRandom(11);
    for (let trial = 0; trial < 60; trial++) {
      const n = 1 + Math.floor(next() * 300);
      const points = 1 + Math.floor(next() * 60);
      // Small integers make ties common; the order among equals decides which one is trimmed.
      const value = (): number => (trial % 2 === 0 ? Math.floor(next() * 5) : next() * 10);
      const channels = 1 + Math.floor(next() * 3);
      const parts = Array.from({ length: channels }, () => Float64Array.from({ length: n }, value));
      // One channel's part is its whole distance (a level model's): the same means, taken once.
      const distance = channels === 1 ? parts[0]!.slice() : Float64Array.from({ length: n }, (_, i) => parts.reduce((sum, part) => sum + part[i]!, 0));
      const prefixLength = trial % 3 === 0 ? 0 : Math.floor(next() * 80);
      const prefixParts = Array.from({ length: channels }, () => Array.from({ length: prefixLength }, value));
      const prefix = prefixLength === 0 ? undefined : { distance: prefixParts[0]!.map((_, i) => prefixParts.reduce((s, p) => s + p[i]!, 0)), parts: prefixParts };
      const fast = trimmedTrailingMeans(distance, parts, points, prefix);
      const plain = referenceMeans(distance, parts, points, prefix);
      expect(Array.from(fast.score)).toEqual(plain.score);
      fast.contributions.forEach((part, c) => expect(Array.from(part)).toEqual(plain.contributions[c]));
    }
  });
});

describe('level model', () => {
  const next = seededRandom(5);
  const noise = (): number => (next() + next() + next() - 1.5) * 0.4;
  const cyclic = (i: number): number => 10 + 3 * Math.sin((2 * Math.PI * i) / 50) + noise();

  it('averages over a cycle, needs ten of them, and is null for too few or non-finite values', () => {
    const healthy = Array.from({ length: 2000 }, (_, i) => cyclic(i));
    expect(fitLevelModel(healthy)?.smoothingPoints).toBe(MACHINE_MODEL_TUNING.smoothingPoints);
    expect(fitLevelModel(healthy, 50)?.smoothingPoints).toBe(50);
    expect(fitLevelModel(healthy, 5)?.smoothingPoints).toBe(MACHINE_MODEL_TUNING.smoothingPoints);
    // At least ten cycles, so the threshold sees whole windows of held-out fifths.
    expect(fitLevelModel(healthy, 200)?.smoothingPoints).toBe(200);
    expect(fitLevelModel(healthy, 201)).toBeNull();
    expect(fitLevelModel(healthy.slice(0, 49))).toBeNull();
    expect(fitLevelModel([...healthy.slice(0, 100), Number.NaN])).toBeNull();
  });

  it('finds a cyclic series out for as long as its level stays shifted, with a cycle-long window', () => {
    const healthy = Array.from({ length: 2000 }, (_, i) => cyclic(i));
    const judged = Array.from({ length: 1000 }, (_, i) => cyclic(2000 + i) + (i >= 400 && i < 700 ? 4 : 0));
    const outOf = (cycle: number): number[] => {
      const verdict = judgeMachine(fitLevelModel(healthy, cycle)!, [judged], 95);
      return verdict.isAnomaly.flatMap((flag, i) => (flag ? [i] : []));
    };
    const runs = (out: number[]): number[][] => out.reduce<number[][]>((acc, t) => (acc.at(-1)?.at(-1) === t - 1 ? acc.at(-1)!.push(t) : acc.push([t]), acc), []);
    // Over a cycle: one run from within a window of the shift to within a window after it.
    const shifted = runs(outOf(50)).filter((run) => run[0]! < 700 && run.at(-1)! >= 400);
    expect(shifted).toHaveLength(1);
    expect(shifted[0]![0]).toBeGreaterThanOrEqual(400);
    expect(shifted[0]![0]).toBeLessThan(450);
    expect(shifted[0]!.at(-1)).toBeGreaterThanOrEqual(700);
    expect(shifted[0]!.at(-1)).toBeLessThan(750);
    // A window shorter than the cycle reads the shifted troughs as healthy: the departure comes and goes.
    expect(runs(outOf(0)).filter((run) => run[0]! < 700 && run.at(-1)! >= 400).length).toBeGreaterThan(3);
  });
});

describe('levelCarry', () => {
  const level = (out: string, severity = 0.5): LevelVerdict => ({
    isAnomaly: [...out].map((c) => c === '#'),
    severity: [...out].map((c) => (c === '#' ? severity : 0)),
    window: 3,
  });
  const flagsOf = (text: string): boolean[] => [...text].map((c) => c === 'x');

  it('carries a flag through the level run that reaches into its window, never above the flag', () => {
    //                 0123456789012
    const flags = flagsOf('..x..........');
    const out = level('....#####....', 0.9);
    const carried = levelCarry(flags, flags.map((f) => (f ? 0.6 : 0)), out);
    // Point 3, between the flag and the run the trailing score confirms late, holds too.
    expect(Array.from(carried)).toEqual([0, 0, 0, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0, 0, 0, 0]);
  });

  it('carries at the level severity where it is the lower, and not at all when the run starts past the window', () => {
    const flags = flagsOf('x............');
    expect(Array.from(levelCarry(flags, flags.map((f) => (f ? 0.8 : 0)), level('..###........', 0.3)))).toEqual([0, 0.3, 0.3, 0.3, 0.3, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect(Array.from(levelCarry(flags, flags.map((f) => (f ? 0.8 : 0)), level('.....###.....', 0.3)))).toEqual(new Array(13).fill(0));
  });

  it('carries over a run already under way at the flag from its start, and never onto flagged points', () => {
    const flags = flagsOf('....x..x.....');
    const carried = levelCarry(flags, flags.map((f) => (f ? 0.4 : 0)), level('..#######....', 0.7));
    expect(Array.from(carried)).toEqual([0, 0, 0.4, 0.4, 0, 0.4, 0.4, 0, 0.4, 0, 0, 0, 0]);
  });
});

describe('streamLevelCarry', () => {
  /** levelCarry forward of each flag only (what a stream can still flag), by the plain rule. */
  function forwardCarry(flags: boolean[], severity: number[], level: LevelVerdict): number[] {
    const n = flags.length;
    const carried = new Array<number>(n).fill(0);
    for (let i = 0; i < n; i++) {
      if (!flags[i]) continue;
      const j = Array.from({ length: level.window + 1 }, (_, d) => i + d).find((k) => k < n && level.isAnomaly[k]);
      if (j === undefined) continue;
      for (let k = Math.max(j, i + 1); k < n && level.isAnomaly[k]; k++) {
        if (!flags[k]) carried[k] = Math.max(carried[k]!, Math.min(level.severity[k]!, severity[i]!));
      }
    }
    return carried;
  }

  it('holds as levelCarry does after each flag, the same whatever the batches', () => {
    const next = seededRandom(17);
    for (let trial = 0; trial < 200; trial++) {
      const n = 1 + Math.floor(next() * 120);
      const window = 1 + Math.floor(next() * 12);
      // Runs of out points and sparse flags, severities in (0, 1].
      let out = next() < 0.3;
      const isAnomaly = Array.from({ length: n }, () => (next() < 0.15 ? (out = !out) : out));
      const flags = Array.from({ length: n }, () => next() < 0.08);
      const severity = flags.map((flag) => (flag ? 0.05 + 0.95 * next() : 0));
      const level: LevelVerdict = { isAnomaly, severity: isAnomaly.map((o) => (o ? 0.05 + 0.95 * next() : 0)), window };
      const expected = forwardCarry(flags, severity, level);
      // Whole, then in random batches with the state carried (through JSON, as a checkpoint would).
      expect(Array.from(streamLevelCarry(flags, severity, level, NO_LEVEL_HOLD, 0).carried)).toEqual(expected);
      let state: LevelHoldState = NO_LEVEL_HOLD;
      const streamed: number[] = [];
      for (let from = 0; from < n; ) {
        const to = Math.min(n, from + 1 + Math.floor(next() * 15));
        const part = (xs: readonly (number | boolean)[]) => xs.slice(from, to);
        const step = streamLevelCarry(part(flags) as boolean[], part(severity) as number[], { isAnomaly: part(isAnomaly) as boolean[], severity: part(level.severity) as number[], window }, state, from + 1000);
        streamed.push(...step.carried);
        state = JSON.parse(JSON.stringify(step.state)) as LevelHoldState;
        // The pending flags stay few: later ones reach further, earlier ones are more severe.
        expect(state.pending.every(([until, cap], k) => k === 0 || (until > state.pending[k - 1]![0] && cap < state.pending[k - 1]![1]))).toBe(true);
        from = to;
      }
      // The numbering's origin does not matter (1000 above).
      expect(streamed).toEqual(expected);
    }
  });

  it('agrees with levelCarry wherever the flag came first', () => {
    const flags = [...'..x..........'].map((c) => c === 'x');
    const out: LevelVerdict = { isAnomaly: [...'....#####....'].map((c) => c === '#'), severity: new Array(13).fill(0.9), window: 3 };
    const severity = flags.map((f) => (f ? 0.6 : 0));
    const batch = Array.from(levelCarry(flags, severity, out));
    const stream = Array.from(streamLevelCarry(flags, severity, out, NO_LEVEL_HOLD, 0).carried);
    // The stream has already stored point 3 when the run starts at 4: from there on they agree.
    expect(stream).toEqual(batch.map((x, i) => (i === 3 ? 0 : x)));
  });
});

describe('baselineLevelModel', () => {
  it('fits a single series baseline with shapes, never a multichannel one', () => {
    const next = seededRandom(3);
    const values = Array.from({ length: 1000 }, () => next());
    expect(baselineLevelModel({ shapeReference: { values, length: 50 } })?.smoothingPoints).toBe(50);
    expect(baselineLevelModel({ channels: ['a', 'b'], shapeReference: { values, length: 50 } })).toBeNull();
    expect(baselineLevelModel({ channels: [], shapeReference: null })).toBeNull();
  });
});
