import { describe, expect, it } from 'vitest';
import { seededRandom } from '@adp/detection';
import {
  fitMachineModel,
  initialStreamState,
  judgeMachine,
  machineThreshold,
  scoreMachine,
  streamMachine,
  symmetricEigen,
  MIN_MACHINE_MODEL_ROWS,
  type MachineStreamState,
  type StreamedPoint,
  type StreamEpisode,
} from '../src/index.js';

/** A seeded uniform generator, so every run sees the same data. */
const random = seededRandom;

function gaussian(next: () => number): () => number {
  return () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
}

/** Three channels: two that move together (flow and current), one independent (vibration). */
function machine(points: number, seed: number): { channels: string[]; values: number[][] } {
  const noise = gaussian(random(seed));
  const flow: number[] = [];
  const current: number[] = [];
  const vibration: number[] = [];
  for (let t = 0; t < points; t++) {
    const load = noise();
    flow.push(30 + 2 * load + 0.2 * noise());
    current.push(1 + 0.1 * load + 0.01 * noise());
    vibration.push(0.03 + 0.001 * noise());
  }
  return { channels: ['flow', 'current', 'vibration'], values: [flow, current, vibration] };
}

describe('symmetricEigen', () => {
  it('decomposes a symmetric matrix into orthonormal eigenvectors, values descending', () => {
    const matrix = [
      [4, 1, 0.5],
      [1, 3, 0.2],
      [0.5, 0.2, 1],
    ];
    const { values, vectors } = symmetricEigen(matrix);
    expect(values).toEqual([...values].sort((a, b) => b - a));
    for (let k = 0; k < 3; k++) {
      const v = vectors[k]!;
      // A v = lambda v
      for (let i = 0; i < 3; i++) {
        const av = matrix[i]!.reduce((sum, m, j) => sum + m * v[j]!, 0);
        expect(av).toBeCloseTo(values[k]! * v[i]!, 10);
      }
      expect(v.reduce((sum, x) => sum + x * x, 0)).toBeCloseTo(1, 12);
    }
    expect(values.reduce((a, b) => a + b, 0)).toBeCloseTo(8, 10);
  });
});

describe('fitMachineModel', () => {
  it('refuses channels of different lengths, too few rows, and no channels', () => {
    expect(() => fitMachineModel({ channels: ['a', 'b'], values: [[1, 2, 3], [1, 2]] })).toThrow(/same number/);
    expect(() => fitMachineModel({ channels: ['a'], values: [Array.from({ length: MIN_MACHINE_MODEL_ROWS - 1 }, (_, i) => i)] })).toThrow(/at least/);
    expect(() => fitMachineModel({ channels: [], values: [] })).toThrow(/one value series per channel/);
  });

  it('keeps a constant channel finite (its spread is floored)', () => {
    const healthy = machine(400, 1);
    const model = fitMachineModel({ channels: [...healthy.channels, 'setpoint'], values: [...healthy.values, new Array<number>(400).fill(5)] });
    expect(model.scale.every((s) => Number.isFinite(s) && s > 0)).toBe(true);
    const { score } = scoreMachine(model, [[30], [1], [0.03], [5]]);
    expect(Number.isFinite(score[0])).toBe(true);
  });

  it('calibrates on held-out healthy data: new healthy data is rarely flagged', () => {
    let flaggedShare = 0;
    const seeds = [2, 12, 22, 32];
    for (const seed of seeds) {
      const model = fitMachineModel(machine(400, seed));
      expect(model.calibration.length).toBeGreaterThan(150);
      // As the vendor's margins: the higher the sensitivity, the lower the threshold.
      expect(machineThreshold(model, 99)).toBeLessThan(machineThreshold(model, 90));
      const verdict = judgeMachine(model, machine(2000, seed + 1).values, 95);
      flaggedShare += verdict.isAnomaly.filter(Boolean).length / 2000 / seeds.length;
    }
    // A 400-row baseline estimates its own spread to a few per cent, and a mean of 20 distances is
    // narrow: one baseline in four here reads fresh data 20 % high. On average the share stays low.
    expect(flaggedShare).toBeLessThan(0.12);
  });
});

describe('judgeMachine', () => {
  const model = fitMachineModel(machine(400, 4));

  it('flags a broken correlation that no channel shows alone, for as long as it lasts, and names the channels', () => {
    const judged = machine(600, 5);
    // Flow rises 2 spreads while current stays: each within its own healthy range, together unheard of.
    for (let t = 200; t < 400; t++) judged.values[0]![t]! += 4;
    const verdict = judgeMachine(model, judged.values, 95);
    const inside = verdict.isAnomaly.slice(220, 400).filter(Boolean).length;
    expect(inside).toBeGreaterThan(170);
    expect(verdict.isAnomaly.slice(0, 180).filter(Boolean).length).toBeLessThan(20);
    const episode = verdict.episodes.find((e) => e.start <= 230 && e.end >= 380);
    expect(episode).toBeDefined();
    expect(episode!.closed).toBe(true);
    expect(episode!.channels[0]!.channel).toBe('flow');
    expect(episode!.severity).toBeGreaterThan(0);
    expect(episode!.severity).toBeLessThanOrEqual(1);
    // The flags of a lasting departure are one episode, not one per point.
    expect(verdict.episodes.filter((e) => e.start >= 200 && e.start < 400).length).toBe(1);
  });

  it('leaves a lone spike to the channel judges: it opens no episode', () => {
    const judged = machine(300, 10);
    const without = judgeMachine(model, judged.values, 95);
    judged.values[2]![150] = 0.03 + 0.001 * 40;
    const verdict = judgeMachine(model, judged.values, 95);
    expect(verdict.isAnomaly).toEqual(without.isAnomaly);
    // Held for a while, the same reading is a departure.
    for (let t = 150; t < 200; t++) judged.values[2]![t] = 0.03 + 0.001 * 40;
    expect(judgeMachine(model, judged.values, 95).isAnomaly.slice(165, 200).every(Boolean)).toBe(true);
  });

  it("splits each point's score into channel contributions that add up to it", () => {
    const judged = machine(100, 6);
    judged.values[2]![50] = 0.5;
    const { score, contributions } = scoreMachine(model, judged.values);
    for (let t = 0; t < 100; t++) {
      const sum = contributions.reduce((acc, part) => acc + part[t]!, 0);
      expect(sum).toBeCloseTo(score[t]!, 9);
      expect(contributions.every((part) => part[t]! >= 0)).toBe(true);
    }
  });

  it('reports a departure still under way at the end as an open episode', () => {
    const judged = machine(300, 7);
    for (let t = 250; t < 300; t++) judged.values[2]![t] = 0.05;
    const verdict = judgeMachine(model, judged.values, 95);
    const last = verdict.episodes.at(-1)!;
    expect(last.end).toBe(299);
    expect(last.closed).toBe(false);
    expect(last.channels[0]!.channel).toBe('vibration');
  });

  it('scores a stream in pieces as it scores it whole, given the carry', () => {
    const judged = machine(300, 8);
    const whole = scoreMachine(model, judged.values);
    const first = scoreMachine(model, judged.values.map((v) => v.slice(0, 137)));
    const second = scoreMachine(
      model,
      judged.values.map((v) => v.slice(137)),
      { horizon: 138, previous: { distance: first.distance, parts: first.parts } },
    );
    const joined = [...first.score, ...second.score];
    joined.forEach((value, t) => expect(value).toBeCloseTo(whole.score[t]!, 9));
  });

  it('lets a drifting channel wander further the longer after its baseline', () => {
    const noise = gaussian(random(9));
    let level = 50;
    const temperature: number[] = [];
    const other: number[] = [];
    for (let t = 0; t < 400; t++) {
      level += 0.05 * noise();
      temperature.push(level + 0.01 * noise());
      other.push(noise());
    }
    const drifting = fitMachineModel({ channels: ['temperature', 'other'], values: [temperature, other] });
    expect(drifting.drift[0]![0]).toBeGreaterThan(0);
    expect(drifting.drift[1]![1]).toBe(0);
    expect(drifting.drift[0]![1]).toBe(0);
    const near = scoreMachine(drifting, [[drifting.center[0]! + 0.5], [0]], { horizon: 1 }).distance[0]!;
    const far = scoreMachine(drifting, [[drifting.center[0]! + 0.5], [0]], { horizon: 1000 }).distance[0]!;
    expect(far).toBeLessThan(near / 2);
  });
});

describe('streamMachine', () => {
  const model = fitMachineModel(machine(400, 4));
  const judged = machine(700, 11);
  for (let t = 200; t < 330; t++) judged.values[0]![t]! += 4;
  // A dip: the departure pauses for 8 points, then goes on.
  for (let t = 260; t < 268; t++) judged.values[0]![t]! -= 4;
  for (let t = 500; t < 560; t++) judged.values[2]![t] = 0.05;

  it('judges a stream in batches of any size as one request is judged: flags, severities, episodes', () => {
    const whole = judgeMachine(model, judged.values, 95);
    expect(whole.episodes.length).toBeGreaterThanOrEqual(2);
    for (const sizes of [[700], [1, 19, 37, 200, 443], [5], [64, 64, 572]]) {
      let state = initialStreamState(model);
      const points: StreamedPoint[] = [];
      const opened: StreamEpisode[] = [];
      const closed: StreamEpisode[] = [];
      let at = 0;
      let size = 0;
      while (at < 700) {
        const take = Math.min(sizes[size % sizes.length]!, 700 - at);
        size++;
        // Through JSON, as a checkpoint keeps it.
        state = JSON.parse(JSON.stringify(state)) as MachineStreamState;
        const step = streamMachine(model, state, judged.values.map((v) => v.slice(at, at + take)), 95);
        points.push(...step.points);
        opened.push(...step.opened.map(({ episode }) => episode));
        closed.push(...step.closed.map(({ episode }) => episode));
        state = step.state;
        at += take;
      }
      expect(points.map((p) => p.isAnomaly)).toEqual(whole.isAnomaly);
      points.forEach((p, t) => {
        expect(p.score).toBeCloseTo(whole.score[t]!, 9);
        expect(p.severity).toBeCloseTo(whole.severity[t]!, 9);
      });
      const closedInWhole = whole.episodes.filter((e) => e.closed);
      expect(closed.map(({ start, end, peak }) => [start, end, peak])).toEqual(closedInWhole.map(({ start, end, peak }) => [start, end, peak]));
      closed.forEach((episode, k) => {
        expect(episode.channels.map((c) => c.channel)).toEqual(closedInWhole[k]!.channels.map((c) => c.channel));
        episode.channels.forEach((c, i) => expect(c.share).toBeCloseTo(closedInWhole[k]!.channels[i]!.share, 9));
      });
      expect(opened.map((e) => e.start)).toEqual(whole.episodes.map((e) => e.start));
      // The episode with the dip is one episode, opened once and closed once.
      expect(closed.filter((e) => e.start <= 230 && e.end >= 300)).toHaveLength(1);
    }
  });

  it('keeps at most a window of distances in its state', () => {
    const step = streamMachine(model, initialStreamState(model), judged.values.map((v) => v.slice(0, 300)), 95);
    expect(step.state.judged).toBe(300);
    expect(step.state.distances).toHaveLength(model.smoothingPoints - 1);
    expect(step.state.parts.every((part) => part.length === model.smoothingPoints - 1)).toBe(true);
  });
});
