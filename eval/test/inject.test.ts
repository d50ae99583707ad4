import { describe, expect, it } from 'vitest';
import * as engine from '@adp/detection';
import type { EngineApi } from '../src/engine.js';
import {
  BATCH_EDGE_ROWS,
  BATCH_POINTS,
  batchOutcome,
  counterSuite,
  DAY,
  injectedEvents,
  injectionTable,
  machineSuite,
  MACHINE_POINTS,
  runInjections,
  seasonalCounts,
  seasonalSuite,
  type BatchApi,
} from '../src/inject.js';

describe('injected outages on a synthetic seasonal series', () => {
  it('builds the same series on every run: a daily cycle from 20 to 80, half as high at weekends', () => {
    const a = seasonalCounts(14);
    expect(a).toEqual(seasonalCounts(14));
    expect(a).not.toEqual(seasonalCounts(14, 12));
    expect(a.length).toBe(14 * DAY);
    const mean = (from: number, to: number): number => a.slice(from, to).reduce((s, v) => s + v, 0) / (to - from);
    // Noon of a Wednesday against noon of a Saturday (the series starts on a Monday), and nights.
    expect(mean(2 * DAY + 132, 2 * DAY + 156)).toBeGreaterThan(70);
    expect(mean(5 * DAY + 132, 5 * DAY + 156)).toBeGreaterThan(35);
    expect(mean(5 * DAY + 132, 5 * DAY + 156)).toBeLessThan(55);
    expect(mean(2 * DAY, 2 * DAY + 60)).toBeLessThan(25);
    expect(Math.min(...a)).toBeGreaterThanOrEqual(0);
  });

  it("streams each event through what ships (row (a)) and reports the first flag after its start", () => {
    const spike = injectedEvents().find((e) => e.name.startsWith('spike at night'))!;
    const quiet = injectedEvents().find((e) => e.name === 'half for 2 days')!;
    const dead = injectedEvents().find((e) => e.name === 'zero for 150 points, at night')!;
    const results = runInjections(engine as unknown as EngineApi, {
      ...seasonalSuite(31),
      events: [spike, { ...quiet, at: 30 * DAY, length: DAY }, dead],
    });
    expect(results.map((r) => r.name)).toEqual(['none (the clean series)', spike.name, quiet.name, dead.name]);
    // The clean series raises no flag in 31 days; the night spike is reported on its own row and
    // is the one flag there.
    expect(results[0]).toEqual({ name: 'none (the clean series)', at: 0, delay: null, flags: 0 });
    expect(results[1]).toEqual({ name: spike.name, at: spike.at, delay: 0, flags: 1 });
    // Half the level for a day looks like a weekend day to a window of four days: nothing within it.
    expect(results[2]!.delay).toBeNull();
    // A feed dead at night: the stuck-value alarm at its twelfth zero, the band where it returns.
    expect(results[3]).toEqual({ name: dead.name, at: dead.at, delay: engine.STUCK_POINTS - 1, flags: 2 });
    expect(injectionTable(results).split('\n')[3]).toBe(`| ${spike.name} | 0 | 1 |`);
  });

  it('builds the machine suites: a continuous temperature and a whole-number CPU percentage', () => {
    const machine = machineSuite();
    const counter = counterSuite();
    expect(machineSuite().clean).toEqual(machine.clean);
    for (const suite of [machine, counter]) expect(suite.clean.length).toBe(MACHINE_POINTS);
    // The temperature never repeats a value; the percentage does, and stays within 0..100.
    const repeats = (x: readonly number[]): number => x.filter((v, i) => i > 0 && v === x[i - 1]).length;
    expect(repeats(machine.clean)).toBe(0);
    expect(repeats(counter.clean)).toBeGreaterThan(100);
    expect(counter.clean.every((v) => Number.isInteger(v) && v >= 0 && v <= 100)).toBe(true);
    // Events see the clean value and their offset: the drift ends 4 up, the hang repeats the reading before it.
    const drift = machine.events.find((e) => e.name.startsWith('drift'))!;
    expect(drift.apply(60, drift.length - 1)).toBeCloseTo(64, 12);
    const hang = machine.events.find((e) => e.name.startsWith('frozen'))!;
    expect(hang.apply(99, 7)).toBe(machine.clean[hang.at - 1]);
  });

  it('counts the batch endpoints\' flags within an event and changepoints at its edges, over the last 8,640 rows', () => {
    // A fake pair of endpoints: flags and changes at fixed request positions, and what they were sent.
    const sent: { length: number; first: number | null; granularity: string; customInterval: number }[] = [];
    const fake = (positions: readonly number[]): BatchApi => ({
      detectEntireSeries: (input) => {
        sent.push({ length: input.values.length, first: input.timestampsMs?.[0] ?? null, granularity: input.granularity, customInterval: input.customInterval });
        return { isAnomaly: input.values.map((_, i) => positions.includes(i)) };
      },
      detectChangePointSeries: (input) => ({ isChangePoint: input.values.map((_, i) => positions.includes(i)) }),
    });
    const values = new Array<number>(BATCH_POINTS + 1000).fill(1);
    // Request row i is series row 1000 + i; the event is series rows 5000..5099.
    const at = 5000;
    const positions = [at - 1000 - 1, at - 1000, at - 1000 + 50, at - 1000 + 99, at - 1000 + 100 + BATCH_EDGE_ROWS, at - 1000 + 100 + BATCH_EDGE_ROWS + 1];
    expect(batchOutcome(fake(positions), values, 300_000, at, 100)).toEqual({ flagged: 3, changes: 4 });
    expect(sent[0]).toEqual({ length: BATCH_POINTS, first: 1000 * 300_000, granularity: 'minutely', customInterval: 5 });
    // Length 0 (the clean series): everything in the request counts.
    expect(batchOutcome(fake(positions), values, 60_000, 0, 0)).toEqual({ flagged: 6, changes: 6 });
    expect(sent[1]).toMatchObject({ granularity: 'minutely', customInterval: 1 });
  });

  it('reports a hung temperature sensor by the stuck-value alarm, and not a hung whole-number counter', () => {
    const machine = machineSuite();
    const hang = machine.events.find((e) => e.name.startsWith('frozen'))!;
    const [clean, hung] = runInjections(engine as unknown as EngineApi, { ...machine, events: [hang] });
    // The reading before the event starts the run: its twelfth value is the event's eleventh row.
    expect(hung!.delay).toBe(engine.STUCK_POINTS - 2);
    expect(hung!.flags).toBe(clean!.flags + 1);
    // Whole numbers repeat now and then, so a run inside their range is not news.
    const counter = counterSuite();
    const [, frozen] = runInjections(engine as unknown as EngineApi, { ...counter, events: [counter.events[0]!] });
    expect(frozen!.delay).toBeNull();
  });
});
