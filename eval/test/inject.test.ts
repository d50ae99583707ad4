import { describe, expect, it } from 'vitest';
import * as engine from '@adp/detection';
import type { EngineApi } from '../src/engine.js';
import { DAY, injectedEvents, injectionTable, runInjections, seasonalCounts } from '../src/inject.js';

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

  it('streams each event through the default engine row and reports the first flag after its start', () => {
    const spike = injectedEvents().find((e) => e.name.startsWith('spike at night'))!;
    const quiet = injectedEvents().find((e) => e.name === 'half for 2 days')!;
    const dead = injectedEvents().find((e) => e.name === 'zero for 150 points, at night')!;
    const results = runInjections(engine as unknown as EngineApi, 31, [spike, { ...quiet, at: 30 * DAY, length: DAY }, dead]);
    expect(results.map((r) => r.name)).toEqual(['none (the clean series)', spike.name, quiet.name, dead.name]);
    // The clean series raises nothing; the night spike is reported on its own row and alone.
    expect(results[0]).toEqual({ name: 'none (the clean series)', at: 0, delay: null, flags: 0 });
    expect(results[1]).toEqual({ name: spike.name, at: spike.at, delay: 0, flags: 1 });
    // Half the level for a day is the gap eval/README describes: nothing within it.
    expect(results[2]!.delay).toBeNull();
    // A feed dead at night: the stuck-value alarm at its twelfth zero, the band where it returns.
    expect(results[3]).toEqual({ name: dead.name, at: dead.at, delay: engine.STUCK_POINTS - 1, flags: 2 });
    expect(injectionTable(results).split('\n')[3]).toBe(`| ${spike.name} | 0 | 1 |`);
  });
});
