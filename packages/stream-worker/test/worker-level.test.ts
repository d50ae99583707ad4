// A baselined series whose level moves and stays moved: in the stream, as in POST /v1/detect, the
// flag that reports the departure holds while the baseline's level model finds the series away
// (level-hold.ts), ACTIVE, and a worker restarted in the middle of the departure holds exactly as
// an uninterrupted one (the level model's stream travels in the window's checkpoint).
import { seededRandom, shapeReferenceOf } from '@adp/detection';
import type { BaselineRecord } from '@adp/store';
import type { ResultRow } from '@adp/streaming';
import { describe, expect, it } from 'vitest';
import { startWorker } from '../src/index.js';
import { allRows, baselineStore, embeddedPlatform, fakeModel, statsBaseline, telemetryMessage, testConfig } from './helpers.js';

const T0 = 1_700_000_000_000;
const STEP = 60_000;
const POINTS = 700;
const SHIFT_FROM = 300;
const SHIFT_TO = 450;
const CYCLE = 48;
const RESTART_AT = 380;

/** A 48-point cycle with a little noise; +6 from SHIFT_FROM to SHIFT_TO in the judged stretch. */
function series(length: number, seed: number, offset: number, shifted: boolean): number[] {
  const random = seededRandom(seed);
  return Array.from({ length }, (_, i) => {
    const t = i + offset;
    const base = 50 + 4 * Math.sin((2 * Math.PI * t) / CYCLE) + (random() - 0.5);
    return shifted && i >= SHIFT_FROM && i < SHIFT_TO ? base + 6 : base;
  });
}

const flagged = (rows: readonly ResultRow[]): number[] => rows.flatMap((row, i) => (row.isAnomaly ? [i] : []));

describe('a baselined series whose level moves, in streaming', () => {
  it('stays flagged while its level stays away, ACTIVE, and the same across a restart', async () => {
    const healthy = series(1000, 1, 0, false);
    const shapeReference = shapeReferenceOf(healthy);
    expect(shapeReference?.length).toBe(CYCLE);
    const record = (machineId: string, withShapes: boolean): BaselineRecord => ({
      ...statsBaseline(machineId, 50, 5),
      shapeReference: withShapes ? shapeReference : null,
    });
    const store = baselineStore(
      new Map(['pump', 'pump-restarted', 'pump-no-level'].map((id) => [id, record(id, id !== 'pump-no-level')])),
    );
    const values = series(POINTS, 2, 1000, true);
    const message = (machine: string, i: number) => telemetryMessage({ machine_id: machine, timestamp: T0 + i * STEP, value: values[i]! });
    const platform = await embeddedPlatform();
    const producer = await platform.bus.producer();
    const start = () => startWorker({ ...platform, store, loadModel: async () => fakeModel(), config: testConfig() });

    const first = await start();
    await producer.send('telemetry', [
      ...values.map((_, i) => message('pump', i)),
      ...values.map((_, i) => message('pump-no-level', i)),
      ...values.slice(0, RESTART_AT).map((_, i) => message('pump-restarted', i)),
    ]);
    await expect.poll(() => first.counters().rows, { timeout: 120_000 }).toBe(2 * POINTS + RESTART_AT);
    await first.stop();
    const second = await start();
    await producer.send('telemetry', values.slice(RESTART_AT).map((_, k) => message('pump-restarted', RESTART_AT + k)));
    await expect.poll(() => second.counters().rows, { timeout: 120_000 }).toBe(POINTS - RESTART_AT);
    await second.stop();

    const [pump, restarted, noLevel] = await Promise.all(['pump', 'pump-restarted', 'pump-no-level'].map((id) => allRows(platform.results, id)));
    // The departure is reported within a cycle of its start; once the level model's trailing
    // window finds it (within a window of the report) it is flagged without a break until that
    // window has left it (at most a window after its end).
    const inShift = flagged(pump!).filter((i) => i >= SHIFT_FROM && i < SHIFT_TO + CYCLE);
    const reported = inShift[0]!;
    expect(reported).toBeLessThan(SHIFT_FROM + CYCLE);
    const heldFrom = inShift[1]!;
    expect(heldFrom - reported).toBeLessThanOrEqual(CYCLE);
    const last = inShift.at(-1)!;
    expect(last).toBeGreaterThanOrEqual(SHIFT_TO - 1);
    expect(inShift.slice(1)).toEqual(Array.from({ length: last - heldFrom + 1 }, (_, k) => heldFrom + k));
    for (let i = heldFrom; i <= last; i++) {
      const row = pump![i]!;
      // Held: at most as severe as the flag that reported it, and never HEALTHY.
      expect(row.severity).toBeGreaterThan(0);
      expect(row.severity).toBeLessThanOrEqual(pump![reported]!.severity);
      expect(row.regime).not.toBe('HEALTHY');
      expect(row.regime).not.toBe('UNKNOWN');
      expect(row.isPositiveAnomaly).toBe(row.value > row.expectedValue);
    }
    // Healthy stretches before and well after it are not held.
    expect(flagged(pump!).filter((i) => i >= SHIFT_TO + CYCLE).length).toBeLessThan(5);
    // Without a level model (a baseline without shapes) the departure is flagged at a few points only.
    expect(flagged(noLevel!).filter((i) => i >= SHIFT_FROM && i < SHIFT_TO).length).toBeLessThan(10);
    // A worker restarted in the middle of the departure holds it as the uninterrupted one (the
    // engine's sums may differ in their last bits with other batches).
    expect(restarted!.map((row) => [row.isAnomaly, row.regime])).toEqual(pump!.map((row) => [row.isAnomaly, row.regime]));
    restarted!.forEach((row, i) => {
      for (const key of ['severity', 'upperMargin', 'lowerMargin'] as const) expect(row[key]).toBeCloseTo(pump![i]![key], 9);
    });
  });
});
