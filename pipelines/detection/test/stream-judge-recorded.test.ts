// The incremental judge against its recorded behaviour: every flag, and the numbers at every
// RECORD_EVERY-th point and their sums over all points, of seeded series through the worker's
// configurations, as the judge gave them when the fixture was recorded. A change made for speed
// must keep them (flags exactly, numbers within RELATIVE_TOLERANCE); a change meant to alter
// verdicts re-records the fixture and says why in its commit:
//
//   RECORD_STREAM_JUDGE=1 npx vitest run pipelines/detection/test/stream-judge-recorded.test.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { judgeStream, judgeStreamFollowing, type LastResult, type StreamJudgeOptions } from '../src/index.js';
import { gaussian, noiseSeries, sineSeries } from './helpers.js';

const FIXTURE = new URL('./fixtures/stream-judge-recorded.json', import.meta.url);
const RECORD_EVERY = 25;
const RELATIVE_TOLERANCE = 1e-9;

/** Series with the events the judge must keep: spikes, dips, level shifts, a stuck run, ties, gaps. */
function series(): Record<string, number[]> {
  const cycle = sineSeries(3000, { period: 48, amplitude: 5, noise: 0.4, seed: 41 });
  for (const [at, by] of [[1400, 9], [1900, -8], [2400, 7]] as const) cycle[at] = cycle[at]! + by;
  for (let i = 2600; i < 3000; i++) cycle[i] = cycle[i]! + 6;
  const daily = sineSeries(3200, { period: 288, amplitude: 20, noise: 2, seed: 42 });
  for (let i = 2200; i < 3200; i++) daily[i] = daily[i]! + 25;
  daily[1700] = daily[1700]! - 18;
  const noise = noiseSeries(2500, 43, 50, 2);
  for (let i = 1500; i < 1560; i++) noise[i] = 51;
  noise[2000] = noise[2000]! + 14;
  const draw = gaussian(44);
  const counts = Array.from({ length: 2500 }, (_, i) => (i > 1200 && i < 1400 ? 3 : Math.round(5 + 3 * Math.sin(i / 10) + 2 * draw())));
  const gaps = sineSeries(2000, { period: 60, amplitude: 4, noise: 1, seed: 45 }).map((x, i) => (i % 97 === 13 ? Number.NaN : x));
  return { cycle, daily, noise, counts, gaps };
}

const CONFIGS: Record<string, (values: number[]) => LastResult[]> = {
  /** The worker's judge: the following judge at its defaults. */
  following: (values) => judgeStreamFollowing(values, { windowPoints: 720, memoryPoints: 8640, sensitivity: 95, maxAnomalyRatio: 0.25 }),
  /** The fixed-window judge at another window and sensitivity. */
  fixed: (values) => judgeStream(values, { windowPoints: 1441, sensitivity: 80, maxAnomalyRatio: 0.25 }),
  /** A client's period and a past range. */
  period: (values) => judgeStream(values, { windowPoints: 300, period: 48, memoryPoints: 2000, sensitivity: 99, maxAnomalyRatio: 0.25 } satisfies StreamJudgeOptions),
};

interface Recorded {
  /** Flagged points: +i above the band, −i − 1 below. */
  readonly flags: number[];
  /** The period of each point, run-length encoded as [period, count] pairs. */
  readonly periods: number[];
  /** expectedValue, upperMargin, lowerMargin, severity at every RECORD_EVERY-th point. */
  readonly sampled: number[];
  /** Their sums over every point (NaN-free points). */
  readonly sums: number[];
}

function record(results: readonly LastResult[]): Recorded {
  const flags: number[] = [];
  const periods: number[] = [];
  const sampled: number[] = [];
  const sums = [0, 0, 0, 0];
  results.forEach((r, i) => {
    if (r.isAnomaly) flags.push(r.isNegativeAnomaly ? -i - 1 : i);
    if (periods.length > 0 && periods[periods.length - 2] === r.period) periods[periods.length - 1]!++;
    else periods.push(r.period, 1);
    const numbers = [r.expectedValue, r.upperMargin, r.lowerMargin, r.severity];
    if (i % RECORD_EVERY === 0) sampled.push(...numbers);
    numbers.forEach((x, k) => {
      if (Number.isFinite(x)) sums[k]! += x;
    });
  });
  return { flags, periods, sampled, sums };
}

function close(actual: readonly number[], expected: readonly number[]): boolean {
  return (
    actual.length === expected.length &&
    actual.every((x, i) => {
      const y = expected[i]!;
      if (Object.is(x, y) || (Number.isNaN(x) && Number.isNaN(y))) return true;
      return Math.abs(x - y) <= RELATIVE_TOLERANCE * Math.max(Math.abs(x), Math.abs(y));
    })
  );
}

describe('the incremental judge against its recorded behaviour', () => {
  const all = series();
  const actual: Record<string, Recorded> = {};
  for (const [config, run] of Object.entries(CONFIGS)) {
    for (const [name, values] of Object.entries(all)) actual[`${config}/${name}`] = record(run(values));
  }
  if (process.env['RECORD_STREAM_JUDGE'] === '1') {
    // JSON has no NaN: the sampled numbers of unjudged points are written as null.
    writeFileSync(FIXTURE, `${JSON.stringify(actual, null, 1)}\n`);
  }
  const expected = JSON.parse(readFileSync(FIXTURE, 'utf8'), (_key, value: unknown) => (value === null ? Number.NaN : value)) as Record<
    string,
    Recorded
  >;

  it('records every configuration and series', () => {
    expect(Object.keys(actual).sort()).toEqual(Object.keys(expected).sort());
    // The fixture has something to guard: flags in every configuration.
    for (const config of Object.keys(CONFIGS)) {
      expect(Object.entries(expected).filter(([key, r]) => key.startsWith(`${config}/`) && r.flags.length > 0).length).toBeGreaterThan(0);
    }
  });

  for (const key of Object.keys(actual)) {
    it(`${key}: the same flags and periods, numbers within ${RELATIVE_TOLERANCE} of themselves`, () => {
      const a = actual[key]!;
      const e = expected[key]!;
      expect(a.flags).toEqual(e.flags);
      expect(a.periods).toEqual(e.periods);
      expect(close(a.sampled, e.sampled), 'sampled numbers').toBe(true);
      expect(close(a.sums, e.sums), 'sums').toBe(true);
    });
  }
});
