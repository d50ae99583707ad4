// The behaviour every Store implementation must have. Each implementation's test file calls
// describeStoreContract with a backend that gives every test a fresh, isolated database.
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_ORGANIZATION_ID,
  RECENT_DETECTIONS_KEPT,
  StoreError,
  type NewApiKey,
  type NewBaseline,
  type RegimeCounts,
  type Store,
} from '@adp/store';

export interface StoreBackend {
  /** Prepares an empty, isolated database for one test. */
  setUp(): Promise<void>;
  /** Opens a store on the current test's database; called again after close to check persistence. */
  open(options?: { now?: () => Date }): Promise<Store>;
  /** Removes the test's database. Stores are closed before this runs. */
  tearDown(): Promise<void>;
}

export const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
export const newKey = (plaintext: string, kind: 'live' | 'test' = 'test'): NewApiKey => ({
  kind,
  keyHash: sha256(plaintext),
  prefix: plaintext.slice(0, 13),
});

export function baselineFor(machineId: string, overrides: Partial<NewBaseline> = {}): NewBaseline {
  return {
    machineId,
    baselineId: `bl_${machineId}`,
    label: 'pump',
    granularity: 'minutely',
    sensitivity: 90,
    stats: { energyMean: 0.5, energyStd: 0.25, energyP99: 1.5, numWindows: 90, seriesLength: 120 },
    fineTuneStats: {
      status: 'completed',
      finalLoss: 0.125,
      epochsRun: 12,
      epochsMax: 50,
      earlyStopped: true,
      windows: 90,
      durationSeconds: 0.75,
    },
    predictorWeights: new Uint8Array([0, 1, 2, 255, 254, 39, 0]),
    normalisation: { center: 10, scale: 2.5 },
    ...overrides,
  };
}

const regimes = (counts: Partial<RegimeCounts>): RegimeCounts => ({
  HEALTHY: 0,
  ACTIVE: 0,
  TRANSITION: 0,
  SHOCK: 0,
  UNKNOWN: 0,
  ...counts,
});

export function describeStoreContract(name: string, backend: StoreBackend): void {
  describe(`${name}: Store contract`, () => {
    const opened: Store[] = [];
    const openStore = async (now?: () => Date): Promise<Store> => {
      const store = await backend.open(now ? { now } : {});
      opened.push(store);
      return store;
    };

    beforeEach(async () => {
      await backend.setUp();
    });
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((store) => store.close()));
      await backend.tearDown();
    });

    it('creates organizations with a plan and an external id; existing ones and the default are paid', async () => {
      const store = await openStore();
      const defaults = await store.ensureDefaultOrganization();
      expect(defaults).toMatchObject({ plan: 'paid', externalId: null, disabledAt: null });
      const free = await store.createOrganization('org_free', 'Free Co', { plan: 'free', externalId: "ext'; --" });
      expect(free).toMatchObject({ id: 'org_free', name: 'Free Co', plan: 'free', externalId: "ext'; --", disabledAt: null });
      expect(await store.createOrganization('org_paid', 'Paid Co')).toMatchObject({ plan: 'paid', externalId: null });
      expect(await store.getOrganization('org_free')).toEqual(free);
      expect(await store.getOrganization('org_unknown')).toBeNull();
      expect(await store.findOrganizationByExternalId("ext'; --")).toEqual(free);
      expect(await store.findOrganizationByExternalId('nobody')).toBeNull();
      expect((await store.listOrganizations()).map((org) => org.id).sort()).toEqual([DEFAULT_ORGANIZATION_ID, 'org_free', 'org_paid'].sort());
      await expect(store.createOrganization('org_x', 'X', { plan: 'gold' as 'free' })).rejects.toMatchObject({
        code: 'STORE_INVALID_ARGUMENT',
      });
    });

    it('disables an organization once; the mark and the plan survive a bootstrap and a reopen', async () => {
      const at = new Date('2026-02-03T04:05:06.007Z');
      const store = await openStore(() => at);
      await store.createOrganization('org_gone', 'Gone', { plan: 'free' });
      expect(await store.disableOrganization('org_gone')).toBe(true);
      expect(await store.disableOrganization('org_gone')).toBe(false);
      expect(await store.disableOrganization('org_unknown')).toBe(false);
      const org = await store.ensureDefaultOrganization();
      await store.completeBootstrap(org.id, [newKey('svc_test_plansurvive000000')]);
      await store.close();
      const reopened = await openStore(() => at);
      expect(await reopened.getOrganization('org_gone')).toMatchObject({ plan: 'free', disabledAt: at });
      expect(await reopened.getOrganization(org.id)).toMatchObject({ plan: 'paid', disabledAt: null });
    });

    it('names keys and expires them once, not after a revocation', async () => {
      const at = new Date('2026-02-03T04:05:06.007Z');
      const expiry = new Date('2026-02-03T05:05:06.007Z');
      const store = await openStore(() => at);
      const org = await store.ensureDefaultOrganization();
      const { key } = await store.createApiKey(org.id, { ...newKey('svc_live_named0000000000', 'live'), name: 'ci deploys' });
      expect(key).toMatchObject({ name: 'ci deploys', expiresAt: null });
      const { key: plain } = await store.createApiKey(org.id, newKey('svc_test_unnamed00000000'));
      expect(plain.name).toBe('');
      expect(await store.expireApiKey(key.id, expiry)).toBe(true);
      expect(await store.expireApiKey(key.id, expiry)).toBe(false);
      expect(await store.expireApiKey('key_unknown', expiry)).toBe(false);
      await store.revokeApiKey(plain.id);
      expect(await store.expireApiKey(plain.id, expiry)).toBe(false);
      const found = await store.findApiKeyByHash(key.keyHash);
      expect(found).toMatchObject({ id: key.id, name: 'ci deploys', expiresAt: expiry, revokedAt: null, createdAt: at });
      await store.close();
      const reopened = await openStore(() => at);
      const listed = await reopened.listApiKeys(org.id);
      expect(listed.find((candidate) => candidate.id === key.id)).toMatchObject({ name: 'ci deploys', expiresAt: expiry, createdAt: at });
      expect(listed.find((candidate) => candidate.id === plain.id)).toMatchObject({ expiresAt: null });
    });

    it('keeps usage per key kind and UTC day: all of it by default, one kind or a month on request', async () => {
      let now = new Date('2026-01-31T23:59:59.000Z');
      const store = await openStore(() => now);
      await store.recordUsage('org_k', 'entire/detect', 10);
      await store.recordUsage('org_k', 'entire/detect', 5, 'test');
      now = new Date('2026-02-01T00:00:00.000Z');
      await Promise.all([store.recordUsage('org_k', 'entire/detect', 7, 'live'), store.recordUsage('org_k', 'last/detect', 3, 'test')]);
      expect(await store.usageFor('org_k')).toEqual({
        orgId: 'org_k',
        points: 25,
        calls: 4,
        byEndpoint: [
          { endpoint: 'entire/detect', points: 22, calls: 3 },
          { endpoint: 'last/detect', points: 3, calls: 1 },
        ],
      });
      expect(await store.usageFor('org_k', { keyKind: 'live' })).toMatchObject({ points: 17, calls: 2 });
      expect(await store.usageFor('org_k', { keyKind: 'test' })).toMatchObject({ points: 8, calls: 2 });
      const february = new Date('2026-02-01T00:00:00.000Z');
      expect(await store.usageFor('org_k', { keyKind: 'live', since: february })).toMatchObject({ points: 7, calls: 1 });
      expect(await store.usageFor('org_k', { since: new Date('2026-02-14T12:00:00.000Z') })).toMatchObject({ points: 0, calls: 0 });
      await expect(store.recordUsage('org_k', 'entire/detect', 1, 'gold' as 'live')).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
    });

    it('creates the default organization once', async () => {
      const store = await openStore();
      const first = await store.ensureDefaultOrganization();
      const second = await store.ensureDefaultOrganization();
      expect(first.id).toBe(DEFAULT_ORGANIZATION_ID);
      expect(second).toEqual(first);
      expect(first.bootstrappedAt).toBeNull();
    });

    it('looks an organization up by id, null when there is none', async () => {
      const store = await openStore();
      const created = await store.createOrganization('org_lookup', 'Lookup');
      expect(await store.getOrganization('org_lookup')).toEqual(created);
      expect(await store.getOrganization('org_missing')).toBeNull();
      expect(await store.getOrganization("org_lookup' OR '1'='1")).toBeNull();
    });

    it('creates further organizations idempotently, with keys of their own', async () => {
      const store = await openStore();
      const created = await store.createOrganization('org_second', 'Second');
      expect(created).toMatchObject({ id: 'org_second', name: 'Second' });
      expect(created.bootstrappedAt).toBeInstanceOf(Date);
      expect(await store.createOrganization('org_second', 'Renamed')).toEqual(created);
      const { key } = await store.createApiKey('org_second', newKey('svc_test_secondorg0000000'));
      expect(key.orgId).toBe('org_second');
      await expect(store.createOrganization('', 'x')).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
    });

    it('completes the bootstrap exactly once', async () => {
      const store = await openStore();
      const org = await store.ensureDefaultOrganization();
      const keys = await store.completeBootstrap(org.id, [
        newKey('svc_test_aaaaaaaaaaaaaaaa'),
        newKey('svc_live_bbbbbbbbbbbbbbbb', 'live'),
      ]);
      expect(keys?.map((key) => key.kind)).toEqual(['test', 'live']);
      expect((await store.ensureDefaultOrganization()).bootstrappedAt).toBeInstanceOf(Date);
      expect(await store.completeBootstrap(org.id, [newKey('svc_test_cccccccccccccccc')])).toBeNull();
      expect(await store.listApiKeys(org.id)).toHaveLength(2);
    });

    it('creates keys idempotently by hash and finds them by hash', async () => {
      const store = await openStore();
      const org = await store.ensureDefaultOrganization();
      const created = await store.createApiKey(org.id, newKey('svc_live_0123456789abcdef', 'live'));
      const again = await store.createApiKey(org.id, newKey('svc_live_0123456789abcdef', 'live'));
      expect(created.created).toBe(true);
      expect(again).toEqual({ key: created.key, created: false });
      expect(created.key).toMatchObject({ orgId: org.id, kind: 'live', prefix: 'svc_live_0123', revokedAt: null });
      expect(await store.findApiKeyByHash(sha256('svc_live_0123456789abcdef'))).toEqual(created.key);
      expect(await store.findApiKeyByHash(sha256('svc_live_unknown'))).toBeNull();
    });

    it('refuses keys for unknown organizations and malformed hashes', async () => {
      const store = await openStore();
      await expect(store.createApiKey('org_nope', newKey('svc_test_aaaaaaaaaaaaaaaa'))).rejects.toMatchObject({
        code: 'STORE_INVALID_ARGUMENT',
      });
      const org = await store.ensureDefaultOrganization();
      await expect(
        store.createApiKey(org.id, { kind: 'test', keyHash: 'plaintext!', prefix: 'x' }),
      ).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
    });

    it('treats hostile strings as values, not SQL', async () => {
      const store = await openStore();
      const hostile = "x'); DROP TABLE api_keys; --";
      expect(await store.findApiKeyByHash(hostile)).toBeNull();
      await store.recordUsage(hostile, hostile, 1);
      expect((await store.usageFor(hostile)).byEndpoint).toEqual([{ endpoint: hostile, points: 1, calls: 1 }]);
      expect(await store.listApiKeys(DEFAULT_ORGANIZATION_ID)).toEqual([]);
    });

    it('revokes and touches keys', async () => {
      const at = new Date('2025-03-04T05:06:07.890Z');
      const store = await openStore(() => at);
      const org = await store.ensureDefaultOrganization();
      const { key } = await store.createApiKey(org.id, newKey('svc_test_revokeme00000000'));
      await store.touchApiKey(key.id, at);
      expect(await store.revokeApiKey(key.id)).toBe(true);
      expect(await store.revokeApiKey(key.id)).toBe(false);
      expect(await store.revokeApiKey('key_unknown')).toBe(false);
      const found = await store.findApiKeyByHash(key.keyHash);
      expect(found?.revokedAt?.toISOString()).toBe(at.toISOString());
      expect(found?.lastUsedAt?.toISOString()).toBe(at.toISOString());
    });

    it('counts 50 concurrent usage writes without losing any', async () => {
      const store = await openStore();
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          store.recordUsage('org_a', i % 2 ? 'entire/detect' : 'last/detect', i + 1),
        ),
      );
      const usage = await store.usageFor('org_a');
      expect(usage.calls).toBe(50);
      expect(usage.points).toBe((50 * 51) / 2);
      expect(usage.byEndpoint).toEqual([
        { endpoint: 'entire/detect', points: 25 * 26, calls: 25 },
        { endpoint: 'last/detect', points: 25 * 25, calls: 25 },
      ]);
      expect((await store.usageFor('org_b')).calls).toBe(0);
    });

    it('counts rounds of concurrent usage over many organizations and endpoints, batch after batch', async () => {
      const store = await openStore();
      const endpoints = ['entire/detect', 'last/detect', 'changepoint/detect'];
      const orgs = ['org_a', 'org_b', 'org_c', 'org_d'];
      // Rounds of 12 distinct keys (more than a flush keeps a prepared statement for), of 2, of 1,
      // and 12 again: each round's writes land in one or more flushes of that many keys.
      const rounds = [12, 2, 1, 12];
      for (const keys of rounds) {
        await Promise.all(
          Array.from({ length: keys }, (_, k) => store.recordUsage(orgs[k % 4]!, endpoints[Math.floor(k / 4) % 3]!, k + 1)),
        );
      }
      const expected = new Map<string, { points: number; calls: number }>();
      for (const keys of rounds) {
        for (let k = 0; k < keys; k++) {
          const total = expected.get(orgs[k % 4]!) ?? { points: 0, calls: 0 };
          expected.set(orgs[k % 4]!, { points: total.points + k + 1, calls: total.calls + 1 });
        }
      }
      for (const org of orgs) {
        const usage = await store.usageFor(org);
        expect({ points: usage.points, calls: usage.calls }, org).toEqual(expected.get(org));
      }
      expect((await store.usageFor('org_a')).byEndpoint).toEqual([
        // org_a's writes are k = 0 (entire, 1 point; in every round), 4 (last, 5) and 8 (changepoint, 9).
        { endpoint: 'changepoint/detect', points: 9 * 2, calls: 2 },
        { endpoint: 'entire/detect', points: 1 * 4, calls: 4 },
        { endpoint: 'last/detect', points: 5 * 2, calls: 2 },
      ]);
    });

    it('counts sequential calls, each its own flush, on a known key and on new ones', async () => {
      const store = await openStore();
      for (let i = 1; i <= 5; i++) await store.recordUsage('org_a', 'last/detect', i);
      await store.recordUsage('org_a', 'entire/detect', 100);
      await store.recordUsage('org_a', 'last/detect', 10);
      await store.recordUsage('org_b', 'last/detect', 7);
      expect(await store.usageFor('org_a')).toEqual({
        orgId: 'org_a',
        points: 15 + 100 + 10,
        calls: 7,
        byEndpoint: [
          { endpoint: 'entire/detect', points: 100, calls: 1 },
          { endpoint: 'last/detect', points: 25, calls: 6 },
        ],
      });
      expect((await store.usageFor('org_b')).points).toBe(7);
    });

    it('keeps usage per organization and across days', async () => {
      let now = new Date('2025-01-01T23:59:59Z');
      const store = await openStore(() => now);
      await store.recordUsage('org_a', 'entire/detect', 10);
      now = new Date('2025-01-02T00:00:01Z');
      await store.recordUsage('org_a', 'entire/detect', 5);
      await store.recordUsage('org_b', 'entire/detect', 7);
      expect(await store.usageFor('org_a')).toEqual({
        orgId: 'org_a',
        points: 15,
        calls: 2,
        byEndpoint: [{ endpoint: 'entire/detect', points: 15, calls: 2 }],
      });
    });

    it('rejects invalid usage', async () => {
      const store = await openStore();
      for (const points of [-1, 1.5, Number.NaN]) {
        await expect(store.recordUsage('org_a', 'entire/detect', points)).rejects.toMatchObject({
          code: 'STORE_INVALID_ARGUMENT',
        });
      }
      await expect(store.recordUsage('', 'entire/detect', 1)).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
    });

    it('keeps keys and usage across a restart', async () => {
      const first = await backend.open();
      const org = await first.ensureDefaultOrganization();
      const { key } = await first.createApiKey(org.id, newKey('svc_test_persisted0000000'));
      await Promise.all(Array.from({ length: 20 }, () => first.recordUsage(org.id, 'changepoint/detect', 3)));
      await first.close();

      const second = await openStore();
      expect(await second.findApiKeyByHash(key.keyHash)).toEqual(key);
      expect((await second.usageFor(org.id)).points).toBe(60);
    });

    it('writes usage accepted before close', async () => {
      const first = await backend.open();
      const writes = Array.from({ length: 10 }, () => first.recordUsage('org_a', 'last/detect', 1));
      await first.close();
      await Promise.all(writes);
      const second = await openStore();
      expect((await second.usageFor('org_a')).calls).toBe(10);
    });

    it('creates, reads and replaces a baseline, keeping created_at and the weights', async () => {
      let now = new Date('2025-05-01T00:00:00Z');
      const store = await openStore(() => now);
      const first = await store.upsertBaseline('org_a', baselineFor('pump-1'));
      expect(first).toMatchObject({ orgId: 'org_a', machineId: 'pump-1', baselineId: 'bl_pump-1', label: 'pump' });
      expect(first.createdAt.toISOString()).toBe('2025-05-01T00:00:00.000Z');
      expect(Array.from(first.predictorWeights ?? [])).toEqual([0, 1, 2, 255, 254, 39, 0]);
      expect(await store.getBaseline('org_a', 'pump-1')).toEqual(first);

      now = new Date('2025-05-02T00:00:00Z');
      const replaced = await store.upsertBaseline(
        'org_a',
        baselineFor('pump-1', {
          label: null,
          granularity: null,
          sensitivity: null,
          predictorWeights: null,
          normalisation: null,
          fineTuneStats: { ...baselineFor('x').fineTuneStats, status: 'skipped', finalLoss: null },
        }),
      );
      expect(replaced.createdAt).toEqual(first.createdAt);
      expect(replaced.updatedAt.toISOString()).toBe('2025-05-02T00:00:00.000Z');
      expect(replaced).toMatchObject({ label: null, predictorWeights: null, normalisation: null });
      expect(replaced.fineTuneStats).toMatchObject({ status: 'skipped', finalLoss: null });
      expect(await store.listMachines('org_a')).toHaveLength(1);
    });

    it('stores whole-number doubles past the int64 range, and tiny ones, exactly', async () => {
      const store = await openStore();
      const huge = baselineFor('pump-big', {
        stats: { energyMean: 1e20, energyStd: 2 ** 64, energyP99: 1e150, numWindows: 90, seriesLength: 120 },
        fineTuneStats: { ...baselineFor('x').fineTuneStats, finalLoss: 1e19, durationSeconds: 3e18 },
        normalisation: { center: -1e300, scale: 5e-324 },
      });
      const stored = await store.upsertBaseline('org_a', huge);
      expect(stored.stats).toEqual(huge.stats);
      expect(stored.fineTuneStats).toEqual(huge.fineTuneStats);
      expect(stored.normalisation).toEqual(huge.normalisation);
      expect(await store.getBaseline('org_a', 'pump-big')).toEqual(stored);
    });

    it("keeps a multivariate baseline's channels, lists them, and clears them when replaced without", async () => {
      const store = await openStore();
      const plain = await store.upsertBaseline('org_a', baselineFor('single'));
      expect(plain.channels).toBeNull();
      const multi = await store.upsertBaseline('org_a', baselineFor('rig', { channels: ['temp', 'rpm.1'] }));
      expect(multi.channels).toEqual(['temp', 'rpm.1']);
      expect(await store.getBaseline('org_a', 'rig')).toEqual(multi);
      expect((await store.listMachines('org_a')).map((machine) => [machine.machineId, machine.channels])).toEqual([
        ['rig', ['temp', 'rpm.1']],
        ['single', null],
      ]);
      const replaced = await store.upsertBaseline('org_a', baselineFor('rig'));
      expect(replaced.channels).toBeNull();
      expect((await store.getBaseline('org_a', 'rig'))?.channels).toBeNull();
      await expect(store.upsertBaseline('org_a', baselineFor('rig', { channels: [] }))).rejects.toMatchObject({
        code: 'STORE_INVALID_ARGUMENT',
      });
    });

    it('keeps machines per organization', async () => {
      const store = await openStore();
      await store.upsertBaseline('org_a', baselineFor('shared-id'));
      expect(await store.getBaseline('org_b', 'shared-id')).toBeNull();
      expect(await store.listMachines('org_b')).toEqual([]);
      expect(await store.machineStatus('org_b', 'shared-id')).toBeNull();
      expect(await store.deleteMachine('org_b', 'shared-id')).toEqual({ deleted: false, baselineDeleted: false });
      expect(await store.getBaseline('org_a', 'shared-id')).not.toBeNull();
    });

    it('lists machines with and without baselines, and deletes them with their data', async () => {
      const store = await openStore();
      await store.upsertBaseline('org_a', baselineFor('b-machine'));
      await store.recordDetection('org_a', 'a-seen', { points: 12, withBaseline: false, regimeCounts: regimes({ UNKNOWN: 12 }) });
      const machines = await store.listMachines('org_a');
      expect(machines.map((machine) => [machine.machineId, machine.numWindows, machine.label])).toEqual([
        ['a-seen', null, null],
        ['b-machine', 90, 'pump'],
      ]);
      expect(machines[0]?.baselineCreatedAt).toBeNull();
      expect(machines[1]?.baselineCreatedAt).toBeInstanceOf(Date);

      expect(await store.deleteMachine('org_a', 'b-machine')).toEqual({ deleted: true, baselineDeleted: true });
      expect(await store.deleteMachine('org_a', 'a-seen')).toEqual({ deleted: true, baselineDeleted: false });
      expect(await store.deleteMachine('org_a', 'a-seen')).toEqual({ deleted: false, baselineDeleted: false });
      expect(await store.getBaseline('org_a', 'b-machine')).toBeNull();
      expect(await store.machineStatus('org_a', 'a-seen')).toBeNull();
      expect(await store.listMachines('org_a')).toEqual([]);
    });

    it('counts detections since the baseline and keeps the most recent ones', async () => {
      let now = new Date('2025-06-01T00:00:00Z');
      const store = await openStore(() => now);
      await store.recordDetection('org_a', 'm1', { points: 10, withBaseline: false, regimeCounts: regimes({ UNKNOWN: 10 }) });
      now = new Date('2025-06-01T01:00:00Z');
      await store.upsertBaseline('org_a', baselineFor('m1'));
      for (let i = 0; i < RECENT_DETECTIONS_KEPT + 5; i++) {
        now = new Date(Date.UTC(2025, 5, 1, 2, i));
        await store.recordDetection('org_a', 'm1', {
          points: 100,
          withBaseline: true,
          regimeCounts: regimes({ HEALTHY: 97, ACTIVE: 1, TRANSITION: 1, SHOCK: i % 2 }),
        });
      }
      const status = await store.machineStatus('org_a', 'm1');
      expect(status).toMatchObject({
        machineId: 'm1',
        detectionsSince: RECENT_DETECTIONS_KEPT + 5,
        pointsSince: (RECENT_DETECTIONS_KEPT + 5) * 100,
      });
      expect(status?.firstSeenAt.toISOString()).toBe('2025-06-01T00:00:00.000Z');
      expect(status?.countersSince.toISOString()).toBe('2025-06-01T01:00:00.000Z');
      expect(status?.lastDetectionAt?.toISOString()).toBe(now.toISOString());
      expect(status?.baseline?.baselineId).toBe('bl_m1');
      expect(status?.recentDetections).toHaveLength(RECENT_DETECTIONS_KEPT);
      expect(status?.recentDetections[0]?.at.toISOString()).toBe(now.toISOString());
      expect(status?.recentDetections[0]?.regimeCounts).toEqual(regimes({ HEALTHY: 97, ACTIVE: 1, TRANSITION: 1, SHOCK: 0 }));
    });

    it('refuses invalid baselines and detections', async () => {
      const store = await openStore();
      await expect(store.upsertBaseline('', baselineFor('m'))).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
      await expect(
        store.upsertBaseline('org_a', baselineFor('m', { stats: { ...baselineFor('m').stats, energyMean: Number.NaN } })),
      ).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
      await expect(store.upsertBaseline('org_a', baselineFor('m', { normalisation: null }))).rejects.toMatchObject({
        code: 'STORE_INVALID_ARGUMENT',
      });
      await expect(
        store.recordDetection('org_a', 'm', { points: -1, withBaseline: false, regimeCounts: regimes({}) }),
      ).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
      await expect(
        store.recordDetection('org_a', 'm', { points: 1, withBaseline: false, regimeCounts: regimes({ SHOCK: 0.5 }) }),
      ).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
      expect(await store.listMachines('org_a')).toEqual([]);
    });

    it('treats hostile machine ids as values', async () => {
      const store = await openStore();
      const hostile = "m'); DROP TABLE baselines; --";
      await store.upsertBaseline('org_a', baselineFor(hostile));
      expect((await store.getBaseline('org_a', hostile))?.machineId).toBe(hostile);
    });

    it('keeps baselines and weights across a restart', async () => {
      const first = await backend.open();
      const written = await first.upsertBaseline('org_a', baselineFor('persisted'));
      await first.close();
      const second = await openStore();
      expect(await second.getBaseline('org_a', 'persisted')).toEqual(written);
    });

    it('refuses work after close and closes idempotently', async () => {
      const store = await backend.open();
      await store.ping();
      await store.close();
      await store.close();
      await expect(store.ping()).rejects.toMatchObject({ code: 'STORE_CLOSED', retriable: false });
      await expect(store.recordUsage('org_a', 'x', 1)).rejects.toBeInstanceOf(StoreError);
      await expect(store.findApiKeyByHash(sha256('x'))).rejects.toMatchObject({ code: 'STORE_CLOSED' });
    });
  });
}
