// The baselines port's contract (a machine's baseline with its statistics and weights, exact),
// for every backend.
import { describe, expect, it } from 'vitest';
import { baselineFor, useBackend, type StoreBackend } from './backend.js';

export function describeBaselineContract(name: string, backend: StoreBackend): void {
  describe(`${name}: BaselineStore contract`, () => {
    const openStore = useBackend(backend);

    it('creates, reads and replaces a baseline, keeping created_at and the weights', async () => {
      let now = new Date('2025-05-01T00:00:00Z');
      const store = await openStore(() => now);
      const first = await store.upsertBaseline('org_a', baselineFor('pump-1'));
      expect(first).toMatchObject({ orgId: 'org_a', machineId: 'pump-1', baselineId: 'bl_pump-1', label: 'pump' });
      expect(first.createdAt.toISOString()).toBe('2025-05-01T00:00:00.000Z');
      expect(Array.from(first.predictorWeights ?? [])).toEqual([0, 1, 2, 255, 254, 39, 0]);
      expect(await store.getBaseline('org_a', 'pump-1')).toEqual(first);

      now = new Date('2025-05-02T00:00:00Z');
      const replaced = await store.upsertBaseline(
        'org_a',
        baselineFor('pump-1', {
          label: null,
          granularity: null,
          sensitivity: null,
          predictorWeights: null,
          normalisation: null,
          fineTuneStats: { ...baselineFor('x').fineTuneStats, status: 'skipped', finalLoss: null },
        }),
      );
      expect(replaced.createdAt).toEqual(first.createdAt);
      expect(replaced.updatedAt.toISOString()).toBe('2025-05-02T00:00:00.000Z');
      expect(replaced).toMatchObject({ label: null, predictorWeights: null, normalisation: null });
      expect(replaced.fineTuneStats).toMatchObject({ status: 'skipped', finalLoss: null });
      expect(await store.listMachines('org_a')).toHaveLength(1);
    });

    it('stores whole-number doubles past the int64 range, and tiny ones, exactly', async () => {
      const store = await openStore();
      const huge = baselineFor('pump-big', {
        stats: { energyMean: 1e20, energyStd: 2 ** 64, energyP99: 1e150, numWindows: 90, seriesLength: 120 },
        fineTuneStats: { ...baselineFor('x').fineTuneStats, finalLoss: 1e19, durationSeconds: 3e18 },
        normalisation: { center: -1e300, scale: 5e-324 },
      });
      const stored = await store.upsertBaseline('org_a', huge);
      expect(stored.stats).toEqual(huge.stats);
      expect(stored.fineTuneStats).toEqual(huge.fineTuneStats);
      expect(stored.normalisation).toEqual(huge.normalisation);
      expect(await store.getBaseline('org_a', 'pump-big')).toEqual(stored);
    });

    it("keeps a multivariate baseline's channels, lists them, and clears them when replaced without", async () => {
      const store = await openStore();
      const plain = await store.upsertBaseline('org_a', baselineFor('single'));
      expect(plain.channels).toBeNull();
      const multi = await store.upsertBaseline('org_a', baselineFor('rig', { channels: ['temp', 'rpm.1'] }));
      expect(multi.channels).toEqual(['temp', 'rpm.1']);
      expect(await store.getBaseline('org_a', 'rig')).toEqual(multi);
      expect((await store.listMachines('org_a')).map((machine) => [machine.machineId, machine.channels])).toEqual([
        ['rig', ['temp', 'rpm.1']],
        ['single', null],
      ]);
      const replaced = await store.upsertBaseline('org_a', baselineFor('rig'));
      expect(replaced.channels).toBeNull();
      expect((await store.getBaseline('org_a', 'rig'))?.channels).toBeNull();
      await expect(store.upsertBaseline('org_a', baselineFor('rig', { channels: [] }))).rejects.toMatchObject({
        code: 'STORE_INVALID_ARGUMENT',
      });
    });

    it('treats hostile machine ids as values', async () => {
      const store = await openStore();
      const hostile = "m'); DROP TABLE baselines; --";
      await store.upsertBaseline('org_a', baselineFor(hostile));
      expect((await store.getBaseline('org_a', hostile))?.machineId).toBe(hostile);
    });

    it('keeps baselines and weights across a restart', async () => {
      const first = await backend.open();
      const written = await first.upsertBaseline('org_a', baselineFor('persisted'));
      await first.close();
      const second = await openStore();
      expect(await second.getBaseline('org_a', 'persisted')).toEqual(written);
    });

    it('refuses invalid baselines', async () => {
      const store = await openStore();
      await expect(store.upsertBaseline('', baselineFor('m'))).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
      await expect(
        store.upsertBaseline('org_a', baselineFor('m', { stats: { ...baselineFor('m').stats, energyMean: Number.NaN } })),
      ).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
      await expect(store.upsertBaseline('org_a', baselineFor('m', { normalisation: null }))).rejects.toMatchObject({
        code: 'STORE_INVALID_ARGUMENT',
      });
      expect(await store.listMachines('org_a')).toEqual([]);
    });
  });
}
