// openStreaming picks each piece from its own setting: with no servers, the in-process bus and the
// memory stores (nothing for a readiness probe to ask); the embedded file-backed pieces under the
// data directory, which they then require.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resultRow } from '@adp/streaming/testing';
import { openStreaming } from '../src/index.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

describe('openStreaming', () => {
  it('opens the in-process pieces by default, with no checks to make', async () => {
    const streaming = await openStreaming();
    try {
      expect(streaming.mode).toEqual({ bus: 'in-process', results: 'memory', checkpoints: 'memory', notifier: 'memory' });
      expect(streaming.checks).toEqual([]);
      expect(streaming.backlog?.()).toBe(0);
    } finally {
      await streaming.close();
    }
  });

  it("keeps results in a DuckDB file with embeddedResults 'duckdb'", async () => {
    const dataDir = await tempDir('adp-results-');
    const streaming = await openStreaming({ dataDir, embeddedResults: 'duckdb' });
    try {
      expect(streaming.mode).toEqual({ bus: 'in-process', results: 'duckdb', checkpoints: 'memory', notifier: 'memory' });
      await streaming.results.insert([resultRow({ orgId: "org_'x", machineId: 'm', tsMs: 1 })]);
      expect(await streaming.results.query({ orgId: "org_'x", machineId: 'm', limit: 1 })).toHaveLength(1);
    } finally {
      await streaming.close();
    }
    expect(await readdir(dataDir)).toContain('results.duckdb');
    await expect(openStreaming({ embeddedResults: 'duckdb' })).rejects.toMatchObject({ code: 'VALUE_INVALID' });
  });

  it("keeps checkpoints in a DuckDB file with embeddedCheckpoints 'duckdb'", async () => {
    const dataDir = await tempDir('adp-checkpoints-');
    const streaming = await openStreaming({ dataDir, embeddedCheckpoints: 'duckdb' });
    try {
      expect(streaming.mode.checkpoints).toBe('duckdb');
      await streaming.checkpoints.save(new Map([['k', Buffer.from('v')]]));
      expect(await streaming.checkpoints.load(['k'])).toEqual(new Map([['k', Buffer.from('v')]]));
    } finally {
      await streaming.close();
    }
    await expect(openStreaming({ embeddedCheckpoints: 'duckdb' })).rejects.toMatchObject({ code: 'VALUE_INVALID' });
  });

  it("keeps the bus in a log under the data directory with embeddedBus 'durable'", async () => {
    const dataDir = await tempDir('adp-bus-');
    const streaming = await openStreaming({ dataDir, embeddedBus: 'durable' });
    try {
      expect(streaming.mode.bus).toBe('in-process-durable');
      expect(streaming.backlog?.()).toBe(0);
      await streaming.bus.ensureTopics([{ name: 't', partitions: 2 }]);
      expect(await readdir(path.join(dataDir, 'bus', 'topics', 't'))).toEqual(expect.arrayContaining(['0', '1', 'topic.json']));
    } finally {
      await streaming.close();
    }
    await expect(openStreaming({ embeddedBus: 'durable' })).rejects.toMatchObject({ code: 'VALUE_INVALID' });
  });
});
