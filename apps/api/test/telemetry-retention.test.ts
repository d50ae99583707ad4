// RESULTS_RETENTION_DAYS: the sweep deletes the results older than the retention at start and at
// every interval, keeps sweeping after a failure, and stops with the platform.
import { describe, expect, it } from 'vitest';
import type { ResultStore } from '@adp/streaming';
import { createMemoryResultStore } from '@adp/store';
import { resultRow } from '@adp/streaming/testing';
import { DAY_MS, startRetention } from '../src/telemetry/retention.js';

const NOW = Date.UTC(2026, 0, 31);
const quiet = { info: () => undefined, warn: () => undefined };

async function tsOf(results: ResultStore): Promise<number[]> {
  return (await results.query({ orgId: 'org_a', machineId: 'm-1', limit: 100 })).map((row) => (NOW - row.tsMs) / DAY_MS);
}

describe('startRetention', () => {
  it('deletes the points older than the retention at start, and again at each sweep as time passes', async () => {
    const results = createMemoryResultStore();
    await results.insert([40, 31, 30, 29, 1].map((ageDays) => resultRow({ orgId: 'org_a', machineId: 'm-1', tsMs: NOW - ageDays * DAY_MS })));
    let now = NOW;
    const sweeper = startRetention({ results, days: 30, log: quiet, intervalMs: 5, now: () => now });
    try {
      await expect.poll(() => tsOf(results)).toEqual([30, 29, 1]);
      now = NOW + 2 * DAY_MS;
      await expect.poll(() => tsOf(results)).toEqual([1]);
    } finally {
      await sweeper.stop();
    }
  });

  it('logs a failed sweep and sweeps again; nothing runs after stop', async () => {
    let calls = 0;
    const warnings: unknown[] = [];
    const sweeper = startRetention({
      results: {
        deleteBefore: async () => {
          calls++;
          if (calls === 1) throw new Error('connect ECONNREFUSED');
        },
      },
      days: 1,
      log: { info: () => undefined, warn: (object: unknown) => void warnings.push(object) },
      intervalMs: 5,
    });
    await expect.poll(() => calls).toBeGreaterThanOrEqual(2);
    await sweeper.stop();
    expect(warnings).toHaveLength(1);
    const stoppedAt = calls;
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(calls).toBe(stoppedAt);
  });
});
