// The usage port's contract (per organization, endpoint, key kind and UTC day; group-committed
// writes that are durable when they resolve), for every backend.
import { describe, expect, it } from 'vitest';
import { DEFAULT_ORGANIZATION_ID } from '@adp/store';
import { useBackend, type StoreBackend } from './backend.js';

export function describeUsageContract(name: string, backend: StoreBackend): void {
  describe(`${name}: UsageStore contract`, () => {
    const openStore = useBackend(backend);

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

    it('treats hostile strings as values, not SQL', async () => {
      const store = await openStore();
      const hostile = "x'); DROP TABLE api_keys; --";
      await store.recordUsage(hostile, hostile, 1);
      expect((await store.usageFor(hostile)).byEndpoint).toEqual([{ endpoint: hostile, points: 1, calls: 1 }]);
    });

    it('keeps usage across a restart', async () => {
      const first = await backend.open();
      await Promise.all(Array.from({ length: 20 }, () => first.recordUsage(DEFAULT_ORGANIZATION_ID, 'changepoint/detect', 3)));
      await first.close();

      const second = await openStore();
      expect((await second.usageFor(DEFAULT_ORGANIZATION_ID)).points).toBe(60);
    });

    it('writes usage accepted before close', async () => {
      const first = await backend.open();
      const writes = Array.from({ length: 10 }, () => first.recordUsage('org_a', 'last/detect', 1));
      await first.close();
      await Promise.all(writes);
      const second = await openStore();
      expect((await second.usageFor('org_a')).calls).toBe(10);
    });
  });
}
