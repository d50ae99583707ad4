// The baseline activity port's contract (when each machine's baseline was active, written by the
// baseline and machine writes themselves, kept after deletions), for every backend.
import { describe, expect, it } from 'vitest';
import { HOUR_MS } from '@adp/store';
import { baselineFor, regimes, useBackend, type StoreBackend } from './backend.js';

const H10 = Date.parse('2026-03-15T10:00:00.000Z');
const at = (hour: number, minute: number): number => H10 + (hour - 10) * HOUR_MS + minute * 60_000;

export function describeBaselineActivityContract(name: string, backend: StoreBackend): void {
  describe(`${name}: BaselineActivityStore contract`, () => {
    const openStore = useBackend(backend);

    it('opens an interval when a baseline is created, keeps it through replacements and closes it on deletion', async () => {
      let nowMs = at(10, 20);
      const store = await openStore(() => new Date(nowMs));
      await store.upsertBaseline('org_a', baselineFor('pump-1'));
      nowMs = at(10, 50);
      await store.upsertBaseline('org_a', baselineFor('pump-1', { label: 'replaced' }));
      expect(await store.baselineActivity.activeIntervals('org_a', H10, H10 + HOUR_MS)).toEqual([
        { machineId: 'pump-1', activeFromMs: at(10, 20), activeUntilMs: null },
      ]);

      nowMs = at(11, 30);
      expect(await store.deleteMachine('org_a', 'pump-1')).toEqual({ deleted: true, baselineDeleted: true });
      const closed = [{ machineId: 'pump-1', activeFromMs: at(10, 20), activeUntilMs: at(11, 30) }];
      // The deleted machine's interval stays: hours 10 and 11 overlap it, hour 12 does not.
      expect(await store.baselineActivity.activeIntervals('org_a', H10, H10 + HOUR_MS)).toEqual(closed);
      expect(await store.baselineActivity.activeIntervals('org_a', at(11, 0), at(12, 0))).toEqual(closed);
      expect(await store.baselineActivity.activeIntervals('org_a', at(12, 0), at(13, 0))).toEqual([]);
      expect(await store.baselineActivity.activeIntervals('org_a', at(9, 0), at(10, 0))).toEqual([]);
      // Half-open on both sides: ending at 11:30 does not reach [11:30, ...), starting at 10:20 does not reach [..., 10:20).
      expect(await store.baselineActivity.activeIntervals('org_a', at(11, 30), at(12, 0))).toEqual([]);
      expect(await store.baselineActivity.activeIntervals('org_a', at(10, 0), at(10, 20))).toEqual([]);
      expect(await store.baselineActivity.activeIntervals('org_a', at(11, 29), at(11, 30))).toEqual(closed);

      // A re-created machine starts a new interval; the earlier one is kept.
      nowMs = at(12, 10);
      await store.upsertBaseline('org_a', baselineFor('pump-1'));
      expect(await store.baselineActivity.activeIntervals('org_a', H10, at(13, 0))).toEqual([
        ...closed,
        { machineId: 'pump-1', activeFromMs: at(12, 10), activeUntilMs: null },
      ]);
      expect(await store.baselineActivity.activeIntervals('org_a', at(11, 0), at(12, 0))).toEqual(closed);
    });

    it('keeps intervals per organization and sorts them by machine, and survives a reopen', async () => {
      let nowMs = at(10, 0);
      const store = await openStore(() => new Date(nowMs));
      await store.upsertBaseline('org_a', baselineFor('zeta'));
      nowMs = at(10, 5);
      await store.upsertBaseline('org_a', baselineFor('alpha'));
      await store.upsertBaseline('org_b', baselineFor('zeta'));
      // A machine only seen in detections never had a baseline.
      await store.recordDetection('org_a', 'seen-only', { points: 3, withBaseline: false, regimeCounts: regimes({ UNKNOWN: 3 }) });
      nowMs = at(10, 7);
      await store.deleteMachine('org_b', 'zeta');
      await store.deleteMachine('org_a', 'seen-only');
      const expected = [
        { machineId: 'alpha', activeFromMs: at(10, 5), activeUntilMs: null },
        { machineId: 'zeta', activeFromMs: at(10, 0), activeUntilMs: null },
      ];
      expect(await store.baselineActivity.activeIntervals('org_a', H10, at(11, 0))).toEqual(expected);
      expect(await store.baselineActivity.activeIntervals('org_b', H10, at(11, 0))).toEqual([
        { machineId: 'zeta', activeFromMs: at(10, 5), activeUntilMs: at(10, 7) },
      ]);
      expect(await store.baselineActivity.activeIntervals('org_c', H10, at(11, 0))).toEqual([]);
      await store.close();
      const reopened = await openStore();
      expect(await reopened.baselineActivity.activeIntervals('org_a', H10, at(11, 0))).toEqual(expected);
    });

    it('counts a baseline deleted the millisecond it was created inside the range, and reopens one re-created that millisecond', async () => {
      const nowMs = at(10, 30);
      const store = await openStore(() => new Date(nowMs));
      await store.upsertBaseline('org_a', baselineFor('blink'));
      await store.deleteMachine('org_a', 'blink');
      const blink = [{ machineId: 'blink', activeFromMs: nowMs, activeUntilMs: nowMs }];
      expect(await store.baselineActivity.activeIntervals('org_a', H10, at(11, 0))).toEqual(blink);
      expect(await store.baselineActivity.activeIntervals('org_a', at(10, 31), at(11, 0))).toEqual([]);
      await store.upsertBaseline('org_a', baselineFor('blink'));
      expect(await store.baselineActivity.activeIntervals('org_a', H10, at(11, 0))).toEqual([
        { machineId: 'blink', activeFromMs: nowMs, activeUntilMs: null },
      ]);
    });

    it('refuses a missing organization and a malformed range', async () => {
      const store = await openStore();
      for (const [orgId, fromMs, toMs] of [
        ['', H10, H10 + HOUR_MS],
        ['org_a', H10 + HOUR_MS, H10],
        ['org_a', Number.NaN, H10],
        ['org_a', H10, 1.5],
        ['org_a', H10, Number.POSITIVE_INFINITY],
      ] as const) {
        await expect(store.baselineActivity.activeIntervals(orgId, fromMs, toMs), `${orgId} ${fromMs} ${toMs}`).rejects.toMatchObject({
          code: 'STORE_INVALID_ARGUMENT',
        });
      }
    });
  });
}
