// A baselined detection's flags, severity and margins join the engine's residual verdict with the
// machine's learned energies (src/machines/verdict.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { learnedSeverity, marginMultiplier } from '@adp/detection';
import { WINDOW_POINTS } from '@adp/model';
import { machineSignal, nativeEnvironment, points, post, sharedRealModel, type NativeEnvironment } from './native-helpers.js';

interface Answer {
  expectedValues: number[];
  upperMargins: number[];
  lowerMargins: number[];
  isAnomaly: boolean[];
  isPositiveAnomaly: boolean[];
  isNegativeAnomaly: boolean[];
  severity: number[];
  episodes: { start: number; end: number; start_timestamp: string | null; end_timestamp: string | null; peak: number; severity: number; flagged_points: number; direction: string; closed: boolean }[];
  z_scores: number[] | null;
  shape_scores: number[] | null;
  energies: number[] | null;
  engine: string;
}

const model = sharedRealModel();
let env: NativeEnvironment;
let app: FastifyInstance;

beforeAll(async () => {
  env = await nativeEnvironment(model.factory);
  app = await env.start();
  const response = await post(app, '/v1/baseline', { machine_id: 'pump', series: points(machineSignal(1000, 1)), granularity: 'none' });
  expect(response.statusCode, response.body).toBe(200);
  // Loading the model and fine-tuning take a while on a busy machine: the bound only guards against a hang.
}, 300_000);

afterAll(async () => {
  await env.cleanup();
  await model.close();
});

async function detect(body: Record<string, unknown>): Promise<Answer> {
  const response = await post(app, '/v1/detect', { granularity: 'none', ...body });
  expect(response.statusCode, response.body).toBe(200);
  return response.json() as Answer;
}

const flags = (answer: Answer): number[] => answer.isAnomaly.flatMap((flag, i) => (flag ? [i] : []));

/** The machine's signal with its noise tripled for 40 points: within the usual range, a shape the residual alone lets pass. */
function noisier(): number[] {
  return machineSignal(600, 2, 1000).map((value, i) => (i >= 300 && i < 340 ? value + 1.2 * Math.sin(i * 2.1) : value));
}

describe('a baselined detection judges with the machine model', () => {
  it('flags what the learned energies find and the residual does not, with severity and band that agree', async () => {
    const series = points(noisier());
    const plain = await detect({ series });
    const tuned = await detect({ series, machine_id: 'pump' });
    expect(tuned.engine).toBe('fine-tuned');
    expect(flags(plain).filter((i) => i >= 300 && i < 340)).toEqual([]);
    const added = flags(tuned).filter((i) => !plain.isAnomaly[i]);
    const stretch = (i: number): boolean => i >= 300 && i < 340;
    expect(added.filter(stretch).length).toBeGreaterThan(0);
    // The engine's own flags stay, or lie in an event reported at an earlier onset (the cap is far away).
    expect(flags(plain).every((i) => flags(tuned).some((j) => j <= i && i - j <= WINDOW_POINTS))).toBe(true);
    const band = marginMultiplier(95);
    expect(plain.shape_scores).toBeNull();
    const shapes = tuned.shape_scores ?? [];
    expect(shapes).toHaveLength(series.length);
    for (const i of added) {
      expect(i).toBeGreaterThanOrEqual(WINDOW_POINTS);
      // The learned score is the energy's z-score plus the shape score within, which is at most
      // the centred one the answer carries (the centred subsequence is one of those containing the
      // point): beyond the band.
      const z = tuned.z_scores?.[i] ?? 0;
      expect(z + Math.max(0, shapes[i] ?? 0)).toBeGreaterThan(band);
      // An event is flagged once, at its first point, with the event's largest severity, at least
      // what the energy alone gives.
      expect(tuned.severity[i]).toBeGreaterThanOrEqual(learnedSeverity(z, band) - 1e-9);
      const deviation = (series[i]?.value ?? 0) - (tuned.expectedValues[i] ?? 0);
      expect(tuned.isPositiveAnomaly[i]).toBe(deviation > 0);
      expect(tuned.isNegativeAnomaly[i]).toBe(deviation < 0);
    }
    // One event, one flag: the noisier stretch is not flagged point by point.
    expect(added.filter(stretch).length).toBeLessThan(5);
    // Where the learned side has nothing to add the answer is the engine's.
    const quiet = flags(tuned).length === 0 ? 0 : Math.min(...flags(tuned));
    for (let i = 0; i < Math.min(quiet, 250); i++) {
      expect(tuned.upperMargins[i]).toBeCloseTo(plain.upperMargins[i] ?? 0, 9);
      expect(tuned.severity[i]).toBe(plain.severity[i]);
    }
  });

  it('answers the same without the z-scores, shape scores and energies a client leaves out', async () => {
    const series = points(noisier());
    const full = await detect({ series, machine_id: 'pump' });
    const lean = await detect({ series, machine_id: 'pump', include_energy: false, include_z_scores: false, include_shape_scores: false });
    expect(full.shape_scores).not.toBeNull();
    expect(lean).toMatchObject({ energies: null, z_scores: null, shape_scores: null });
    const { energies: _e, z_scores: _z, shape_scores: _s, ...rest } = full;
    const { energies: _le, z_scores: _lz, shape_scores: _ls, ...leanRest } = lean;
    // Everything else alike (the inference time aside): the verdicts still use what is left out.
    expect({ ...leanRest, inference_time_ms: 0 }).toEqual({ ...rest, inference_time_ms: 0 });
  });

  it('flags a shape the baseline never showed, within the usual range, by its shape score', async () => {
    // For two cycles (96 points from 300) the wave's harmonic turns smoothly over and back
    // (3 → −3 → 3): every value stays within the machine's usual range, with no step, but the
    // cycle's shape is one the baseline never had.
    const values = machineSignal(600, 3, 1000).map((value, i) => {
      if (i < 300 || i >= 396) return value;
      const harmonic = Math.sin((4 * Math.PI * (i + 1000)) / 48 + 1);
      return value - 3 * harmonic + 3 * Math.cos((2 * Math.PI * (i - 300)) / 96) * harmonic;
    });
    const series = points(values);
    const tuned = await detect({ series, machine_id: 'pump' });
    const shapes = tuned.shape_scores ?? [];
    expect(shapes).toHaveLength(values.length);
    const peak = shapes.indexOf(Math.max(...shapes));
    expect(peak).toBeGreaterThanOrEqual(280);
    expect(peak).toBeLessThan(420);
    // Away from the change the shapes are usual ones: scores well below the peak's.
    const quiet = shapes.slice(WINDOW_POINTS, 220);
    expect(Math.max(...quiet)).toBeLessThan((shapes[peak] ?? 0) / 2);
    // The shape alone is out of the band at the default sensitivity, and the change is flagged.
    expect(shapes[peak]).toBeGreaterThan(marginMultiplier(95));
    expect(flags(tuned).filter((i) => i >= 280 && i < 420).length).toBeGreaterThan(0);
  });

  it("the request's sensitivity sets the learned band too", async () => {
    const series = points(noisier());
    const high = flags(await detect({ series, machine_id: 'pump', sensitivity: 99 }));
    const low = flags(await detect({ series, machine_id: 'pump', sensitivity: 30 }));
    expect(low.length).toBeLessThan(high.length);
    // Every event the low sensitivity reports, the high one reports too: its onset may come
    // earlier, where events the low one reports apart are one at the high sensitivity.
    expect(low.every((i) => high.some((j) => j <= i && i - j <= 2 * WINDOW_POINTS))).toBe(true);
  });

  it('a statistics-only baseline joins its generic energies the same way', async () => {
    const healthy = await detect({ series: points(machineSignal(1000, 1)), include_energy: true });
    const stored = await post(app, '/v1/baseline', { machine_id: 'pump-stats', energies: (healthy.energies ?? []).slice(WINDOW_POINTS) });
    expect(stored.statusCode, stored.body).toBe(200);
    const series = points(noisier());
    const plain = await detect({ series });
    const withStats = await detect({ series, machine_id: 'pump-stats' });
    expect(withStats.engine).toBe('generic');
    // Energies alone keep no values: no shapes to compare.
    expect(withStats.shape_scores).toBeNull();
    const band = marginMultiplier(95);
    for (const i of flags(withStats).filter((index) => !plain.isAnomaly[index])) {
      expect(withStats.z_scores?.[i]).toBeGreaterThan(band);
    }
    expect(flags(plain).every((i) => withStats.isAnomaly[i])).toBe(true);
  });
});

describe('episodes', () => {
  const start = Date.parse('2026-03-01T00:00:00Z');
  // The noisy stretch, and a level shift of 4 points 60 points after it.
  const shifted = noisier().map((value, i) => (i >= 400 && i < 404 ? value + 8 : value));

  it("groups the answer's flags as the stream does: open at a flag, closed after 10 points without one", async () => {
    const series = shifted.map((value, i) => ({ timestamp: new Date(start + i * 60_000).toISOString(), value }));
    const answer = await detect({ series, granularity: 'minutely', machine_id: 'pump' });
    const flagged = flags(answer);
    expect(answer.episodes.length).toBeGreaterThan(0);
    expect(answer.episodes.some((e) => e.start <= 403 && e.end >= 400)).toBe(true);
    // Every flag lies in exactly one episode; each episode starts and ends at a flag; within one the
    // flags are at most 10 points apart, between two more than 10.
    for (const i of flagged) expect(answer.episodes.filter((e) => e.start <= i && i <= e.end)).toHaveLength(1);
    answer.episodes.forEach((episode, k) => {
      const inside = flagged.filter((i) => episode.start <= i && i <= episode.end);
      expect([inside[0], inside.at(-1), inside.length]).toEqual([episode.start, episode.end, episode.flagged_points]);
      inside.slice(1).forEach((i, j) => expect(i - inside[j]!).toBeLessThanOrEqual(10));
      const next = answer.episodes[k + 1];
      if (next) expect(next.start - episode.end).toBeGreaterThan(10);
      expect(episode.closed).toBe(series.length - 1 - episode.end >= 10);
      const peak = Math.max(...inside.map((i) => answer.severity[i]!));
      expect([episode.severity, answer.severity[episode.peak]]).toEqual([peak, peak]);
      expect([episode.start_timestamp, episode.end_timestamp]).toEqual([series[episode.start]!.timestamp, series[episode.end]!.timestamp]);
      const up = inside.some((i) => answer.isPositiveAnomaly[i]);
      const down = inside.some((i) => answer.isNegativeAnomaly[i]);
      expect(episode.direction).toBe(up && down ? 'both' : down ? 'negative' : 'positive');
    });
  });

  it('are the same without timestamps, whose fields are then null', async () => {
    const timed = await detect({ series: shifted.map((value, i) => ({ timestamp: new Date(start + i * 60_000).toISOString(), value })), granularity: 'minutely', machine_id: 'pump' });
    const untimed = await detect({ series: points(shifted), machine_id: 'pump' });
    expect(untimed.episodes.length).toBeGreaterThan(0);
    expect(untimed.episodes).toEqual(timed.episodes.map((e) => ({ ...e, start_timestamp: null, end_timestamp: null })));
  });
});
