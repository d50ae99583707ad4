import type { BaselineRecord } from '@adp/store';
import { describe, expect, it } from 'vitest';
import { BaselineCache, toSeriesBaseline } from '../src/baselines.js';

/** A statistics-only baseline record: what BaselineCache reads of one. */
function record(baselineId: string, updatedAtMs = 0): BaselineRecord {
  return {
    baselineId,
    updatedAt: new Date(updatedAtMs),
    predictorWeights: null,
    normalisation: null,
    stats: { energyMean: 1, energyStd: 2 },
    sensitivity: null,
  } as unknown as BaselineRecord;
}

/** A store whose reads wait until released, counting them per key. */
function slowStore() {
  const reads: string[] = [];
  const waiting: (() => void)[] = [];
  let version = 1;
  let writtenAtMs = 0;
  return {
    reads,
    bump: () => version++,
    /** The same baseline written again (a new update time). */
    rewrite: () => writtenAtMs++,
    release: () => waiting.splice(0).forEach((go) => go()),
    getBaseline: async (orgId: string, seriesId: string): Promise<BaselineRecord | null> => {
      reads.push(`${orgId}/${seriesId}`);
      const seen = version;
      await new Promise<void>((resolve) => waiting.push(resolve));
      return seriesId === 'none' ? null : record(`${seriesId}@${seen}`, writtenAtMs);
    },
  };
}

describe('BaselineCache', () => {
  it('reads a series once while cached, shares a read under way, and reads again after refreshMs', async () => {
    const store = slowStore();
    let now = 0;
    const cache = new BaselineCache(store, 10, 1000, () => now);
    const first = cache.get('o', 'm');
    const second = cache.get('o', 'm');
    store.release();
    expect((await first)?.baselineId).toBe('m@1');
    expect((await second)?.baselineId).toBe('m@1');
    expect(store.reads).toEqual(['o/m']);
    now = 999;
    expect((await cache.get('o', 'm'))?.baselineId).toBe('m@1');
    expect(store.reads).toEqual(['o/m']);
    now = 1000;
    store.bump();
    const refreshed = cache.get('o', 'm');
    store.release();
    expect((await refreshed)?.baselineId).toBe('m@2');
    expect(store.reads).toEqual(['o/m', 'o/m']);
    // No baseline is cached too.
    const none = cache.get('o', 'none');
    store.release();
    expect(await none).toBeNull();
    expect(await cache.get('o', 'none')).toBeNull();
    expect(store.reads).toHaveLength(3);
  });

  it('keeps what it decoded when a re-read finds the baseline unchanged, and decodes a rewritten one afresh', async () => {
    const store = slowStore();
    let now = 0;
    const cache = new BaselineCache(store, 10, 1000, () => now);
    const read = async () => {
      const pending = cache.get('o', 'm');
      store.release();
      return pending;
    };
    const first = await read();
    now = 1000;
    const again = await read();
    expect(store.reads).toHaveLength(2);
    expect(again).toBe(first);
    now = 2000;
    store.rewrite();
    const rewritten = await read();
    expect(rewritten).not.toBe(first);
    expect(rewritten?.updatedAtMs).toBe(1);
  });

  it('drops a machine and its channels, and a read under way for them is not kept', async () => {
    const store = slowStore();
    const cache = new BaselineCache(store, 10, 60_000, () => 0);
    const loads = ['m', 'm:temp', 'm2'].map((series) => cache.get('o', series));
    store.release();
    await Promise.all(loads);
    expect(cache.size).toBe(3);
    // A channel's read starts, then the machine's baseline changes.
    const racing = cache.get('o', 'm:rpm');
    store.bump();
    expect(cache.drop('o', 'm')).toBe(2);
    expect(cache.size).toBe(1);
    store.release();
    expect((await racing)?.baselineId).toBe('m:rpm@1'); // the caller of the racing read gets it...
    // ...but it was not cached: the next get reads the changed baseline.
    const again = cache.get('o', 'm:rpm');
    store.release();
    expect((await again)?.baselineId).toBe('m:rpm@2');
    const machine = cache.get('o', 'm');
    store.release();
    expect((await machine)?.baselineId).toBe('m@2');
    expect(store.reads.filter((r) => r === 'o/m2')).toHaveLength(1);
  });

  it("carries the baseline's shape reference, and null where it keeps none (absent in older records)", () => {
    const shapeReference = { length: 16, values: Array.from({ length: 48 }, (_, i) => Math.sin(i / 3)), center: 1.5, spread: 0.25 };
    expect(toSeriesBaseline({ ...record('a'), shapeReference }).shapeReference).toEqual(shapeReference);
    expect(toSeriesBaseline({ ...record('b'), shapeReference: null }).shapeReference).toBeNull();
    expect(toSeriesBaseline(record('c')).shapeReference).toBeNull();
  });
});
