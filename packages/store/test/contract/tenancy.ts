// The tenancy port's contract (organizations and API keys), for every backend.
import { describe, expect, it } from 'vitest';
import { DEFAULT_ORGANIZATION_ID } from '@adp/store';
import { newKey, sha256, useBackend, type StoreBackend } from './backend.js';

export function describeTenancyContract(name: string, backend: StoreBackend): void {
  describe(`${name}: TenancyStore contract`, () => {
    const openStore = useBackend(backend);

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

    it('treats hostile strings as values, not SQL', async () => {
      const store = await openStore();
      const hostile = "x'); DROP TABLE api_keys; --";
      expect(await store.findApiKeyByHash(hostile)).toBeNull();
      expect(await store.listApiKeys(DEFAULT_ORGANIZATION_ID)).toEqual([]);
    });

    it('keeps keys across a restart', async () => {
      const first = await backend.open();
      const org = await first.ensureDefaultOrganization();
      const { key } = await first.createApiKey(org.id, newKey('svc_test_persisted0000000'));
      await first.close();

      const second = await openStore();
      expect(await second.findApiKeyByHash(key.keyHash)).toEqual(key);
    });
  });
}
