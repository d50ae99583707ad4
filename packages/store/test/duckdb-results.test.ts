import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resultRow } from '@adp/streaming/testing';
import type { ResultRow } from '@adp/streaming';
import { createDuckDbResultStore } from '../src/index.js';
import { checkResultDeletion, checkRetention } from './deletion-contract.js';

function row(machineId: string, tsMs: number, overrides: Partial<ResultRow> = {}): ResultRow {
  return resultRow({ orgId: "org_'x", machineId, tsMs, ...overrides });
}

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('createDuckDbResultStore', () => {
  it('keeps each point once (latest write), pages, summarises, and survives a reopen', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-results-'));
    dirs.push(dataDir);
    const orgId = "org_'x";
    const store = await createDuckDbResultStore({ dataDir });
    const many = Array.from({ length: 1200 }, (_, i) => row('m; DROP TABLE results', 1_700_000_000_000 + i * 1000));
    await store.insert(many);
    await store.insert([
      row('m; DROP TABLE results', 1_700_000_000_000, { writtenAtMs: 5, isAnomaly: true, regime: 'SHOCK', energy: 2, zScore: 13 }),
      row('m; DROP TABLE results', 1_700_000_001_000, { writtenAtMs: 0, value: 99 }),
      row('m; DROP TABLE results', 1_700_000_002_000, { writtenAtMs: 3, value: 7 }),
      row('m; DROP TABLE results', 1_700_000_002_000, { writtenAtMs: 4, value: 8 }),
    ]);
    await store.close();

    const again = await createDuckDbResultStore({ dataDir });
    try {
      const rows = await again.query({ orgId, machineId: 'm; DROP TABLE results', limit: 5 });
      expect(rows.map((r) => r.tsMs - 1_700_000_000_000)).toEqual([0, 1000, 2000, 3000, 4000]);
      expect(rows[0]).toMatchObject({ isAnomaly: true, regime: 'SHOCK', energy: 2, zScore: 13 });
      expect(rows[1]!.value).toBe(1);
      expect(rows[2]!.value).toBe(8);
      const page = await again.query({ orgId, machineId: 'm; DROP TABLE results', afterTsMs: 1_700_000_001_000, toMs: 1_700_000_003_000, limit: 10 });
      expect(page.map((r) => r.tsMs)).toEqual([1_700_000_002_000]);
      expect(await again.machines(orgId)).toEqual([
        {
          machineId: 'm; DROP TABLE results',
          points: 1200,
          anomalies: 1,
          firstTsMs: 1_700_000_000_000,
          lastTsMs: 1_700_000_000_000 + 1199 * 1000,
          regimeCounts: { HEALTHY: 0, ACTIVE: 0, TRANSITION: 0, SHOCK: 1, UNKNOWN: 1199 },
        },
      ]);
    } finally {
      await again.close();
    }
  });

  it('stores whole-number doubles past the int64 range exactly (they used to fail the whole batch)', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-results-'));
    dirs.push(dataDir);
    const store = await createDuckDbResultStore({ dataDir });
    try {
      const rows = [
        row('m', 1, { value: 1e20, expectedValue: -(2 ** 63), upperMargin: 2 ** 64, lowerMargin: 1e300, severity: 1, energy: 1e19, zScore: -1e200 }),
        row('m', 2, { value: 3, expectedValue: 2 ** 53 - 1, energy: null, zScore: 5e-324 }),
      ];
      await store.insert(rows);
      expect(await store.query({ orgId: "org_'x", machineId: 'm', limit: 10 })).toEqual(rows);
    } finally {
      await store.close();
    }
  });

  it("deletes a machine's series and its channels' only, and reopens without them", async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-results-'));
    dirs.push(dataDir);
    const store = await createDuckDbResultStore({ dataDir });
    try {
      await checkResultDeletion(store);
    } finally {
      await store.close();
    }
    const again = await createDuckDbResultStore({ dataDir });
    try {
      expect((await again.machines("org_'a")).map((summary) => summary.machineId)).toEqual(['pumpX1', 'pump_1', 'pump_10']);
    } finally {
      await again.close();
    }
  });

  it('deletes the points past retention', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-results-'));
    dirs.push(dataDir);
    const store = await createDuckDbResultStore({ dataDir });
    try {
      await checkRetention(store);
    } finally {
      await store.close();
    }
  });
});
