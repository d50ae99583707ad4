// What every ResultStore and CheckpointStore must do when a machine is deleted or results age out,
// checked the same way on the memory and DuckDB stores (unit tests) and on ClickHouse and Redis
// (test/integration/worker-stores.test.ts). Each function gets a fresh, empty store of its own.
import { expect } from 'vitest';
import { resultRow } from '@adp/streaming/testing';
import type { CheckpointStore, ResultRow, ResultStore } from '@adp/streaming';

const T0 = 1_700_000_000_000;
const ORG = "org_'a";

function rows(orgId: string, machineId: string, count: number, from = 0): ResultRow[] {
  return Array.from({ length: count }, (_, i) => resultRow({ orgId, machineId, tsMs: T0 + (from + i) * 1000 }));
}

const ids = async (store: ResultStore, orgId = ORG) => (await store.machines(orgId)).map((summary) => [summary.machineId, summary.points]);

/**
 * deleteMachine removes the machine's series and its channels' (`<id>:<channel>`), not a machine
 * whose id merely starts the same, nor another organization's; an id with ':' removes only that
 * series; hostile ids are data; series stored under ids with ':' (before telemetry refused them)
 * stay readable until deleted.
 */
export async function checkResultDeletion(store: ResultStore): Promise<void> {
  await store.insert([
    ...rows(ORG, 'pump_1', 5),
    ...rows(ORG, 'pump_1:temp', 4),
    ...rows(ORG, 'pump_1:temp:max', 3),
    ...rows(ORG, 'pump_10', 2),
    ...rows(ORG, 'pumpX1', 2),
    ...rows(ORG, "m'; DROP TABLE results; --", 2),
    ...rows('org_b', 'pump_1', 6),
  ]);
  // A legacy series under a colon id reads as before.
  expect(await store.query({ orgId: ORG, machineId: 'pump_1:temp', limit: 10 })).toHaveLength(4);

  // A channel's own series: that series only.
  expect(await store.deleteMachine(ORG, 'pump_1:temp')).toBe(true);
  expect(await ids(store)).toEqual([
    ["m'; DROP TABLE results; --", 2],
    ['pumpX1', 2],
    ['pump_1', 5],
    ['pump_10', 2],
    ['pump_1:temp:max', 3],
  ]);
  // The machine: itself and every channel; '_' is no wildcard.
  expect(await store.deleteMachine(ORG, 'pump_1')).toBe(true);
  expect(await ids(store)).toEqual([
    ["m'; DROP TABLE results; --", 2],
    ['pumpX1', 2],
    ['pump_10', 2],
  ]);
  expect(await store.query({ orgId: ORG, machineId: 'pump_1', limit: 10 })).toEqual([]);
  expect(await store.deleteMachine(ORG, 'pump_1')).toBe(false);
  expect(await store.deleteMachine(ORG, "m'; DROP TABLE results; --")).toBe(true);
  expect(await ids(store, 'org_b')).toEqual([['pump_1', 6]]);
  await expect(store.deleteMachine(ORG, '')).rejects.toMatchObject({ code: 'VALUE_INVALID' });

  // Later telemetry of a deleted machine is stored afresh.
  await store.insert(rows(ORG, 'pump_1', 1, 100));
  expect((await store.query({ orgId: ORG, machineId: 'pump_1', limit: 10 })).map((row) => row.tsMs)).toEqual([T0 + 100_000]);
}

/** deleteBefore removes the points older than the bound, in every organization, and keeps the rest. */
export async function checkRetention(store: ResultStore, settled: () => Promise<void> = async () => {}): Promise<void> {
  await store.insert([...rows(ORG, 'm-1', 10), ...rows('org_b', 'm-2', 4, 8)]);
  await store.deleteBefore(T0 + 5_000);
  await settled();
  expect((await store.query({ orgId: ORG, machineId: 'm-1', limit: 100 })).map((row) => (row.tsMs - T0) / 1000)).toEqual([5, 6, 7, 8, 9]);
  expect((await store.machines(ORG))[0]).toMatchObject({ machineId: 'm-1', points: 5, firstTsMs: T0 + 5_000 });
  expect(await ids(store, 'org_b')).toEqual([['m-2', 4]]);
  await store.deleteBefore(T0 + 5_000); // nothing left to delete: a no-op
  await expect(store.deleteBefore(-1)).rejects.toMatchObject({ code: 'VALUE_INVALID' });
}

/** deleteMachine removes every consumer group's checkpoints of the machine and its channels, nothing else. */
export async function checkCheckpointDeletion(store: CheckpointStore): Promise<void> {
  const keys = [
    'workers/org_a/pump_1',
    'workers/org_a/pump_1:temp',
    'other-group/org_a/pump_1:load',
    'workers/org_a/pump_10',
    'workers/org_a/pumpX1',
    'workers/org_b/pump_1',
    'workers/org_a/pump_1:temp:max',
  ];
  await store.save(new Map(keys.map((key) => [key, Buffer.from(key)])));
  expect(await store.deleteMachine('org_a', 'pump_1:temp')).toBe(1);
  expect(await store.deleteMachine('org_a', 'pump_1')).toBe(3);
  expect([...(await store.load(keys)).keys()].sort()).toEqual(['workers/org_a/pumpX1', 'workers/org_a/pump_10', 'workers/org_b/pump_1']);
  expect(await store.deleteMachine('org_a', 'pump_1')).toBe(0);
  await expect(store.deleteMachine('', 'pump_1')).rejects.toMatchObject({ code: 'VALUE_INVALID' });
}
