// GET /v1/machines and GET /v1/status/{machine_id} with an injected ResultStore: the list holds the
// machines with a baseline, and with ?include=telemetry also those known only from their stored
// streaming results (or from detections counted before detections stopped registering machines);
// every machine carries its telemetry summary (or null), organizations stay apart, DELETE removes
// a machine's stored results with it, and a results store that cannot answer makes the routes a
// retriable 503 instead of a list that leaves machines out.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resultRow } from '@adp/streaming/testing';
import type { FastifyInstance } from 'fastify';
import type { ResultRow, ResultStore } from '@adp/streaming';
import { createMemoryResultStore } from '@adp/store';
import {
  API_KEY,
  OTHER_KEY,
  OTHER_ORG,
  constantEnergyModel,
  get,
  post,
  streamingEnvironment,
  type StreamingEnvironment,
} from './streaming-helpers.js';

const T0 = Date.UTC(2025, 5, 1);
const MINUTE = 60_000;

function row(orgId: string, machineId: string, index: number, overrides: Partial<ResultRow> = {}): ResultRow {
  return resultRow({ orgId, machineId, tsMs: T0 + index * MINUTE, value: 50, expectedValue: 50, upperMargin: 2, lowerMargin: 2, writtenAtMs: T0, ...overrides });
}

/** `count` rows from `from` on; the indexes in `anomalies` are SHOCK anomalies, the rest HEALTHY or UNKNOWN. */
function rows(orgId: string, machineId: string, from: number, count: number, regime: ResultRow['regime'], anomalies: number[] = []): ResultRow[] {
  return Array.from({ length: count }, (_, offset) => {
    const index = from + offset;
    return anomalies.includes(index)
      ? row(orgId, machineId, index, { isAnomaly: true, isPositiveAnomaly: true, severity: 0.5, regime: 'SHOCK' })
      : row(orgId, machineId, index, { regime });
  });
}

const iso = (index: number) => new Date(T0 + index * MINUTE).toISOString();
const ZERO_REGIMES = { HEALTHY: 0, ACTIVE: 0, TRANSITION: 0, SHOCK: 0, UNKNOWN: 0 };
/** A statistics-only baseline: no fine-tuning, so no model is needed. */
const energies = Array.from({ length: 100 }, (_, index) => 3 + (index % 2 === 0 ? 0.5 : -0.5));
const series = Array.from({ length: 24 }, (_, index) => ({ value: 10 + (index % 5) }));

/** A ResultStore whose summaries fail as an unreachable server's would. */
function unreachableResults(): ResultStore {
  const failing = () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:8123'));
  return {
    insert: failing,
    query: failing,
    machines: failing,
    deleteMachine: failing,
    deleteBefore: failing,
    close: () => Promise.resolve(),
  };
}

describe('GET /v1/machines and GET /v1/status with stored streaming results', () => {
  let env: StreamingEnvironment;
  let results: ResultStore;
  let app: FastifyInstance;
  let orgId: string;

  beforeEach(async () => {
    env = await streamingEnvironment();
    results = createMemoryResultStore();
    app = await env.start({}, { results, model: constantEnergyModel(1) });
    orgId = app.bootstrap.organizationId;
    // pump-1: a baseline and 10 stored points (one anomaly); fan-2: counted by a detection before
    // detections stopped registering machines (the store still holds such machines), no results;
    // 'valve-3': only telemetry (3 points, one replayed).
    expect((await post(app, '/v1/baseline', { machine_id: 'pump-1', label: 'cooling pump', energies })).statusCode).toBe(200);
    await app.store.recordDetection(orgId, 'fan-2', { points: 24, withBaseline: false, regimeCounts: { ...ZERO_REGIMES, UNKNOWN: 24 } });
    await results.insert(rows(orgId, 'pump-1', 0, 10, 'HEALTHY', [7]));
    await results.insert(rows(orgId, 'valve-3', 0, 3, 'UNKNOWN'));
    await results.insert([row(orgId, 'valve-3', 2, { value: 51, writtenAtMs: T0 + 1 })]);
  });
  afterEach(async () => {
    await env.cleanup();
    await results.close();
  });

  it('lists only the machines with a baseline by default', async () => {
    const response = await get(app, '/v1/machines');
    expect(response.statusCode).toBe(200);
    const body = response.json() as { machines: { machine_id: string; label: string | null; telemetry: { points: number } | null }[]; total: number };
    expect(body.machines.map((machine) => [machine.machine_id, machine.label, machine.telemetry?.points])).toEqual([['pump-1', 'cooling pump', 10]]);
    expect(body.total).toBe(1);
  });

  it('answers 400 InvalidArgument for an include it does not know', async () => {
    for (const url of ['/v1/machines?include=all', '/v1/machines?include=telemetry&include=telemetry']) {
      const response = await get(app, url);
      expect(response.statusCode, url).toBe(400);
      expect((response.json() as { error: { code: string } }).error.code).toBe('InvalidArgument');
    }
  });

  it('a detection naming a machine without a baseline does not register it', async () => {
    expect((await post(app, '/v1/detect', { machine_id: 'newcomer', series })).statusCode).toBe(200);
    expect((await get(app, '/v1/status/newcomer')).statusCode).toBe(404);
    const all = (await get(app, '/v1/machines?include=telemetry')).json() as { machines: { machine_id: string }[] };
    expect(all.machines.map((machine) => machine.machine_id)).not.toContain('newcomer');
  });

  it('with include=telemetry lists the store machines and the telemetry-only one, ascending by id, in the exact shape', async () => {
    const response = await get(app, '/v1/machines?include=telemetry');
    expect(response.statusCode).toBe(200);
    const body = response.json() as { machines: { baseline_created_at: string | null }[] };
    const created = body.machines[1]?.baseline_created_at;
    expect(typeof created).toBe('string');
    expect(body).toEqual({
      machines: [
        { machine_id: 'fan-2', baseline_created_at: null, num_windows: null, label: null, telemetry: null },
        {
          machine_id: 'pump-1',
          baseline_created_at: created,
          num_windows: 100,
          label: 'cooling pump',
          telemetry: {
            points: 10,
            anomalies: 1,
            first_point_at: iso(0),
            last_point_at: iso(9),
            regime_counts: { ...ZERO_REGIMES, HEALTHY: 9, SHOCK: 1 },
          },
        },
        {
          machine_id: 'valve-3',
          baseline_created_at: null,
          num_windows: null,
          label: null,
          telemetry: { points: 3, anomalies: 0, first_point_at: iso(0), last_point_at: iso(2), regime_counts: { ...ZERO_REGIMES, UNKNOWN: 3 } },
        },
      ],
      total: 3,
    });
  });

  it('answers the status of a machine known only from its results, dated by its first stored point', async () => {
    const response = await get(app, '/v1/status/valve-3');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      machine_id: 'valve-3',
      baseline_present: false,
      baseline_id: null,
      baseline_created_at: null,
      baseline_updated_at: null,
      label: null,
      model_in_use: 'generic',
      predictor_loaded: false,
      first_seen_at: iso(0),
      counters_since: iso(0),
      detections_since: 0,
      points_since: 0,
      last_detection_at: null,
      recent: { detections: 0, points: 0, regime_counts: ZERO_REGIMES },
      telemetry: { points: 3, anomalies: 0, first_point_at: iso(0), last_point_at: iso(2), regime_counts: { ...ZERO_REGIMES, UNKNOWN: 3 } },
    });
  });

  it("adds the telemetry summary to a store machine's status, and null for one without results", async () => {
    const pump = (await get(app, '/v1/status/pump-1')).json() as Record<string, unknown>;
    expect(pump).toMatchObject({ machine_id: 'pump-1', baseline_present: true, baseline_id: 'bl_pump-1', detections_since: 0 });
    expect(pump['telemetry']).toEqual({
      points: 10,
      anomalies: 1,
      first_point_at: iso(0),
      last_point_at: iso(9),
      regime_counts: { ...ZERO_REGIMES, HEALTHY: 9, SHOCK: 1 },
    });
    // A detection of a machine with a baseline counts.
    expect((await post(app, '/v1/detect', { machine_id: 'pump-1', series })).statusCode).toBe(200);
    expect(((await get(app, '/v1/status/pump-1')).json() as { detections_since: number }).detections_since).toBe(1);
    const fan = (await get(app, '/v1/status/fan-2')).json() as Record<string, unknown>;
    expect(fan).toMatchObject({ machine_id: 'fan-2', baseline_present: false, detections_since: 1, points_since: 24 });
    expect(fan['telemetry']).toBeNull();
    expect(Object.keys(fan).sort()).toEqual(Object.keys(pump).sort());
    expect((await get(app, '/v1/status/ghost')).statusCode).toBe(404);
  });

  it('DELETE removes the baseline, counters and stored results of the machine and its channels, and nothing of other machines', async () => {
    const del = (id: string) => app.inject({ method: 'DELETE', url: `/v1/machines/${id}`, headers: { 'x-service-key': API_KEY } });
    // pump-1's channel with a baseline and results, and a machine whose id only starts the same.
    expect((await post(app, '/v1/baseline', { machine_id: 'pump-1:temp', energies })).statusCode).toBe(200);
    await results.insert(rows(orgId, 'pump-1:temp', 0, 4, 'HEALTHY'));
    await results.insert(rows(orgId, 'pump-10', 0, 2, 'HEALTHY'));
    expect((await del('pump-1')).json()).toEqual({ machine_id: 'pump-1', deleted: true, baseline_deleted: true, results_deleted: true });
    const list = (await get(app, '/v1/machines?include=telemetry')).json() as { machines: { machine_id: string }[] };
    expect(list.machines.map((machine) => machine.machine_id)).toEqual(['fan-2', 'pump-10', 'valve-3']);
    for (const id of ['pump-1', 'pump-1:temp']) {
      expect((await get(app, `/v1/status/${id}`)).statusCode, id).toBe(404);
      expect((await get(app, `/v1/baseline?machine_id=${id}`)).statusCode, id).toBe(404);
      expect(await results.query({ orgId, machineId: id, limit: 100 }), id).toEqual([]);
      expect((await get(app, `/v1/machines/${id}/results`)).statusCode, id).toBe(404);
    }
    expect(await results.query({ orgId, machineId: 'pump-10', limit: 100 })).toHaveLength(2);

    // A machine known only from telemetry can be deleted.
    expect((await del('valve-3')).json()).toEqual({ machine_id: 'valve-3', deleted: true, baseline_deleted: false, results_deleted: true });
    expect((await get(app, '/v1/status/valve-3')).statusCode).toBe(404);
    expect((await del('valve-3')).statusCode).toBe(404);
    expect(((await del('ghost')).json() as { error: { message: string } }).error.message).toBe("Machine 'ghost' not found.");
  });

  it("DELETE of a channel's series removes that series only, not channels whose name starts with it", async () => {
    const del = (id: string) => app.inject({ method: 'DELETE', url: `/v1/machines/${id}`, headers: { 'x-service-key': API_KEY } });
    await results.insert(rows(orgId, 'pump-1:temp', 0, 4, 'HEALTHY'));
    await results.insert(rows(orgId, 'pump-1:temp:max', 0, 3, 'HEALTHY'));
    expect((await del('pump-1:temp')).json()).toEqual({ machine_id: 'pump-1:temp', deleted: true, baseline_deleted: false, results_deleted: true });
    expect(await results.query({ orgId, machineId: 'pump-1:temp', limit: 100 })).toEqual([]);
    expect(await results.query({ orgId, machineId: 'pump-1:temp:max', limit: 100 })).toHaveLength(3);
    expect(await results.query({ orgId, machineId: 'pump-1', limit: 100 })).toHaveLength(10);
  });

  it('a detection naming a deleted machine does not bring it back', async () => {
    const del = (id: string) => app.inject({ method: 'DELETE', url: `/v1/machines/${id}`, headers: { 'x-service-key': API_KEY } });
    expect((await del('pump-1')).statusCode).toBe(200);
    const detected = (await post(app, '/v1/detect', { machine_id: 'pump-1', series })).json() as { engine: string; baseline_id: string | null };
    expect(detected).toMatchObject({ engine: 'generic', baseline_id: null });
    expect((await get(app, '/v1/status/pump-1')).statusCode).toBe(404);
    const all = (await get(app, '/v1/machines?include=telemetry')).json() as { machines: { machine_id: string }[] };
    expect(all.machines.map((machine) => machine.machine_id)).toEqual(['fan-2', 'valve-3']);
  });

  it('replacing a baseline without a label keeps the label; a new label replaces it', async () => {
    const label = async () => ((await get(app, '/v1/baseline?machine_id=pump-1')).json() as { label: string | null }).label;
    expect((await post(app, '/v1/baseline', { machine_id: 'pump-1', energies })).statusCode).toBe(200);
    expect(await label()).toBe('cooling pump');
    expect((await post(app, '/v1/baseline', { machine_id: 'pump-1', energies, label: null })).statusCode).toBe(200);
    expect(await label()).toBe('cooling pump');
    expect((await post(app, '/v1/baseline', { machine_id: 'pump-1', energies, label: 'feed pump' })).statusCode).toBe(200);
    expect(await label()).toBe('feed pump');
  });

  it("keeps organizations apart: another organization's results with the same ids are not mixed in", async () => {
    await env.addOtherOrganization();
    await results.insert(rows(OTHER_ORG, 'valve-3', 100, 4, 'HEALTHY'));
    await results.insert(rows(OTHER_ORG, 'other-only', 0, 2, 'HEALTHY'));

    const mine = (await get(app, '/v1/machines?include=telemetry')).json() as { machines: { machine_id: string; telemetry: { points: number } | null }[]; total: number };
    expect(mine.machines.map((machine) => machine.machine_id)).toEqual(['fan-2', 'pump-1', 'valve-3']);
    expect(mine.machines[2]?.telemetry?.points).toBe(3);

    const theirs = await get(app, '/v1/machines?include=telemetry', OTHER_KEY);
    expect(theirs.json()).toEqual({
      machines: [
        {
          machine_id: 'other-only',
          baseline_created_at: null,
          num_windows: null,
          label: null,
          telemetry: { points: 2, anomalies: 0, first_point_at: iso(0), last_point_at: iso(1), regime_counts: { ...ZERO_REGIMES, HEALTHY: 2 } },
        },
        {
          machine_id: 'valve-3',
          baseline_created_at: null,
          num_windows: null,
          label: null,
          telemetry: { points: 4, anomalies: 0, first_point_at: iso(100), last_point_at: iso(103), regime_counts: { ...ZERO_REGIMES, HEALTHY: 4 } },
        },
      ],
      total: 2,
    });
    expect((await get(app, '/v1/status/pump-1', OTHER_KEY)).statusCode).toBe(404);
    expect((await get(app, '/v1/status/other-only')).statusCode).toBe(404);
    expect(((await get(app, '/v1/status/valve-3', OTHER_KEY)).json() as { first_seen_at: string }).first_seen_at).toBe(iso(100));
  });
});

describe('GET /v1/machines and GET /v1/status without a reachable results store', () => {
  let env: StreamingEnvironment;

  beforeEach(async () => {
    env = await streamingEnvironment();
  });
  afterEach(async () => {
    await env.cleanup();
  });

  it('answers a retriable 503 from both routes, while the other native routes still answer', async () => {
    const app = await env.start({}, { results: unreachableResults() });
    expect((await post(app, '/v1/baseline', { machine_id: 'pump-1', energies })).statusCode).toBe(200);
    for (const url of ['/v1/machines', '/v1/status/pump-1', '/v1/status/ghost']) {
      const response = await get(app, url);
      expect(response.statusCode, url).toBe(503);
      expect(response.headers['retry-after']).toBe('1');
      expect(response.json()).toEqual({
        error: { code: 'ServiceUnavailable', message: 'The results store cannot be reached right now. Retry shortly.' },
      });
    }
    expect((await get(app, '/v1/baseline?machine_id=pump-1')).statusCode).toBe(200);
  });

  it('lists only the store machines, with telemetry null, when the server has no results store', async () => {
    const app = await env.start();
    expect((await post(app, '/v1/baseline', { machine_id: 'pump-1', energies })).statusCode).toBe(200);
    const list = (await get(app, '/v1/machines')).json() as { machines: { machine_id: string; telemetry: unknown }[]; total: number };
    expect(list.machines.map((machine) => [machine.machine_id, machine.telemetry])).toEqual([['pump-1', null]]);
    expect(list.total).toBe(1);
    const status = (await get(app, '/v1/status/pump-1')).json() as { telemetry: unknown };
    expect(status.telemetry).toBeNull();
  });
});
