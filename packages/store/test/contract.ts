// The behaviour every Store implementation must have. Each implementation's test file calls
// describeStoreContract with a backend that gives every test a fresh, isolated database.
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_ORGANIZATION_ID, StoreError, type NewApiKey, type Store } from '@adp/store';

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

    it('creates the default organization once', async () => {
      const store = await openStore();
      const first = await store.ensureDefaultOrganization();
      const second = await store.ensureDefaultOrganization();
      expect(first.id).toBe(DEFAULT_ORGANIZATION_ID);
      expect(second).toEqual(first);
      expect(first.bootstrappedAt).toBeNull();
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
