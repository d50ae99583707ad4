// The baselines port's contract (a machine's baseline with its statistics, weights and shape
// reference, exact), for every backend.
import { describe, expect, it } from 'vitest';
import type { ShapeReference } from '@adp/store';
import { baselineFor, useBackend, type StoreBackend } from './backend.js';

/** ShapeReference's limit on its values (a day of 10-second points). */
const SHAPE_VALUES_MAX = 8640;

function shapeFor(overrides: Partial<ShapeReference> = {}): ShapeReference {
  return { length: 2, values: [1, 2, 3, 4, 5, 6], center: 0.75, spread: 0.25, ...overrides };
}

/** The exact bits of a shape reference's numbers, so -0 and the last bit of a double count. */
function bitsOf(shape: ShapeReference | null | undefined): string {
  if (!shape) return String(shape);
  return Buffer.from(new Float64Array([shape.length, shape.center, shape.spread, ...shape.values]).buffer).toString('hex');
}

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

    it('keeps a shape reference bit for bit, across a restart', async () => {
      const shape = shapeFor({ values: [0.1 + 0.2, -0, 1e300, 5e-324, -1e-300, Number.MAX_VALUE, 1 / 3, 0, -2.5], center: 0.1 + 0.2, spread: 5e-324 });
      const first = await backend.open();
      const written = await first.upsertBaseline('org_a', baselineFor('pump-shape', { shapeReference: shape }));
      expect(bitsOf(written.shapeReference)).toBe(bitsOf(shape));
      expect(written.shapeReference).toEqual(shape);
      const read = await first.getBaseline('org_a', 'pump-shape');
      expect(bitsOf(read?.shapeReference)).toBe(bitsOf(shape));
      expect(read).toEqual(written);
      await first.close();
      const second = await openStore();
      const reopened = await second.getBaseline('org_a', 'pump-shape');
      expect(bitsOf(reopened?.shapeReference)).toBe(bitsOf(shape));
      expect(reopened).toEqual(written);

      const widest = shapeFor({
        length: SHAPE_VALUES_MAX / 3,
        values: Array.from({ length: SHAPE_VALUES_MAX }, (_, i) => Math.sin(i / 7) * 1e-3 + i * 0.1),
      });
      await second.upsertBaseline('org_a', baselineFor('pump-widest', { shapeReference: widest }));
      expect(bitsOf((await second.getBaseline('org_a', 'pump-widest'))?.shapeReference)).toBe(bitsOf(widest));
    });

    it('reads null for baselines without a shape reference, and a replacement without one clears it', async () => {
      const store = await openStore();
      expect((await store.upsertBaseline('org_a', baselineFor('absent'))).shapeReference).toBeNull();
      expect((await store.getBaseline('org_a', 'absent'))?.shapeReference).toBeNull();
      const statisticsOnly = baselineFor('stats-only', {
        predictorWeights: null,
        normalisation: null,
        shapeReference: null,
        fineTuneStats: { ...baselineFor('x').fineTuneStats, status: 'skipped', finalLoss: null },
      });
      expect((await store.upsertBaseline('org_a', statisticsOnly)).shapeReference).toBeNull();
      expect((await store.getBaseline('org_a', 'stats-only'))?.shapeReference).toBeNull();
      await store.upsertBaseline('org_a', baselineFor('rig', { channels: ['temp', 'rpm'] }));
      expect((await store.getBaseline('org_a', 'rig'))?.shapeReference).toBeNull();

      const shape = shapeFor();
      await store.upsertBaseline('org_a', baselineFor('pump-1', { shapeReference: shape }));
      const other = shapeFor({ length: 3, values: [9, 8, 7, 6, 5, 4, 3, 2, 1], center: 0, spread: 0.5 });
      const replacedWithOther = await store.upsertBaseline('org_a', baselineFor('pump-1', { shapeReference: other }));
      expect(replacedWithOther.shapeReference).toEqual(other);
      expect((await store.getBaseline('org_a', 'pump-1'))?.shapeReference).toEqual(other);
      const cleared = await store.upsertBaseline('org_a', baselineFor('pump-1'));
      expect(cleared.shapeReference).toBeNull();
      expect((await store.getBaseline('org_a', 'pump-1'))?.shapeReference).toBeNull();

      await store.upsertBaseline('org_a', baselineFor('pump-2', { shapeReference: shape }));
      expect(await store.deleteMachine('org_a', 'pump-2')).toMatchObject({ baselineDeleted: true });
      expect(await store.getBaseline('org_a', 'pump-2')).toBeNull();
      await store.upsertBaseline('org_a', baselineFor('pump-2'));
      expect((await store.getBaseline('org_a', 'pump-2'))?.shapeReference).toBeNull();
    });

    it('keeps a machine model as written, clears it on a replacement without one, and refuses one that is not a JSON object', async () => {
      const store = await openStore();
      const model = JSON.stringify({ kind: 'gaussian-drift', channels: ['temp', 'rpm'], center: [0.1 + 0.2, 5e-324], calibration: [1 / 3] });
      const written = await store.upsertBaseline('org_a', baselineFor('rig-model', { channels: ['temp', 'rpm'], machineModel: model }));
      expect(written.machineModel).toBe(model);
      expect((await store.getBaseline('org_a', 'rig-model'))?.machineModel).toBe(model);
      expect((await store.getBaseline('org_b', 'rig-model'))).toBeNull();
      expect((await store.upsertBaseline('org_a', baselineFor('plain'))).machineModel).toBeNull();
      expect((await store.getBaseline('org_a', 'plain'))?.machineModel).toBeNull();
      for (const machineModel of ['', 'not json', '[1,2]', '42', 'null', 'x'.repeat(1_000_001)]) {
        await expect(store.upsertBaseline('org_a', baselineFor('rig-model', { machineModel })), machineModel.slice(0, 20)).rejects.toMatchObject({
          code: 'STORE_INVALID_ARGUMENT',
        });
      }
      expect((await store.getBaseline('org_a', 'rig-model'))?.machineModel).toBe(model);
      await store.upsertBaseline('org_a', baselineFor('rig-model', { channels: ['temp', 'rpm'] }));
      expect((await store.getBaseline('org_a', 'rig-model'))?.machineModel).toBeNull();
    });

    it('refuses a shape reference that breaks any of its rules, keeping the stored one', async () => {
      const store = await openStore();
      const kept = shapeFor();
      await store.upsertBaseline('org_a', baselineFor('m', { shapeReference: kept }));
      const invalid: ShapeReference[] = [
        shapeFor({ length: 1 }),
        shapeFor({ length: 0 }),
        shapeFor({ length: 2.5 }),
        shapeFor({ length: Number.NaN }),
        shapeFor({ length: 3, values: [1, 2, 3, 4, 5, 6, 7, 8] }),
        shapeFor({ values: [] }),
        shapeFor({ length: 2, values: Array.from({ length: SHAPE_VALUES_MAX + 1 }, (_, i) => i) }),
        shapeFor({ values: [1, 2, Number.NaN, 4, 5, 6] }),
        shapeFor({ values: [1, 2, Number.POSITIVE_INFINITY, 4, 5, 6] }),
        shapeFor({ values: [1, 2, 3, 4, 5, Number.NEGATIVE_INFINITY] }),
        shapeFor({ center: -0.5 }),
        shapeFor({ center: Number.NaN }),
        shapeFor({ center: Number.POSITIVE_INFINITY }),
        shapeFor({ spread: 0 }),
        shapeFor({ spread: -1 }),
        shapeFor({ spread: Number.NaN }),
        shapeFor({ spread: Number.POSITIVE_INFINITY }),
      ];
      for (const shapeReference of invalid) {
        await expect(store.upsertBaseline('org_a', baselineFor('m', { shapeReference })), JSON.stringify(shapeReference)).rejects.toMatchObject({
          code: 'STORE_INVALID_ARGUMENT',
        });
        await expect(store.upsertBaseline('org_a', baselineFor('fresh', { shapeReference }))).rejects.toMatchObject({
          code: 'STORE_INVALID_ARGUMENT',
        });
      }
      expect((await store.getBaseline('org_a', 'm'))?.shapeReference).toEqual(kept);
      expect(await store.getBaseline('org_a', 'fresh')).toBeNull();
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
