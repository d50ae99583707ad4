// Organization isolation, property-based: two organizations (the default one and one created
// through the admin API) make random sequences of calls over every endpoint, with live and test
// keys, on machine ids they share by name. A model of what each organization did says what each
// may see; after every call and at the end of each run, nothing read, written, deleted, counted
// or audited crosses from one organization to the other. Fixed seed: CI replays the same runs.
// One suite for every configuration: tenancy-isolation.test.ts runs it embedded,
// test/integration/api-isolation-scale-out.test.ts on ClickHouse and Redis.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { BusProducer, ResultStore } from '@adp/streaming';
import { createMemoryResultStore } from '@adp/store';
import { resultRow } from '@adp/streaming/testing';
import { buildApp, type BuildAppOptions } from '../src/app.js';
import { loadConfig, type ApiConfig } from '../src/config.js';
import { constantEnergyModel } from './streaming-helpers.js';
import { ADMIN_TOKEN } from './tenancy-helpers.js';

const SEED = 230_023;
const RUNS = 15;
const MAX_CALLS = 12;
const MACHINES = ['m1', 'm2'] as const;
type Machine = (typeof MACHINES)[number];
type OrgIndex = 0 | 1;
type KeyKind = 'live' | 'test';

const VENDOR_SERIES = Array.from({ length: 24 }, (_, i) => ({
  timestamp: new Date(Date.UTC(2025, 0, 1, i)).toISOString(),
  value: 10 + (i % 6),
}));
const DETECT_SERIES = Array.from({ length: 24 }, (_, i) => ({ value: 10 + (i % 6) }));
const ENERGIES = Array.from({ length: 100 }, (_, i) => 3 + (i % 2));

type Call =
  | { readonly op: 'vendor'; readonly org: OrgIndex; readonly kind: KeyKind; readonly detect: 'entire' | 'last' | 'changepoint' }
  | { readonly op: 'detect' | 'baseline' | 'getBaseline' | 'status' | 'delete' | 'results'; readonly org: OrgIndex; readonly kind: KeyKind; readonly machine: Machine }
  | { readonly op: 'telemetry'; readonly org: OrgIndex; readonly kind: KeyKind; readonly machine: Machine; readonly points: number }
  | { readonly op: 'machines' | 'usage' | 'summary' | 'keysList' | 'audit' | 'revokeOthers'; readonly org: OrgIndex; readonly kind: KeyKind }
  | { readonly op: 'keysCreate'; readonly org: OrgIndex; readonly kind: KeyKind; readonly newKind: KeyKind }
  | { readonly op: 'keysRevoke' | 'keysRotate'; readonly org: OrgIndex; readonly kind: KeyKind; readonly pick: number };

const org = fc.constantFrom<OrgIndex>(0, 1);
const kind = fc.constantFrom<KeyKind>('live', 'test');
const machine = fc.constantFrom<Machine>(...MACHINES);
const callArbitrary: fc.Arbitrary<Call> = fc.oneof(
  fc.record({ op: fc.constant('vendor' as const), org, kind, detect: fc.constantFrom('entire' as const, 'last' as const, 'changepoint' as const) }),
  fc.record({ op: fc.constantFrom('detect' as const, 'baseline' as const, 'getBaseline' as const, 'status' as const, 'delete' as const, 'results' as const), org, kind, machine }),
  fc.record({ op: fc.constant('telemetry' as const), org, kind, machine, points: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ op: fc.constantFrom('machines' as const, 'usage' as const, 'summary' as const, 'keysList' as const, 'audit' as const, 'revokeOthers' as const), org, kind }),
  fc.record({ op: fc.constant('keysCreate' as const), org, kind, newKind: kind }),
  fc.record({ op: fc.constantFrom('keysRevoke' as const, 'keysRotate' as const), org, kind, pick: fc.nat() }),
);

/** A key created through /v1/keys: active, rotated (expiring after its grace period) or revoked. */
type KeyState = 'active' | 'rotated' | 'revoked';

interface UsageCount {
  calls: number;
  points: number;
}

/** What one organization did, so what it may see. */
interface OrgModel {
  orgId: string;
  keys: Record<KeyKind, string>;
  keyIds: Set<string>;
  /** Keys created through /v1/keys, oldest first: the ones it revokes and rotates itself. */
  created: { id: string; state: KeyState }[];
  baselines: Set<Machine>;
  /** Machines it made a baseline for or sent telemetry for, since it last deleted them. */
  machines: Set<Machine>;
  /** Machines with telemetry since their last deletion (their results are not empty). */
  telemetry: Set<Machine>;
  /** [action, target], oldest first. */
  audit: [string, string][];
  /** kind -> endpoint label -> counts. */
  usage: Record<KeyKind, Map<string, UsageCount>>;
}

/** A bus whose producer plays the worker: each telemetry message becomes a result row of the org and machine its key names, with a value marking the org. */
function resultsBus(results: ResultStore, markers: Map<string, number>) {
  let ts = Date.UTC(2025, 0, 1);
  const producer: BusProducer = {
    send: async (_topic, messages) => {
      for (const message of messages) {
        const key = message.key ?? '';
        const slash = key.indexOf('/');
        const orgId = key.slice(0, slash);
        ts += 60_000;
        await results.insert([resultRow({ orgId, machineId: key.slice(slash + 1), tsMs: ts, value: markers.get(orgId) ?? -1 })]);
      }
    },
    close: () => Promise.resolve(),
  };
  return { producer: () => Promise.resolve(producer) };
}

function count(model: OrgModel, keyKind: KeyKind, endpoint: string, points: number): void {
  const entry = model.usage[keyKind].get(endpoint) ?? { calls: 0, points: 0 };
  model.usage[keyKind].set(endpoint, { calls: entry.calls + 1, points: entry.points + points });
}

/** Where one run's app keeps its state: a fresh store (and whatever else the configuration uses) per run. */
export interface IsolationBackend {
  config(env: Record<string, string>): ApiConfig;
  /** The store and notifier to build the app with; none: the embedded store under the config's DATA_DIR. */
  appOptions(): Promise<Pick<BuildAppOptions, 'store' | 'notifier'>>;
  /** Removes the run's state once its app is closed. */
  cleanup(): Promise<void>;
}

/** The embedded configuration: a temporary DATA_DIR per run. */
export async function embeddedIsolationBackend(): Promise<IsolationBackend> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-isolation-'));
  return {
    config: (env) => loadConfig({ DATA_DIR: dataDir, ...env }),
    appOptions: () => Promise.resolve({}),
    cleanup: () => rm(dataDir, { recursive: true, force: true }),
  };
}

async function runScenario(calls: readonly Call[], openBackend: () => Promise<IsolationBackend>): Promise<void> {
  const backend = await openBackend();
  const results = createMemoryResultStore();
  const markers = new Map<string, number>();
  let app: FastifyInstance | undefined;
  try {
    app = await buildApp(backend.config({ LOG_LEVEL: 'silent', ADMIN_TOKEN }), {
      ...(await backend.appOptions()),
      model: constantEnergyModel(1),
      bus: resultsBus(results, markers),
      results,
    });
    const server = app;
    const send = (method: 'GET' | 'POST' | 'DELETE', url: string, key: string, body?: unknown): Promise<LightMyRequestResponse> =>
      server.inject({
        method,
        url,
        headers: {
          ...(url.startsWith('/anomalydetector/') ? { 'ocp-apim-subscription-key': key } : { authorization: `Bearer ${key}` }),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      });

    const emptyModel = (orgId: string, live: string, test: string, keyIds: string[]): OrgModel => ({
      orgId,
      keys: { live, test },
      keyIds: new Set(keyIds),
      created: [],
      baselines: new Set(),
      machines: new Set(),
      telemetry: new Set(),
      audit: [],
      usage: { live: new Map(), test: new Map() },
    });
    const bootstrapKey = (keyKind: KeyKind) => server.bootstrap.createdKeys.find((key) => key.kind === keyKind);
    const first = emptyModel(
      server.bootstrap.organizationId,
      bootstrapKey('live')?.key ?? '',
      bootstrapKey('test')?.key ?? '',
      server.bootstrap.createdKeys.map((key) => key.keyId),
    );
    const created = await send('POST', '/admin/v1/organizations', ADMIN_TOKEN, { name: 'Second', plan: 'free' });
    expect(created.statusCode, created.body).toBe(201);
    const second = created.json<{ org_id: string; keys: { key: string; key_id: string; kind: KeyKind }[] }>();
    const secondKey = (keyKind: KeyKind) => second.keys.find((key) => key.kind === keyKind);
    const other = emptyModel(
      second.org_id,
      secondKey('live')?.key ?? '',
      secondKey('test')?.key ?? '',
      second.keys.map((key) => key.key_id),
    );
    other.audit.push(['organization.created', `organization:${second.org_id}`]);
    for (const key of second.keys) other.audit.push(['key.created', `key:${key.key_id}`]);
    const models: [OrgModel, OrgModel] = [first, other];
    markers.set(first.orgId, 1001);
    markers.set(other.orgId, 2002);

    const checkAudit = async (self: OrgModel): Promise<void> => {
      const response = await send('GET', '/v1/audit?limit=1000', self.keys.test);
      expect(response.statusCode, response.body).toBe(200);
      const events = response.json<{ events: { org_id: string; action: string; target: string; actor: { kind: string; id: string } }[] }>().events;
      for (const event of events) {
        expect(event.org_id).toBe(self.orgId);
        if (event.actor.kind === 'key') expect(self.keyIds.has(event.actor.id), event.actor.id).toBe(true);
        else expect(event.actor).toEqual({ kind: 'admin', id: 'admin' });
      }
      expect(events.reverse().map((event) => [event.action, event.target])).toEqual(self.audit);
    };

    const checkUsage = async (self: OrgModel): Promise<void> => {
      for (const query of ['?kind=live', '?kind=test', ''] as const) {
        const response = await send('GET', `/v1/usage${query}`, self.keys.test);
        expect(response.statusCode).toBe(200);
        const records = response.json<{ endpoint: string; total_points: number; call_count: number }[]>();
        const kinds: KeyKind[] = query === '?kind=live' ? ['live'] : query === '?kind=test' ? ['test'] : ['live', 'test'];
        const labels = new Set([...records.map((record) => record.endpoint), ...kinds.flatMap((k) => [...self.usage[k].keys()])]);
        for (const label of labels) {
          const expected = kinds.reduce(
            (sum, k) => ({ calls: sum.calls + (self.usage[k].get(label)?.calls ?? 0), points: sum.points + (self.usage[k].get(label)?.points ?? 0) }),
            { calls: 0, points: 0 },
          );
          const record = records.find((entry) => entry.endpoint === label);
          expect({ label, query, calls: record?.call_count ?? 0, points: record?.total_points ?? 0 }).toEqual({ label, query, ...expected });
        }
      }
    };

    const checkMachines = async (self: OrgModel): Promise<void> => {
      for (const id of MACHINES) {
        const baseline = await send('GET', `/v1/baseline?machine_id=${id}`, self.keys.test);
        expect(baseline.statusCode, `${self.orgId} baseline ${id}`).toBe(self.baselines.has(id) ? 200 : 404);
        const status = await send('GET', `/v1/status/${id}`, self.keys.test);
        expect(status.statusCode, `${self.orgId} status ${id}`).toBe(self.machines.has(id) ? 200 : 404);
      }
      // The default list has the machines with a baseline; include=telemetry adds every other known one.
      for (const [query, expected] of [['', self.baselines], ['?include=telemetry', self.machines]] as const) {
        const listed = await send('GET', `/v1/machines${query}`, self.keys.test);
        expect(listed.statusCode).toBe(200);
        const ids = listed.json<{ machines: { machine_id: string }[] }>().machines.map((entry) => entry.machine_id).sort();
        expect(ids, `${self.orgId} machines${query}`).toEqual([...expected].sort());
      }
    };

    for (const call of calls) {
      const self = models[call.org];
      const them = models[call.org === 0 ? 1 : 0];
      const key = self.keys[call.kind];
      const where = JSON.stringify(call);
      switch (call.op) {
        case 'vendor': {
          const response = await send('POST', `/anomalydetector/v1.1/timeseries/${call.detect}/detect`, key, { series: VENDOR_SERIES, granularity: 'hourly' });
          expect(response.statusCode, `${where} ${response.body}`).toBe(200);
          count(self, call.kind, `${call.detect}/detect`, VENDOR_SERIES.length);
          break;
        }
        case 'detect': {
          const response = await send('POST', '/v1/detect', key, { machine_id: call.machine, series: DETECT_SERIES });
          expect(response.statusCode, `${where} ${response.body}`).toBe(200);
          // Another organization's baseline of the same name is never used.
          expect(response.json<{ baseline_id: string | null }>().baseline_id !== null, where).toBe(self.baselines.has(call.machine));
          // Only a detection against a baseline is recorded: one without leaves no machine behind.
          count(self, call.kind, 'v1/detect', DETECT_SERIES.length);
          break;
        }
        case 'baseline': {
          const response = await send('POST', '/v1/baseline', key, { machine_id: call.machine, energies: ENERGIES });
          expect(response.statusCode, `${where} ${response.body}`).toBe(200);
          count(self, call.kind, 'v1/baseline', ENERGIES.length);
          self.audit.push([self.baselines.has(call.machine) ? 'baseline.updated' : 'baseline.created', `machine:${call.machine}`]);
          self.baselines.add(call.machine);
          self.machines.add(call.machine);
          break;
        }
        case 'getBaseline': {
          const response = await send('GET', `/v1/baseline?machine_id=${call.machine}`, key);
          expect(response.statusCode, where).toBe(self.baselines.has(call.machine) ? 200 : 404);
          break;
        }
        case 'status': {
          const response = await send('GET', `/v1/status/${call.machine}`, key);
          expect(response.statusCode, where).toBe(self.machines.has(call.machine) ? 200 : 404);
          break;
        }
        case 'delete': {
          const response = await send('DELETE', `/v1/machines/${call.machine}`, key);
          if (!self.machines.has(call.machine)) {
            expect(response.statusCode, where).toBe(404);
            break;
          }
          expect(response.statusCode, `${where} ${response.body}`).toBe(200);
          const hadBaseline = self.baselines.has(call.machine);
          expect(response.json<{ baseline_deleted: boolean }>().baseline_deleted, where).toBe(hadBaseline);
          self.audit.push([hadBaseline ? 'baseline.deleted' : 'machine.deleted', `machine:${call.machine}`]);
          self.baselines.delete(call.machine);
          self.machines.delete(call.machine);
          self.telemetry.delete(call.machine);
          break;
        }
        case 'telemetry': {
          const points = Array.from({ length: call.points }, (_, i) => ({ timestamp: new Date(Date.UTC(2025, 0, 1, 0, i)).toISOString(), value: 5 + i }));
          const response = await send('POST', '/v1/telemetry', key, { machine_id: call.machine, points });
          expect(response.statusCode, `${where} ${response.body}`).toBe(202);
          count(self, call.kind, 'telemetry', call.points);
          self.machines.add(call.machine);
          self.telemetry.add(call.machine);
          break;
        }
        case 'results': {
          const response = await send('GET', `/v1/machines/${call.machine}/results`, key);
          if (!self.machines.has(call.machine)) {
            expect(response.statusCode, where).toBe(404);
            break;
          }
          expect(response.statusCode, where).toBe(200);
          const rows = response.json<{ results: { value: number }[] }>().results;
          expect(rows.length > 0, where).toBe(self.telemetry.has(call.machine));
          for (const row of rows) expect(row.value, where).toBe(markers.get(self.orgId));
          break;
        }
        case 'machines':
          await checkMachines(self);
          break;
        case 'usage':
          await checkUsage(self);
          break;
        case 'summary': {
          const response = await send('GET', '/v1/usage/summary', key);
          expect(response.statusCode).toBe(200);
          const summary = response.json<{ org_id: string; total_points: number; call_count: number }>();
          const totals = [...self.usage.live.values(), ...self.usage.test.values()].reduce(
            (sum, entry) => ({ calls: sum.calls + entry.calls, points: sum.points + entry.points }),
            { calls: 0, points: 0 },
          );
          expect({ org: summary.org_id, calls: summary.call_count, points: summary.total_points }).toEqual({ org: self.orgId, ...totals });
          break;
        }
        case 'keysList': {
          const response = await send('GET', '/v1/keys', key);
          if (call.kind === 'test') {
            expect(response.statusCode, where).toBe(403);
            break;
          }
          expect(response.statusCode, where).toBe(200);
          const ids = response.json<{ keys: { key_id: string }[] }>().keys.map((entry) => entry.key_id).sort();
          expect(ids).toEqual([...self.keyIds].sort());
          break;
        }
        case 'keysCreate': {
          const response = await send('POST', '/v1/keys', key, { kind: call.newKind, name: 'isolation' });
          if (call.kind === 'test') {
            expect(response.statusCode, where).toBe(403);
            break;
          }
          expect(response.statusCode, where).toBe(201);
          const keyId = response.json<{ key_id: string }>().key_id;
          self.keyIds.add(keyId);
          self.created.push({ id: keyId, state: 'active' });
          self.audit.push(['key.created', `key:${keyId}`]);
          break;
        }
        case 'keysRevoke':
        case 'keysRotate': {
          const target = self.created[call.pick % Math.max(1, self.created.length)];
          if (!target) break;
          if (call.op === 'keysRevoke') {
            const response = await send('DELETE', `/v1/keys/${target.id}`, key);
            if (call.kind === 'test') {
              expect(response.statusCode, where).toBe(403);
              break;
            }
            expect(response.statusCode, `${where} ${response.body}`).toBe(200);
            if (target.state !== 'revoked') self.audit.push(['key.revoked', `key:${target.id}`]);
            target.state = 'revoked';
            break;
          }
          const response = await send('POST', `/v1/keys/${target.id}/rotate`, key, { grace_seconds: 60 });
          if (call.kind === 'test') {
            expect(response.statusCode, where).toBe(403);
            break;
          }
          if (target.state !== 'active') {
            expect(response.statusCode, `${where} ${response.body}`).toBe(409);
            break;
          }
          expect(response.statusCode, `${where} ${response.body}`).toBe(201);
          const successor = response.json<{ key_id: string }>().key_id;
          target.state = 'rotated';
          self.keyIds.add(successor);
          self.created.push({ id: successor, state: 'active' });
          self.audit.push(['key.rotated', `key:${target.id}`], ['key.created', `key:${successor}`]);
          break;
        }
        case 'revokeOthers': {
          // Every key of the other organization, by its id: never found, never revoked.
          for (const keyId of them.keyIds) {
            const response = await send('DELETE', `/v1/keys/${keyId}`, key);
            expect(response.statusCode, where).toBe(call.kind === 'test' ? 403 : 404);
            const rotated = await send('POST', `/v1/keys/${keyId}/rotate`, key, {});
            expect(rotated.statusCode, where).toBe(call.kind === 'test' ? 403 : 404);
          }
          for (const keyKind of ['live', 'test'] as const) {
            expect((await send('GET', '/v1/usage', them.keys[keyKind])).statusCode, where).toBe(200);
          }
          break;
        }
        case 'audit':
          await checkAudit(self);
          break;
      }
    }

    // Whatever happened, each organization sees exactly its own world. The checks' own calls are
    // reads with test keys: they count nothing.
    for (const self of models) {
      await checkMachines(self);
      await checkUsage(self);
      await checkAudit(self);
    }
  } finally {
    await app?.close();
    await results.close();
    await backend.cleanup();
  }
}

/** The property over apps on `openBackend`'s state, a fresh one per run. */
export function describeIsolation(name: string, openBackend: () => Promise<IsolationBackend>): void {
  describe(`organization isolation (property-based, ${name})`, () => {
    it('never lets a read, write, delete, usage count or audit event cross between two organizations', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(callArbitrary, { minLength: 1, maxLength: MAX_CALLS }), async (calls) => {
          await runScenario(calls, openBackend);
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true },
      );
    }, 600_000);
  });
}
