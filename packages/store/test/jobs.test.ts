// The JobStore adapters that need no server (memory, DuckDB) against the shared contract.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDuckDbJobStore, createMemoryJobStore } from '../src/index.js';
import { jobStoreContract, resultRows } from './jobs-contract.js';

describe('memory job store', () => {
  jobStoreContract(async () => createMemoryJobStore());
});

describe('DuckDB job store', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  jobStoreContract(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'adp-jobs-'));
    dirs.push(dir);
    return createDuckDbJobStore({ dataDir: dir });
  });

  it('keeps jobs and results across a reopen of the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'adp-jobs-'));
    dirs.push(dir);
    const { jobRecord } = await import('./jobs-contract.js');
    const first = await createDuckDbJobStore({ dataDir: dir });
    await first.create(jobRecord());
    await first.completeSeries('org_a', jobRecord().jobId, [{ seriesIndex: 0, period: 0, rows: resultRows(0, 4), episodes: [] }]);
    await first.close();
    const second = await createDuckDbJobStore({ dataDir: dir });
    try {
      expect((await second.get('org_a', jobRecord().jobId))?.pointsTotal).toBe(6);
      expect(await second.results('org_a', jobRecord().jobId, { limit: 10 })).toEqual(resultRows(0, 4));
    } finally {
      await second.close();
    }
  });
});
