// What every backend's store does as a whole: organizations kept apart across the ports, the ports
// by name on one database, ping, close once, refuse work after close.
import { describe, expect, it } from 'vitest';
import { StoreError } from '@adp/store';
import { baselineFor, newKey, regimes, sha256, useBackend, type StoreBackend } from './backend.js';

export function describeLifecycleContract(name: string, backend: StoreBackend): void {
  describe(`${name}: Store contract (every port together)`, () => {
    const openStore = useBackend(backend);

    it('keeps organizations apart: keys, usage, machines and counters', async () => {
      const store = await openStore();
      await store.createOrganization('org_a', 'A');
      await store.createOrganization('org_b', 'B');
      const { key } = await store.createApiKey('org_a', newKey('svc_test_onlyfororga00000'));
      await store.recordUsage('org_a', 'entire/detect', 5);
      await store.upsertBaseline('org_a', baselineFor('m1'));
      await store.recordDetection('org_a', 'm1', { points: 3, withBaseline: true, regimeCounts: regimes({ HEALTHY: 3 }) });

      expect(await store.listApiKeys('org_a')).toEqual([key]);
      expect(await store.listApiKeys('org_b')).toEqual([]);
      expect((await store.usageFor('org_b')).byEndpoint).toEqual([]);
      expect(await store.listMachines('org_b')).toEqual([]);
      expect(await store.machineStatus('org_b', 'm1')).toBeNull();
      expect(await store.getBaseline('org_b', 'm1')).toBeNull();
      expect(await store.deleteMachine('org_b', 'm1')).toEqual({ deleted: false, baselineDeleted: false });
      // org_b seeing the same machine id makes a machine of its own; org_a's counters do not move.
      await store.recordDetection('org_b', 'm1', { points: 100, withBaseline: false, regimeCounts: regimes({ UNKNOWN: 100 }) });
      expect(await store.machineStatus('org_a', 'm1')).toMatchObject({ detectionsSince: 1, pointsSince: 3 });
      expect(await store.machineStatus('org_b', 'm1')).toMatchObject({ detectionsSince: 1, pointsSince: 100, baseline: null });
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

    it('serves each port by name, on the one database the others use', async () => {
      const store = await openStore();
      const org = await store.tenancy.createOrganization('org_ports', 'Ports');
      expect(await store.getOrganization('org_ports')).toEqual(org);
      await store.usage.recordUsage('org_ports', 'entire/detect', 4);
      expect(await store.usageFor('org_ports')).toMatchObject({ points: 4, calls: 1 });
      const baseline = await store.baselines.upsertBaseline('org_ports', baselineFor('m'));
      expect((await store.machines.machineStatus('org_ports', 'm'))?.baseline).toEqual(baseline);
      expect(await store.machines.listMachines('org_ports')).toEqual(await store.listMachines('org_ports'));
      await store.close();
      await expect(store.tenancy.getOrganization('org_ports')).rejects.toMatchObject({ code: 'STORE_CLOSED' });
      await expect(store.usage.usageFor('org_ports')).rejects.toMatchObject({ code: 'STORE_CLOSED' });
      await expect(store.baselines.getBaseline('org_ports', 'm')).rejects.toMatchObject({ code: 'STORE_CLOSED' });
      await expect(store.machines.listMachines('org_ports')).rejects.toMatchObject({ code: 'STORE_CLOSED' });
    });
  });
}
