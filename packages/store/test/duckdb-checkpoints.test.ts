// The embedded checkpoint store: windows saved in a batch, the latest save winning, read back
// after a reopen (a restarted `npm start` resumes each machine's window), one process per file.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createDuckDbCheckpointStore } from '../src/index.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('createDuckDbCheckpointStore', () => {
  it('keeps the latest window per key across a reopen, and loads only the keys asked for', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-checkpoints-'));
    dirs.push(dataDir);
    const first = await createDuckDbCheckpointStore({ dataDir });
    const many = new Map(Array.from({ length: 1200 }, (_, i) => [`g/org/m-${i}`, Buffer.from([i & 0xff, i >> 8, 0, 255])]));
    await first.save(many);
    await first.save(new Map([['g/org/m-7', Buffer.from('newer')], ["g/o'rg/\u00fc", Buffer.alloc(0)]]));
    await expect(createDuckDbCheckpointStore({ dataDir })).rejects.toMatchObject({ code: 'EMBEDDED_STORE_UNAVAILABLE' });
    await first.close();
    await expect(first.load(['g/org/m-1'])).rejects.toMatchObject({ code: 'STREAMING_CLOSED' });

    const second = await createDuckDbCheckpointStore({ dataDir });
    try {
      const keys = [...many.keys(), "g/o'rg/\u00fc", 'g/org/unknown'];
      const loaded = await second.load(keys);
      expect(loaded.size).toBe(1201);
      expect(loaded.get('g/org/m-7')).toEqual(Buffer.from('newer'));
      expect(loaded.get('g/org/m-1199')).toEqual(many.get('g/org/m-1199'));
      expect(loaded.get("g/o'rg/\u00fc")).toEqual(Buffer.alloc(0));
      expect(loaded.has('g/org/unknown')).toBe(false);
      expect(await second.load([])).toEqual(new Map());
    } finally {
      await second.close();
    }
  });

  it("deletes a machine's checkpoints (its channels too) in every group, and nothing else", async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-checkpoints-'));
    dirs.push(dataDir);
    const store = await createDuckDbCheckpointStore({ dataDir });
    try {
      const keys = ['g1/org_a/pump', 'g2/org_a/pump', 'g1/org_a/pump:temp', 'g1/org_a/pump-2', 'g1/org_b/pump', 'g1/org_a/pumpx'];
      await store.save(new Map(keys.map((key) => [key, Buffer.from(key)])));
      expect(await store.deleteMachine('org_a', 'pump')).toBe(3);
      const left = await store.load(keys);
      expect([...left.keys()].sort()).toEqual(['g1/org_a/pump-2', 'g1/org_a/pumpx', 'g1/org_b/pump']);
      expect(await store.deleteMachine('org_a', 'pump')).toBe(0);
    } finally {
      await store.close();
    }
  });
});
