// The platform's streaming flow as one suite, run against both configurations: embedded
// (apps/api/test/platform-embedded.test.ts: in-process bus, DuckDB, memory cache) and scale-out
// (test/integration/api-streaming.test.ts: Kafka, ClickHouse, Redis). The steps and the expected
// answers are the same; only how a platform is opened, restarted and cleaned up differs.
//
// POST /v1/telemetry, then GET /v1/machines/{id}/results until every point is judged: the injected
// spike flagged, paging, usage, organizations apart, the machine in GET /v1/machines and
// /v1/status; the results kept across a restart; a baseline written through the API reaching the
// running worker; a deleted machine's results, checkpoints and worker windows gone.
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { Platform } from '../src/platform.js';
import { describeApiKey } from '../src/tenancy/keys.js';
import { API_KEY, eventually, get, OTHER_KEY, OTHER_ORG, post } from './streaming-helpers.js';

/** One configuration under test: opens platforms on storage of the test's own. */
export interface PlatformTarget {
  /** What `platform.streaming.mode` must say. */
  readonly mode: Platform['streaming']['mode'];
  /** How long a posted batch may take to be judged and stored. */
  readonly settleMs: number;
  /**
   * Opens the platform with the bootstrap key `API_KEY` and the constant-energy model; a second
   * call (after the first platform is closed) opens it again on the same storage: a restart.
   * `env` adds variables to the configuration.
   */
  open(env?: Readonly<Record<string, string>>): Promise<Platform>;
  /** Removes what the test stored (temp folders, topics, databases, keys). */
  cleanup(): Promise<void>;
}

const T0 = Date.UTC(2025, 5, 1);
const MINUTE = 60_000;
const POINTS = 300;
const SPIKE_AT = 250;

function value(index: number): number {
  const base = 50 + 5 * Math.sin(index / 9) + ((index * 7919) % 13) / 13;
  return index === SPIKE_AT ? base + 60 : base;
}

function points(from: number, to: number): { timestamp: string; value: number }[] {
  return Array.from({ length: to - from }, (_, offset) => ({
    timestamp: new Date(T0 + (from + offset) * MINUTE).toISOString(),
    value: value(from + offset),
  }));
}

interface ResultRow {
  timestamp: string;
  value: number;
  is_anomaly: boolean;
  is_positive_anomaly: boolean;
  energy: number | null;
  z_score: number | null;
  regime: string;
}

interface ResultsBody {
  results: ResultRow[];
  next_cursor: string | null;
}

/** Declares the flow's tests inside the caller's `describe`; `target` is called once per test. */
export function platformFlowTests(target: () => PlatformTarget): void {
  let under: PlatformTarget;
  let platform: Platform | undefined;

  const open = async (env?: Readonly<Record<string, string>>): Promise<Platform> => {
    platform = await under.open(env);
    expect(platform.streaming.mode).toEqual(under.mode);
    expect(platform.worker).not.toBeNull();
    return platform;
  };
  const stored = async (machine: string): Promise<ResultRow[]> => {
    const response = await get(platform!.app, `/v1/machines/${machine}/results?limit=10000`);
    return response.statusCode === 200 ? (response.json() as ResultsBody).results : [];
  };
  const settled = (machine: string, count: number): Promise<void> =>
    eventually(async () => (await stored(machine)).length === count, under.settleMs);

  beforeEach(() => {
    under = target();
  });
  afterEach(async () => {
    await platform?.close();
    platform = undefined;
    await under.cleanup();
  });

  it('judges every posted point and flags the injected spike; pages, meters and keeps organizations apart', async () => {
    const { app } = await open();
    // Two calls, as a client streaming in chunks would send them.
    for (const [from, to] of [
      [0, 200],
      [200, POINTS],
    ] as const) {
      const response = await post(app, '/v1/telemetry', { machine_id: 'pump-1', points: points(from, to) });
      expect(response.statusCode).toBe(202);
      expect(response.json()).toEqual({ accepted: to - from, machine_id: 'pump-1' });
    }
    await settled('pump-1', POINTS);
    const results = await stored('pump-1');
    expect(results.map((result) => result.timestamp)).toEqual(points(0, POINTS).map((point) => point.timestamp));
    expect(results.map((result) => result.value)).toEqual(points(0, POINTS).map((point) => point.value));
    expect(results[SPIKE_AT]).toMatchObject({ value: value(SPIKE_AT), is_anomaly: true, is_positive_anomaly: true });
    // No baseline: the regime is UNKNOWN, and the spike stands out from the rest.
    expect(results.every((result) => result.regime === 'UNKNOWN' && result.energy === null)).toBe(true);
    const flagged = results.filter((result) => result.is_anomaly).length;
    expect(flagged).toBeLessThan(POINTS / 10);

    // Paged reads: 120 + 120 + 60, each point once, in order.
    const paged: string[] = [];
    let url = '/v1/machines/pump-1/results?limit=120';
    let pages = 0;
    for (;;) {
      const body = (await get(app, url)).json() as ResultsBody;
      paged.push(...body.results.map((row) => row.timestamp));
      pages++;
      if (body.next_cursor === null) break;
      url = `/v1/machines/pump-1/results?limit=120&cursor=${body.next_cursor}`;
    }
    expect(pages).toBe(3);
    expect(paged).toEqual(results.map((row) => row.timestamp));

    // Usage counted the points and the calls; another organization sees nothing of this machine.
    const usage = (await get(app, '/v1/usage')).json() as { endpoint: string; total_points: number; call_count: number }[];
    expect(usage.find((entry) => entry.endpoint === 'telemetry')).toEqual({ endpoint: 'telemetry', total_points: POINTS, call_count: 2 });
    await app.store.createOrganization(OTHER_ORG, 'Second organization');
    await app.store.createApiKey(OTHER_ORG, describeApiKey(OTHER_KEY));
    expect((await get(app, '/v1/machines/pump-1/results', OTHER_KEY)).statusCode).toBe(404);
    expect((await get(app, '/v1/machines/pump-404/results')).statusCode).toBe(404);

    // The machine sent only telemetry: GET /v1/machines?include=telemetry lists it (the default
    // list has the machines with a baseline) and /v1/status answers, with the summary of its stored results.
    const telemetry = {
      points: POINTS,
      anomalies: flagged,
      first_point_at: new Date(T0).toISOString(),
      last_point_at: new Date(T0 + (POINTS - 1) * MINUTE).toISOString(),
      regime_counts: { HEALTHY: 0, ACTIVE: 0, TRANSITION: 0, SHOCK: 0, UNKNOWN: POINTS },
    };
    expect((await get(app, '/v1/machines')).json()).toEqual({ machines: [], total: 0 });
    expect((await get(app, '/v1/machines?include=telemetry')).json()).toEqual({
      machines: [{ machine_id: 'pump-1', baseline_created_at: null, num_windows: null, label: null, telemetry }],
      total: 1,
    });
    expect((await get(app, '/v1/status/pump-1')).json()).toMatchObject({ machine_id: 'pump-1', baseline_present: false, telemetry });
    expect((await get(app, '/v1/machines?include=telemetry', OTHER_KEY)).json()).toEqual({ machines: [], total: 0 });
    expect((await get(app, '/v1/status/pump-1', OTHER_KEY)).statusCode).toBe(404);
  });

  it('keeps the stored results across a restart', async () => {
    const first = await open();
    expect((await post(first.app, '/v1/telemetry', { machine_id: 'pump-3', points: points(0, 60) })).statusCode).toBe(202);
    await settled('pump-3', 60);
    const before = await stored('pump-3');
    await first.close();
    platform = undefined;

    await open();
    expect(await stored('pump-3')).toEqual(before);
  });

  it('tells the running worker about a baseline written through the API: later points are scored against it', async () => {
    const { app } = await open();
    expect((await post(app, '/v1/telemetry', { machine_id: 'pump-2', points: points(0, 100) })).statusCode).toBe(202);
    await settled('pump-2', 100);
    // The worker now remembers that pump-2 has no baseline.
    expect((await stored('pump-2')).every((row) => row.energy === null && row.regime === 'UNKNOWN')).toBe(true);

    // Energies with mean 3 and standard deviation 0.5; the fake model's energies are all 1.
    const energies = Array.from({ length: 100 }, (_, index) => 3 + (index % 2 === 0 ? 0.5 : -0.5));
    expect((await post(app, '/v1/baseline', { machine_id: 'pump-2', energies })).statusCode).toBe(200);
    expect((await post(app, '/v1/telemetry', { machine_id: 'pump-2', points: points(100, 200) })).statusCode).toBe(202);
    await settled('pump-2', 200);
    const later = (await stored('pump-2')).slice(100);
    expect(later.every((row) => row.energy === 1 && row.z_score !== null && Math.abs(row.z_score + 4) < 1e-6)).toBe(true);
    expect(later.every((row) => row.regime !== 'UNKNOWN')).toBe(true);
    expect(platform!.worker?.counters().baselineNotifications).toBe(1);
  });

  it("deletes a machine's stored results and the worker's state of its channels: the same points sent again are judged afresh", async () => {
    const { app } = await open();
    const channelPoints = (from: number, to: number) =>
      points(from, to).map((point, offset) => ({ timestamp: point.timestamp, channels: { temp: point.value, load: from + offset } }));
    expect((await post(app, '/v1/telemetry', { machine_id: 'pump-4', points: channelPoints(0, 50) })).statusCode).toBe(202);
    await settled('pump-4:temp', 50);
    await settled('pump-4:load', 50);
    // A channel's baseline goes with its machine.
    const energies = Array.from({ length: 100 }, (_, index) => 3 + (index % 2 === 0 ? 0.5 : -0.5));
    expect((await post(app, '/v1/baseline', { machine_id: 'pump-4:temp', energies })).statusCode).toBe(200);

    const deleted = await app.inject({ method: 'DELETE', url: '/v1/machines/pump-4', headers: { 'x-service-key': API_KEY } });
    expect(deleted.json()).toEqual({ machine_id: 'pump-4', deleted: true, baseline_deleted: true, results_deleted: true });
    expect((await get(app, '/v1/baseline?machine_id=pump-4:temp')).statusCode).toBe(404);
    expect((await get(app, '/v1/machines/pump-4:temp/results')).statusCode).toBe(404);
    const listed = (await get(app, '/v1/machines?include=telemetry')).json() as { machines: { machine_id: string }[] };
    expect(listed.machines.map((machine) => machine.machine_id).filter((id) => id.startsWith('pump-4'))).toEqual([]);
    await eventually(async () => platform!.worker?.counters().machineDeletions === 1, under.settleMs);

    // Points at timestamps the worker had judged: replays, unless its window and checkpoints went.
    expect((await post(app, '/v1/telemetry', { machine_id: 'pump-4', points: channelPoints(0, 20) })).statusCode).toBe(202);
    await settled('pump-4:temp', 20);
    await settled('pump-4:load', 20);
    expect((await stored('pump-4:temp')).map((row) => row.timestamp)).toEqual(points(0, 20).map((point) => point.timestamp));
  });

  it('with RESULTS_RETENTION_DAYS, deletes the stored results older than the retention when it starts', async () => {
    const first = await open();
    expect((await post(first.app, '/v1/telemetry', { machine_id: 'pump-5', points: points(0, 30) })).statusCode).toBe(202);
    await settled('pump-5', 30);
    await first.close();
    platform = undefined;

    // The points are of June 2025: older than a day.
    await open({ RESULTS_RETENTION_DAYS: '1' });
    await settled('pump-5', 0);
    expect((await get(platform!.app, '/v1/machines/pump-5/results')).statusCode).toBe(404);
  });
}
