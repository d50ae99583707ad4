// Group commit of the ClickHouse store's request-path writes, with a fake insert: no server needed.
import { describe, expect, it } from 'vitest';
import { InsertBatcher } from '../src/clickhouse/insert-batcher.js';

type Row = Readonly<Record<string, unknown>>;

/** An insert that records its batches and finishes when the test says so. */
function controlledWrite() {
  const batches: Row[][] = [];
  const finish: Array<(error?: Error) => void> = [];
  const write = (rows: readonly Row[]) =>
    new Promise<void>((resolve, reject) => {
      batches.push([...rows]);
      finish.push((error) => (error ? reject(error) : resolve()));
    });
  return { batches, finish, write };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('InsertBatcher', () => {
  it('puts rows added in the same tick into one insert, and rows added during it into the next', async () => {
    const { batches, finish, write } = controlledWrite();
    const batcher = new InsertBatcher(write, 0);
    const first = [batcher.add({ n: 1 }), batcher.add({ n: 2 })];
    await tick();
    expect(batches).toEqual([[{ n: 1 }, { n: 2 }]]);
    const second = [batcher.add({ n: 3 }), batcher.add({ n: 4 }, { n: 5 })];
    expect(batcher.pending).toBe(3);
    finish[0]?.();
    await Promise.all(first);
    await tick();
    expect(batches).toEqual([[{ n: 1 }, { n: 2 }], [{ n: 3 }, { n: 4 }, { n: 5 }]]);
    finish[1]?.();
    await Promise.all(second);
    expect(batcher.pending).toBe(0);
  });

  it('rejects the callers of a failed insert only, and goes on with the next batch', async () => {
    const { batches, finish, write } = controlledWrite();
    const batcher = new InsertBatcher(write, 0);
    const failed = batcher.add({ n: 1 });
    await tick();
    const later = batcher.add({ n: 2 });
    finish[0]?.(new Error('server gone'));
    await expect(failed).rejects.toThrow('server gone');
    await tick();
    expect(batches).toHaveLength(2);
    finish[1]?.();
    await expect(later).resolves.toBeUndefined();
  });

  it('starts consecutive inserts at least minIntervalMs apart, an idle one at once', async () => {
    let clockMs = 1_000;
    let writes = 0;
    const batcher = new InsertBatcher(
      async () => {
        writes += 1;
      },
      40,
      () => undefined,
      () => clockMs,
    );
    const first = batcher.add({ n: 1 });
    await tick();
    expect(writes).toBe(1); // idle: no pause
    await first;
    const second = batcher.add({ n: 2 }); // 0 ms after the first started: waits out the 40 ms
    await tick();
    expect(writes).toBe(1);
    await second;
    expect(writes).toBe(2);
    clockMs += 1_000; // long idle again: at once
    const third = batcher.add({ n: 3 });
    await tick();
    expect(writes).toBe(3);
    await third;
  });

  it('hands its flush to the owner, which can wait for accepted rows on close', async () => {
    const flushes: Promise<void>[] = [];
    let written = 0;
    const batcher = new InsertBatcher(
      async (rows) => {
        written += rows.length;
      },
      0,
      (flush) => flushes.push(flush),
    );
    void batcher.add({ n: 1 });
    void batcher.add({ n: 2 });
    expect(flushes).toHaveLength(1);
    await Promise.all(flushes);
    expect(written).toBe(2);
  });
});
