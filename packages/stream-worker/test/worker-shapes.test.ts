// A baselined series' streaming verdict with the real model: the baseline's shapes join the
// engine's judgement (learned-verdict.ts), so a shape the machine never showed is flagged even
// when every value stays within its usual range; a series without a baseline is judged as before.
import { seededRandom, shapeReferenceOf } from '@adp/detection';
import { computeEnergyStats, createModelRuntime, robustNormalisation, WINDOW_POINTS, type LoadedModelRuntime } from '@adp/model';
import type { BaselineRecord } from '@adp/store';
import type { ResultRow } from '@adp/streaming';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorker } from '../src/index.js';
import { judgeNewPoints } from '../src/new-points-judge.js';
import { allRows, baselineStore, embeddedPlatform, statsBaseline, telemetryMessage, testConfig } from './helpers.js';

const T0 = 1_700_000_000_000;
const STEP = 60_000;
const POINTS = 600;
/** The stretch whose shape changes (two cycles of 48 points from 300), and the rows that may report it. */
const CHANGE_FROM = 300;
const CHANGE_TO = 396;
const inChange = (i: number): boolean => i >= CHANGE_FROM - 20 && i < CHANGE_TO + 24;

function gaussian(random: () => number): number {
  const u = Math.max(random(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

/** A machine's wave: a cycle of 48 points with a harmonic, and a little noise. */
function machineSignal(length: number, seed: number, offset: number): number[] {
  const random = seededRandom(seed);
  return Array.from({ length }, (_, i) => {
    const t = i + offset;
    return 50 + 8 * Math.sin((2 * Math.PI * t) / 48) + 3 * Math.sin((4 * Math.PI * t) / 48 + 1) + 0.4 * gaussian(random);
  });
}

/**
 * For two cycles the harmonic fades smoothly out and back (3 → 0 → 3): every value stays within
 * the machine's usual range, with no step, but the cycles' shape is one the baseline never had.
 */
function changedShape(): number[] {
  return machineSignal(POINTS, 3, 1000).map((value, i) => {
    if (i < CHANGE_FROM || i >= CHANGE_TO) return value;
    const harmonic = Math.sin((4 * Math.PI * (i + 1000)) / 48 + 1);
    return value - 1.5 * harmonic + 1.5 * Math.cos((2 * Math.PI * (i - CHANGE_FROM)) / 96) * harmonic;
  });
}

const flags = (rows: readonly ResultRow[]): number[] => rows.flatMap((row, i) => (row.isAnomaly ? [i] : []));

describe('a baselined series in streaming, with the real model', () => {
  let model: LoadedModelRuntime;
  beforeAll(async () => {
    model = await createModelRuntime();
  });
  afterAll(async () => {
    await model?.close();
  });

  it("flags a shape change within the usual range once, before the engine alone does; a series without a baseline is judged as before", async () => {
    // The baseline: the generic model's energy statistics and the shapes of 1000 healthy points.
    const healthy = machineSignal(1000, 1, 0);
    const normalisation = robustNormalisation(healthy);
    const { energies } = await model.energies(healthy, { normalisation });
    const stats = computeEnergyStats(Array.from(energies).slice(WINDOW_POINTS));
    const shapeReference = shapeReferenceOf(healthy);
    expect(shapeReference?.length).toBe(48);
    const record = (machineId: string, shapes: boolean): BaselineRecord => ({
      ...statsBaseline(machineId),
      stats: { energyMean: stats.energy_mean, energyStd: stats.energy_std, energyP99: stats.energy_p99, numWindows: stats.num_windows, seriesLength: 1000 },
      normalisation,
      shapeReference: shapes ? shapeReference : null,
    });
    const store = baselineStore(
      new Map([
        ['pump', record('pump', true)],
        ['pump-energies', record('pump-energies', false)],
      ]),
    );
    const platform = await embeddedPlatform();
    const config = testConfig();
    const worker = await startWorker({ ...platform, store, loadModel: async () => model, config });
    try {
      const values = changedShape();
      const machines = ['pump', 'pump-energies', 'plain'];
      const producer = await platform.bus.producer();
      await producer.send(
        'telemetry',
        values.flatMap((value, i) => machines.map((machine) => telemetryMessage({ machine_id: machine, timestamp: T0 + i * STEP, value }))),
      );
      await expect.poll(() => worker.counters().rows, { timeout: 300_000, interval: 100 }).toBe(POINTS * machines.length);
      const [pump, energiesOnly, plain] = await Promise.all(machines.map((machine) => allRows(platform.results, machine)));

      // Without a baseline: the engine's verdict, as one uninterrupted stream judges it.
      const engine = judgeNewPoints(
        { context: [], newValues: values, seenPoints: 0, sensitivity: config.sensitivity, judge: null },
        { windowPoints: config.windowPoints, memoryPoints: config.memoryPoints, maxAnomalyRatio: config.maxAnomalyRatio },
      ).detections;
      expect(plain!.map((row) => ({ ...row, writtenAtMs: 0 }))).toEqual(
        engine.map((d, i) => ({
          orgId: expect.any(String) as string,
          machineId: 'plain',
          tsMs: T0 + i * STEP,
          value: values[i],
          expectedValue: d.expectedValue,
          upperMargin: d.upperMargin,
          lowerMargin: d.lowerMargin,
          isAnomaly: d.isAnomaly,
          isPositiveAnomaly: d.isPositiveAnomaly,
          isNegativeAnomaly: d.isNegativeAnomaly,
          severity: d.severity,
          energy: null,
          zScore: null,
          regime: 'UNKNOWN',
          modelVersion: expect.stringMatching(/^engine-/) as string,
          writtenAtMs: 0,
        })),
      );
      // The engine alone reports the change only once its window has grown to four cycles and
      // more than a cycle of the change has gone by.
      const byEngine = flags(plain!).filter(inChange);
      expect(byEngine.every((i) => i >= CHANGE_FROM + 24)).toBe(true);

      // With the baseline's shapes the change is flagged earlier, once, and the engine's own flags stay.
      const reported = flags(pump!).filter(inChange);
      const lastEngine = byEngine.at(-1)!;
      const learnedOnly = reported.filter((i) => !byEngine.includes(i) && i < lastEngine);
      expect(learnedOnly).toHaveLength(1);
      expect(reported.filter((i) => byEngine.includes(i))).toEqual(byEngine);
      // Where the baseline's level model (its window a cycle) then finds the series away, within a
      // window of the engine's last flag, that flag holds: a run of points, each no more severe
      // than the flag, ACTIVE (level-hold.ts).
      const held = reported.filter((i) => i > lastEngine);
      expect(held.length).toBeGreaterThan(0);
      expect(held).toEqual(held.map((_, k) => held[0]! + k));
      expect(held[0]!).toBeLessThanOrEqual(lastEngine + 48);
      for (const i of held) {
        expect(pump![i]!.severity).toBeGreaterThan(0);
        expect(pump![i]!.severity).toBeLessThanOrEqual(pump![lastEngine]!.severity);
        expect(pump![i]!.regime).toBe('ACTIVE');
      }
      const onset = learnedOnly[0]!;
      expect(byEngine.every((i) => i > onset)).toBe(true);
      expect(onset).toBeGreaterThanOrEqual(CHANGE_FROM);
      expect(onset).toBeLessThan(CHANGE_FROM + 48);
      const row = pump![onset]!;
      expect(row.severity).toBeGreaterThan(0);
      const deviation = row.value - row.expectedValue;
      expect(row.isPositiveAnomaly).toBe(deviation > 0);
      expect(row.isNegativeAnomaly).toBe(deviation < 0);
      // Its band is the one its severity gives by the engine's rule, so the point lies outside it.
      expect(1 - row.upperMargin / Math.abs(deviation)).toBeCloseTo(row.severity, 9);
      expect(row.upperMargin).toBe(row.lowerMargin);
      // The shapes see it first: the energies alone report it later, if at all (once, too).
      const byEnergies = flags(energiesOnly!).filter(inChange);
      expect(byEnergies.length).toBeLessThanOrEqual(1);
      expect(byEnergies.every((i) => i > onset + 24)).toBe(true);
      // The engine's expected values are the same whatever the learned side says, and the rows
      // report the energies' z-scores (not the learned scores).
      pump!.forEach((r, i) => {
        expect(r.expectedValue).toBe(plain![i]!.expectedValue);
        expect(r.zScore).toBe(energiesOnly![i]!.zScore);
      });
      // Points of the model's warm-up keep the engine's verdict.
      for (let i = 0; i < WINDOW_POINTS; i++) expect(pump![i]!.severity).toBe(plain![i]!.severity);
    } finally {
      await worker.stop();
    }
  });
});
