// The behaviour every AccountStore adapter must have (part of describeStoreContracts, so both
// backends run it).
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreError, type AccountStore, type DashboardSession, type Store } from '@adp/store';
import type { StoreBackend } from './backend.js';

const T0 = Date.UTC(2026, 2, 3, 4, 5, 6, 789);
const hash = (text: string): string => createHash('sha256').update(text).digest('hex');

function session(overrides: Partial<DashboardSession> = {}): DashboardSession {
  return {
    tokenHash: hash('token-1'),
    orgId: 'org_a',
    subject: 'user_1',
    displayName: 'ana@example.com',
    method: 'password',
    createdAt: new Date(T0),
    expiresAt: new Date(T0 + 3_600_000),
    ...overrides,
  };
}

export function describeAccountsContract(name: string, backend: StoreBackend): void {
  describe(`${name}: AccountStore contract`, () => {
    const opened: Store[] = [];
    const open = async (): Promise<AccountStore> => {
      const store = await backend.open();
      opened.push(store);
      if (!store.accounts) throw new Error('the store has no accounts');
      return store.accounts;
    };

    beforeEach(async () => {
      await backend.setUp();
    });
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((store) => store.close()));
      await backend.tearDown();
    });

    it('creates an account once per email and finds it in any case', async () => {
      const accounts = await open();
      const first = await accounts.createUser({ userId: 'user_1', orgId: 'org_a', email: 'ana@example.com', passwordHash: '$argon2id$one' }, new Date(T0));
      expect(first).toEqual({
        created: true,
        user: { userId: 'user_1', orgId: 'org_a', email: 'ana@example.com', passwordHash: '$argon2id$one', createdAt: new Date(T0) },
      });
      const again = await accounts.createUser({ userId: 'user_2', orgId: 'org_b', email: 'ana@example.com', passwordHash: '$argon2id$two' }, new Date(T0 + 1));
      expect(again.created).toBe(false);
      expect(again.user.userId).toBe('user_1');
      expect(await accounts.findUserByEmail('  ANA@Example.com ')).toEqual(first.user);
      expect(await accounts.findUserByEmail('bob@example.com')).toBeNull();
      expect(await accounts.countUsers('org_a')).toBe(1);
      expect(await accounts.countUsers('org_b')).toBe(0);
    });

    it('refuses an email that is not normalised or not an address', async () => {
      const accounts = await open();
      for (const email of ['Ana@example.com', 'no-at-sign', '']) {
        await expect(accounts.createUser({ userId: 'user_1', orgId: 'org_a', email, passwordHash: 'h' }, new Date(T0))).rejects.toSatisfy(
          (err: unknown) => err instanceof StoreError && err.code === 'STORE_INVALID_ARGUMENT',
        );
      }
    });

    it('keeps sessions until they are deleted, and finds them only by their hash', async () => {
      const accounts = await open();
      const one = session();
      const two = session({ tokenHash: hash('token-2'), method: 'oidc', subject: 'idp|42', displayName: 'idp|42' });
      await accounts.createSession(one);
      await accounts.createSession(two);
      expect(await accounts.findSession(one.tokenHash)).toEqual(one);
      expect(await accounts.findSession(two.tokenHash)).toEqual(two);
      expect(await accounts.deleteSession(one.tokenHash)).toBe(true);
      expect(await accounts.deleteSession(one.tokenHash)).toBe(false);
      expect(await accounts.findSession(one.tokenHash)).toBeNull();
      expect(await accounts.findSession(two.tokenHash)).toEqual(two);
      expect(await accounts.findSession(hash('never'))).toBeNull();
    });

    it('refuses a token hash that is not 64 hex digits', async () => {
      const accounts = await open();
      await expect(accounts.findSession('token-1')).rejects.toSatisfy((err: unknown) => err instanceof StoreError && err.code === 'STORE_INVALID_ARGUMENT');
      await expect(accounts.createSession(session({ tokenHash: 'x' }))).rejects.toSatisfy(
        (err: unknown) => err instanceof StoreError && err.code === 'STORE_INVALID_ARGUMENT',
      );
    });
  });
}
