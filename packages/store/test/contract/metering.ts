// The metering port's contract (live calls per organization, dimension and UTC hour; the export
// ledger, one entry per organization, dimension and hour), for every backend.
import { describe, expect, it } from 'vitest';
import { HOUR_MS, type LedgerEntry, type MeteringStore, type Store } from '@adp/store';
import { useBackend, type StoreBackend } from './backend.js';

const H = Date.parse('2026-03-15T08:00:00.000Z');

const entry = (overrides: Partial<LedgerEntry> = {}): LedgerEntry => ({
  orgId: 'org_a', customer: 'cust-a', licenseArn: null, dimension: 'batch_api_calls', hourMs: H, used: 1200, carriedIn: 0, quantity: 1, carriedOut: 200,
  status: 'pending', updatedAt: new Date(H + 2 * HOUR_MS), ...overrides,
});

export function describeMeteringContract(name: string, backend: StoreBackend): void {
  describe(`${name}: MeteringStore contract`, () => {
    const openStore = useBackend(backend);
    const open = async (): Promise<{ store: Store; metering: MeteringStore }> => {
      const store = await openStore();
      return { store, metering: store.metering as MeteringStore };
    };

    it('counts concurrent calls into their UTC hours', async () => {
      const { metering } = await open();
      await Promise.all([
        ...Array.from({ length: 50 }, (_, i) => metering.countCall('org_a', 'batch_api_calls', new Date(H + i * 60_000))),
        metering.countCall('org_a', 'batch_api_calls', new Date(H + HOUR_MS)),
        metering.countCall('org_b', 'stream_api_calls', new Date(H + HOUR_MS - 1)),
      ]);
      await metering.countCall('org_a', 'batch_api_calls', new Date(H));
      expect(await metering.callsInHour(H)).toEqual([
        { orgId: 'org_a', dimension: 'batch_api_calls', calls: 51 },
        { orgId: 'org_b', dimension: 'stream_api_calls', calls: 1 },
      ]);
      expect(await metering.callsInHour(H + HOUR_MS)).toEqual([{ orgId: 'org_a', dimension: 'batch_api_calls', calls: 1 }]);
    });

    it('replaces a ledger entry by organization, dimension and hour (the latest write wins), and finds the previous one', async () => {
      const { metering } = await open();
      // Written back to back: in ClickHouse the version clock, not the wall clock, orders them.
      await metering.putLedgerEntry(entry());
      await metering.putLedgerEntry(entry({ status: 'sent' }));
      await metering.putLedgerEntry(entry({ status: 'accepted' }));
      await metering.putLedgerEntry(entry({ hourMs: H + 2 * HOUR_MS, carriedIn: 200, status: 'sent' }));
      expect(await metering.ledger(H, H + HOUR_MS)).toEqual([entry({ status: 'accepted' })]);
      expect(await metering.ledger(H, H + 3 * HOUR_MS)).toHaveLength(2);
      expect(await metering.previousEntry('org_a', 'batch_api_calls', H + 2 * HOUR_MS)).toEqual(entry({ status: 'accepted' }));
      expect(await metering.previousEntry('org_a', 'batch_api_calls', H + 5 * HOUR_MS)).toEqual(entry({ hourMs: H + 2 * HOUR_MS, carriedIn: 200, status: 'sent' }));
      expect(await metering.previousEntry('org_a', 'batch_api_calls', H)).toBeNull();
      expect(await metering.previousEntry('org_a', 'stream_api_calls', H + 5 * HOUR_MS)).toBeNull();
    });

    it('keeps the license an entry was sent under, and one subscriber record per organization', async () => {
      const { metering } = await open();
      const licensed = entry({ customer: '123456789012', licenseArn: 'arn:aws:license-manager::294406891311:license:l-abc' });
      await metering.putLedgerEntry(licensed);
      expect(await metering.ledger(H, H + HOUR_MS)).toEqual([licensed]);
      const record = { orgId: 'org_a', customerIdentifier: 'cust-a', awsAccountId: null, licenseArn: null, updatedAt: new Date(H) };
      await metering.putCustomer(record);
      const renewed = { ...record, awsAccountId: '123456789012', licenseArn: 'arn:aws:license-manager::294406891311:license:l-new', updatedAt: new Date(H + 1_000) };
      await metering.putCustomer(renewed);
      await metering.putCustomer({ ...record, orgId: 'org_b', customerIdentifier: null, awsAccountId: '210987654321' });
      expect(await metering.customers()).toEqual([renewed, { ...record, orgId: 'org_b', customerIdentifier: null, awsAccountId: '210987654321' }]);
      await expect(metering.putCustomer({ ...record, customerIdentifier: null })).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
      await expect(metering.putLedgerEntry(entry({ licenseArn: '' }))).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
    });

    it('refuses an entry off the hour, with a negative count or an unknown dimension or status', async () => {
      const { metering } = await open();
      for (const bad of [
        entry({ hourMs: H + 1 }),
        entry({ quantity: -1 }),
        entry({ carriedOut: 0.5 }),
        entry({ dimension: 'cpu_hours' as LedgerEntry['dimension'] }),
        entry({ status: 'lost' as LedgerEntry['status'] }),
        entry({ customer: '' }),
      ]) {
        await expect(metering.putLedgerEntry(bad)).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
      }
      await expect(metering.countCall('org_a', 'cpu_hours' as LedgerEntry['dimension'], new Date(H))).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
      expect(await metering.ledger(H, H + HOUR_MS)).toEqual([]);
    });

    it('refuses counts after close', async () => {
      const { store, metering } = await open();
      await store.close();
      await expect(metering.countCall('org_a', 'batch_api_calls', new Date(H))).rejects.toMatchObject({ code: 'STORE_CLOSED' });
    });
  });
}
