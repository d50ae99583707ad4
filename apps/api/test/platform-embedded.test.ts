// The embedded deployment end to end, as `npm start` runs it: one process with the in-process bus,
// the memory result store and the worker inside. POST /v1/telemetry, then poll
// GET /v1/machines/{id}/results until every point is judged, with the injected spike flagged.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '@adp/worker';
import { loadConfig } from '../src/config.js';
import { openPlatform, type Platform } from '../src/platform.js';
import { API_KEY, OTHER_KEY, constantEnergyModel, eventually, get, post } from './streaming-helpers.js';
import { describeApiKey } from '../src/tenancy/keys.js';

const T0 = Date.UTC(2025, 5, 1);
const MINUTE = 60_000;
const POINTS = 300;
const SPIKE_AT = 250;

function value(index: number): number {
  const base = 50 + 5 * Math.sin(index / 9) + ((index * 7919) % 13) / 13;
  return index === SPIKE_AT ? base + 60 : base;
}

interface ResultsBody {
  results: { timestamp: string; value: number; is_anomaly: boolean; is_positive_anomaly: boolean; regime: string }[];
  next_cursor: string | null;
}

describe('embedded platform: telemetry -> worker -> results in one process', () => {
  let dataDir: string;
  let platform: Platform;

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-embedded-'));
    const config = loadConfig({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY: API_KEY, LOG_LEVEL: 'silent' });
    expect(config.embeddedWorker).toBe(true);
    platform = await openPlatform(config, { model: constantEnergyModel(1), worker: loadWorkerConfig({}) });
  });
  afterEach(async () => {
    await platform.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('judges every posted point and flags the injected spike', async () => {
    const { app } = platform;
    expect(platform.streaming.mode).toEqual({ bus: 'in-process', results: 'duckdb', checkpoints: 'memory', notifier: 'memory' });
    expect(platform.worker).not.toBeNull();

    // Two calls, as a client streaming in chunks would send them.
    for (const [from, to] of [
      [0, 200],
      [200, POINTS],
    ] as const) {
      const points = Array.from({ length: to - from }, (_, offset) => ({
        timestamp: new Date(T0 + (from + offset) * MINUTE).toISOString(),
        value: value(from + offset),
      }));
      const response = await post(app, '/v1/telemetry', { machine_id: 'pump-1', points });
      expect(response.statusCode).toBe(202);
      expect(response.json()).toEqual({ accepted: to - from, machine_id: 'pump-1' });
    }

    let body: ResultsBody | undefined;
    await eventually(async () => {
      const response = await get(app, '/v1/machines/pump-1/results?limit=10000');
      if (response.statusCode !== 200) return false;
      body = response.json();
      return body?.results.length === POINTS;
    }, 20_000);
    const results = body?.results ?? [];
    expect(results.map((result) => result.timestamp)).toEqual(
      Array.from({ length: POINTS }, (_, index) => new Date(T0 + index * MINUTE).toISOString()),
    );
    expect(results[SPIKE_AT]).toMatchObject({ value: value(SPIKE_AT), is_anomaly: true, is_positive_anomaly: true });
    // No baseline: the regime is UNKNOWN, and the spike stands out from the rest.
    expect(results.every((result) => result.regime === 'UNKNOWN')).toBe(true);
    const flagged = results.filter((result) => result.is_anomaly).length;
    expect(flagged).toBeLessThan(POINTS / 10);

    // Paged reads return the same rows.
    const firstPage = (await get(app, '/v1/machines/pump-1/results?limit=120')).json() as ResultsBody;
    expect(firstPage.results).toHaveLength(120);
    expect(firstPage.next_cursor).not.toBeNull();

    // Usage counted the points; another organization sees nothing of this machine.
    const usage = (await get(app, '/v1/usage')).json() as { usage: { endpoint: string; total_points: number; call_count: number }[] };
    expect(usage.usage.find((entry) => entry.endpoint === 'telemetry')).toEqual({ endpoint: 'telemetry', total_points: POINTS, call_count: 2 });
    await app.store.createOrganization('org_second', 'Second organization');
    await app.store.createApiKey('org_second', describeApiKey(OTHER_KEY));
    expect((await get(app, '/v1/machines/pump-1/results', OTHER_KEY)).statusCode).toBe(404);

    // The machine sent only telemetry: GET /v1/machines lists it and /v1/status answers, with the
    // summary of its stored results.
    const telemetry = {
      points: POINTS,
      anomalies: flagged,
      first_point_at: new Date(T0).toISOString(),
      last_point_at: new Date(T0 + (POINTS - 1) * MINUTE).toISOString(),
      regime_counts: { HEALTHY: 0, ACTIVE: 0, TRANSITION: 0, SHOCK: 0, UNKNOWN: POINTS },
    };
    expect((await get(app, '/v1/machines')).json()).toEqual({
      machines: [{ machine_id: 'pump-1', baseline_created_at: null, num_windows: null, label: null, telemetry }],
      total: 1,
    });
    expect((await get(app, '/v1/status/pump-1')).json()).toMatchObject({ machine_id: 'pump-1', baseline_present: false, telemetry });
    expect((await get(app, '/v1/machines', OTHER_KEY)).json()).toEqual({ machines: [], total: 0 });
    expect((await get(app, '/v1/status/pump-1', OTHER_KEY)).statusCode).toBe(404);
  });

  it('keeps the stored results across a restart (results.duckdb under DATA_DIR)', async () => {
    const points = Array.from({ length: 60 }, (_, index) => ({ timestamp: new Date(T0 + index * MINUTE).toISOString(), value: value(index) }));
    expect((await post(platform.app, '/v1/telemetry', { machine_id: 'pump-3', points })).statusCode).toBe(202);
    const stored = async (): Promise<unknown[]> => {
      const response = await get(platform.app, '/v1/machines/pump-3/results?limit=10000');
      return response.statusCode === 200 ? (response.json() as ResultsBody).results : [];
    };
    await eventually(async () => (await stored()).length === 60, 20_000);
    const before = await stored();

    await platform.close();
    const config = loadConfig({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY: API_KEY, LOG_LEVEL: 'silent' });
    platform = await openPlatform(config, { model: constantEnergyModel(1), worker: loadWorkerConfig({}) });
    expect(await stored()).toEqual(before);
  });

  it("tells the running worker about a baseline written through the API: later points are scored against it", async () => {
    const { app } = platform;
    const batch = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, offset) => ({ timestamp: new Date(T0 + (from + offset) * MINUTE).toISOString(), value: value(from + offset) }));
    type Row = { timestamp: string; energy: number | null; z_score: number | null; regime: string };
    const rows = async (): Promise<Row[]> => {
      const response = await get(app, '/v1/machines/pump-2/results?limit=10000');
      return response.statusCode === 200 ? (response.json() as { results: Row[] }).results : [];
    };

    expect((await post(app, '/v1/telemetry', { machine_id: 'pump-2', points: batch(0, 100) })).statusCode).toBe(202);
    await eventually(async () => (await rows()).length === 100, 20_000);
    // The worker now remembers that pump-2 has no baseline.
    expect((await rows()).every((row) => row.energy === null && row.regime === 'UNKNOWN')).toBe(true);

    // Energies with mean 3 and standard deviation 0.5; the fake model's energies are all 1.
    const energies = Array.from({ length: 100 }, (_, index) => 3 + (index % 2 === 0 ? 0.5 : -0.5));
    expect((await post(app, '/v1/baseline', { machine_id: 'pump-2', energies })).statusCode).toBe(200);
    expect((await post(app, '/v1/telemetry', { machine_id: 'pump-2', points: batch(100, 200) })).statusCode).toBe(202);
    await eventually(async () => (await rows()).length === 200, 20_000);
    const later = (await rows()).slice(100);
    expect(later.every((row) => row.energy === 1 && row.z_score !== null && Math.abs(row.z_score + 4) < 1e-6)).toBe(true);
    expect(later.every((row) => row.regime !== 'UNKNOWN')).toBe(true);
    expect(platform.worker?.counters().baselineNotifications).toBe(1);
  });
});

describe('openPlatform configuration checks', () => {
  it('refuses an embedded worker without settings, or on another topic than the API publishes to', async () => {
    const config = loadConfig({ DATA_DIR: os.tmpdir(), LOG_LEVEL: 'silent' });
    await expect(openPlatform(config, { model: constantEnergyModel(1) })).rejects.toThrow('EMBEDDED_WORKER needs the worker settings');
    await expect(
      openPlatform(config, { model: constantEnergyModel(1), worker: loadWorkerConfig({ TELEMETRY_TOPIC: 'elsewhere' }) }),
    ).rejects.toThrow('set the same TELEMETRY_TOPIC for both');
  });
});
