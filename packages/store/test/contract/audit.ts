// The audit port's contract (events by organization, newest first, paged with an opaque cursor),
// for every backend.
import { describe, expect, it } from 'vitest';
import { AUDIT_PAGE_MAX, StoreError, type AuditEvent } from '@adp/store';
import { useBackend, type StoreBackend } from './backend.js';

const T0 = Date.UTC(2025, 0, 2, 3, 4, 5, 678);

function event(overrides: Partial<AuditEvent> = {}): AuditEvent {
  return {
    eventId: 'ev_1',
    orgId: 'org_a',
    at: new Date(T0),
    actor: { kind: 'key', id: 'key_1' },
    action: 'baseline.created',
    target: 'machine:pump-1',
    sourceIp: '127.0.0.1',
    ...overrides,
  };
}

export function describeAuditContract(name: string, backend: StoreBackend): void {
  describe(`${name}: AuditStore contract`, () => {
    const open = useBackend(backend);

    it('records events and reads them back exactly, newest first', async () => {
      const { audit } = await open();
      const first = event();
      const second = event({
        eventId: 'ev_2',
        at: new Date(T0 + 1),
        actor: { kind: 'jwt', id: 'auth0|user "quoted" \\ \u00e9\u{1F600}' },
        action: 'baseline.deleted',
        target: "machine:it's",
        sourceIp: null,
      });
      await audit.record(first);
      await audit.record(second);
      expect(await audit.list('org_a', { limit: 10 })).toEqual({ events: [second, first], nextCursor: null });
    });

    it('never shows one organization the events of another', async () => {
      const { audit } = await open();
      await audit.record(event({ eventId: 'a1', orgId: 'org_a' }));
      await audit.record(event({ eventId: 'b1', orgId: 'org_b' }));
      await audit.record(event({ eventId: 'b2', orgId: "org_a' OR '1'='1" }));
      expect((await audit.list('org_a', { limit: 10 })).events.map((e) => e.eventId)).toEqual(['a1']);
      expect((await audit.list('org_b', { limit: 10 })).events.map((e) => e.eventId)).toEqual(['b1']);
      expect((await audit.list('org_c', { limit: 10 })).events).toEqual([]);
    });

    it('pages with a cursor through events that share a timestamp, without gaps or repeats', async () => {
      const { audit } = await open();
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) {
        const eventId = `ev_${i}`;
        ids.push(eventId);
        // Three share T0, the others are later: the cursor must break ties by event id.
        await audit.record(event({ eventId, at: new Date(i < 3 ? T0 : T0 + i * 1000) }));
      }
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await audit.list('org_a', { limit: 2, ...(cursor === undefined ? {} : { cursor }) });
        seen.push(...page.events.map((e) => e.eventId));
        cursor = page.nextCursor ?? undefined;
        pages++;
      } while (cursor !== undefined && pages < 10);
      expect(pages).toBe(4);
      expect(seen).toEqual(['ev_6', 'ev_5', 'ev_4', 'ev_3', 'ev_2', 'ev_1', 'ev_0']);
      expect(new Set(seen).size).toBe(ids.length);
    });

    it('filters by time: from inclusive, to exclusive', async () => {
      const { audit } = await open();
      for (let i = 0; i < 5; i++) await audit.record(event({ eventId: `ev_${i}`, at: new Date(T0 + i * 1000) }));
      const page = await audit.list('org_a', { limit: 10, from: new Date(T0 + 1000), to: new Date(T0 + 3000) });
      expect(page.events.map((e) => e.eventId)).toEqual(['ev_2', 'ev_1']);
    });

    it('keeps events across a reopen', async () => {
      const first = await open();
      await first.audit.record(event());
      await first.close();
      const second = await open();
      expect((await second.audit.list('org_a', { limit: 1 })).events).toEqual([event()]);
    });

    it('refuses events and queries it could not store or serve faithfully', async () => {
      const { audit } = await open();
      const refused = [
        event({ eventId: '' }),
        event({ orgId: '' }),
        event({ at: new Date(Number.NaN) }),
        event({ actor: { kind: 'root' as 'key', id: 'x' } }),
        event({ actor: { kind: 'key', id: '' } }),
        event({ action: 'Baseline Created' }),
        event({ target: 'x'.repeat(513) }),
        event({ sourceIp: '' }),
      ];
      for (const bad of refused) {
        await expect(audit.record(bad)).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
      }
      await expect(audit.list('org_a', { limit: 0 })).rejects.toBeInstanceOf(StoreError);
      await expect(audit.list('org_a', { limit: AUDIT_PAGE_MAX + 1 })).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
      await expect(audit.list('org_a', { limit: 1, cursor: 'not a cursor!' })).rejects.toMatchObject({
        code: 'STORE_INVALID_ARGUMENT',
      });
      expect((await audit.list('org_a', { limit: 10 })).events).toEqual([]);
    });

    it('refuses to work once the store is closed', async () => {
      const store = await open();
      await store.close();
      await expect(store.audit.record(event())).rejects.toMatchObject({ code: 'STORE_CLOSED' });
      await expect(store.audit.list('org_a', { limit: 1 })).rejects.toMatchObject({ code: 'STORE_CLOSED' });
    });
  });
}
