// The in-memory result and checkpoint stores (`npm start` without a data directory, and unit
// tests): the same contract as the durable ones, deletion and retention included.
import { describe, expect, it } from 'vitest';
import type { ResultRow } from '@adp/streaming';
import { resultRow } from '@adp/streaming/testing';
import { createMemoryCheckpointStore, createMemoryResultStore } from '../src/index.js';
import { checkCheckpointDeletion, checkResultDeletion, checkRetention } from './deletion-contract.js';

function row(tsMs: number, overrides: Partial<ResultRow> = {}): ResultRow {
  return resultRow({ orgId: 'o', machineId: 'm', tsMs, upperMargin: 1, lowerMargin: 1, modelVersion: 'v', ...overrides });
}

describe('createMemoryResultStore', () => {
  it('keeps each point once, the latest write winning, and pages ascending', async () => {
    const store = createMemoryResultStore();
    await store.insert([row(30), row(10), row(20)]);
    await store.insert([row(20, { isAnomaly: true, regime: 'SHOCK', writtenAtMs: 5 }), row(10, { value: 9, writtenAtMs: 0 })]);
    const all = await store.query({ orgId: 'o', machineId: 'm', limit: 10 });
    expect(all.map((r) => r.tsMs)).toEqual([10, 20, 30]);
    expect(all[0]!.value).toBe(1); // the older write lost
    expect(all[1]!.isAnomaly).toBe(true);
    expect((await store.query({ orgId: 'o', machineId: 'm', afterTsMs: 10, limit: 1 })).map((r) => r.tsMs)).toEqual([20]);
    expect((await store.query({ orgId: 'o', machineId: 'm', fromMs: 20, toMs: 30, limit: 5 })).map((r) => r.tsMs)).toEqual([20]);
    expect(await store.machines('o')).toEqual([
      {
        machineId: 'm',
        points: 3,
        anomalies: 1,
        firstTsMs: 10,
        lastTsMs: 30,
        regimeCounts: { HEALTHY: 0, ACTIVE: 0, TRANSITION: 0, SHOCK: 1, UNKNOWN: 2 },
      },
    ]);
    await expect(store.insert([row(1, { value: Number.NaN })])).rejects.toMatchObject({ code: 'VALUE_INVALID' });
    await expect(store.query({ orgId: 'o', machineId: 'm', limit: 0 })).rejects.toMatchObject({ code: 'VALUE_INVALID' });
    await expect(store.ping?.()).resolves.toBeUndefined();
  });
});

describe('createMemoryCheckpointStore', () => {
  it('round-trips checkpoints and answers ping', async () => {
    const checkpoints = createMemoryCheckpointStore();
    await checkpoints.save(new Map([['a', Buffer.from('1')]]));
    expect([...(await checkpoints.load(['a', 'b'])).entries()]).toEqual([['a', Buffer.from('1')]]);
    await expect(checkpoints.ping?.()).resolves.toBeUndefined();
  });
});

describe('memory stores: deletion and retention', () => {
  it("deletes a machine's series and its channels' only", async () => {
    await checkResultDeletion(createMemoryResultStore());
  });
  it('deletes the points past retention', async () => {
    await checkRetention(createMemoryResultStore());
  });
  it("deletes every group's checkpoints of a machine and its channels only", async () => {
    await checkCheckpointDeletion(createMemoryCheckpointStore());
  });
});
