// What every backend's store does as a whole: ping, close once, refuse work after close.
import { describe, expect, it } from 'vitest';
import { StoreError } from '@adp/store';
import { baselineFor, sha256, useBackend, type StoreBackend } from './backend.js';

export function describeLifecycleContract(name: string, backend: StoreBackend): void {
  describe(`${name}: Store lifecycle contract`, () => {
    const openStore = useBackend(backend);

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
