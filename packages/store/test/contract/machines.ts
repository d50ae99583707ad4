// The machines port's contract (an organization's machines, their detection counters and recent
// detections), for every backend.
import { describe, expect, it } from 'vitest';
import { RECENT_DETECTIONS_KEPT } from '@adp/store';
import { baselineFor, regimes, useBackend, type StoreBackend } from './backend.js';

export function describeMachineContract(name: string, backend: StoreBackend): void {
  describe(`${name}: MachineStore contract`, () => {
    const openStore = useBackend(backend);

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

    it('refuses invalid detections', async () => {
      const store = await openStore();
      await expect(
        store.recordDetection('org_a', 'm', { points: -1, withBaseline: false, regimeCounts: regimes({}) }),
      ).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
      await expect(
        store.recordDetection('org_a', 'm', { points: 1, withBaseline: false, regimeCounts: regimes({ SHOCK: 0.5 }) }),
      ).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
      expect(await store.listMachines('org_a')).toEqual([]);
    });
  });
}
