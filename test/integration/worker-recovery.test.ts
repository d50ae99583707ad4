// Delivery guarantees of the streaming worker on the real servers: a worker process killed with
// SIGKILL in the middle of the stream and a new one started, and two workers of one group through
// rebalances. Either way every point is in the query results exactly once (ClickHouse FINAL), none
// lost. Each test has its own topics, consumer group, database and Redis prefixes.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createClient } from '@clickhouse/client';
import type { Streaming } from '@adp/platform';
import { startWorker, type RunningWorker } from '@adp/stream-worker';
import { afterEach, describe, expect, it } from 'vitest';
import {
  cleanUp,
  exampleSeries,
  interleave,
  namesFrom,
  openIsolatedStreaming,
  telemetryMessages,
  workerConfig,
  workerEnv,
  type IsolatedNames,
} from '@adp/stream-worker/testing';
import { allServersGate, isolatedName } from './servers.js';

const { run, title, urls } = await allServersGate('worker recovery');

const ORG = 'org_it';
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe.skipIf(!run)(title, () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  async function isolated(prefix: string): Promise<{ names: IsolatedNames; streaming: Streaming }> {
    const names = namesFrom(isolatedName(prefix));
    cleanups.push(() => cleanUp(urls, names));
    const streaming = await openIsolatedStreaming(urls, names);
    cleanups.push(() => streaming.close());
    await streaming.bus.ensureTopics([
      { name: names.telemetryTopic, partitions: 4 },
      { name: names.deadLetterTopic, partitions: 1 },
    ]);
    return { names, streaming };
  }

  /** Rows as stored, and as queries see them (FINAL), for the test's organization. */
  async function counts(names: IsolatedNames): Promise<{ stored: number; final: number; distinct: number }> {
    const client = createClient({ url: urls.clickhouseUrl });
    try {
      const result = await client.query({
        query: `SELECT
                  (SELECT count() FROM ${names.database}.results WHERE org_id = '${ORG}') AS stored,
                  (SELECT count() FROM ${names.database}.results FINAL WHERE org_id = '${ORG}') AS final,
                  (SELECT uniqExact(machine_id, ts_ms) FROM ${names.database}.results WHERE org_id = '${ORG}') AS distinct`,
        format: 'JSONEachRow',
        clickhouse_settings: { output_format_json_quote_64bit_integers: 0 },
      });
      const [row] = await result.json<{ stored: number; final: number; distinct: number }>();
      return row ?? { stored: 0, final: 0, distinct: 0 };
    } catch {
      return { stored: 0, final: 0, distinct: 0 }; // the table may not exist yet
    } finally {
      await client.close();
    }
  }

  function spawnWorker(names: IsolatedNames): ChildProcess {
    const child = spawn(process.execPath, ['--import', 'tsx', 'apps/worker/src/main.ts'], {
      cwd: REPO_ROOT,
      env: workerEnv(urls, names, { WORKER_MAX_BATCH_MESSAGES: '100' }),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    child.on('exit', (code, signal) => {
      if (code !== 0 && code !== null && signal === null) console.error(`worker exited ${code}: ${stderr}`);
    });
    cleanups.push(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    return child;
  }

  it('loses and duplicates nothing when a worker is killed with SIGKILL mid-stream and another takes over', async () => {
    const { names, streaming } = await isolated('it_wkill');
    const POINTS = 1500;
    const series = exampleSeries({ points: POINTS, machines: 6, spikes: 2, endMs: 1_750_000_000_000, stepMs: 1000 });
    const messages = interleave(series.map((s) => telemetryMessages(ORG, s.machineId, s.timestampsMs, s.values)));
    const total = messages.length;
    const producer = await streaming.bus.producer();
    cleanups.push(() => producer.close());
    // The first two thirds now; the rest while the second worker runs.
    const cut = Math.floor((total * 2) / 3);
    await producer.send(names.telemetryTopic, messages.slice(0, cut));

    const first = spawnWorker(names);
    await expect.poll(async () => (await counts(names)).stored, { timeout: 60_000, interval: 50 }).toBeGreaterThan(300);
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    const atKill = await counts(names);
    expect(atKill.final).toBeLessThan(total); // it died mid-stream

    spawnWorker(names);
    await producer.send(names.telemetryTopic, messages.slice(cut));
    await expect.poll(async () => (await counts(names)).final, { timeout: 90_000, interval: 250 }).toBe(total);
    const after = await counts(names);
    expect(after.distinct).toBe(total);
    // Each point once through the store's query path too (FINAL, ascending, every timestamp).
    for (const s of series) {
      const rows = await streaming.results.query({ orgId: ORG, machineId: s.machineId, limit: 10_000 });
      expect(rows.map((row) => row.tsMs)).toEqual(s.timestampsMs);
    }
  });

  it('stops gracefully on SIGTERM: the batch in flight is stored and committed, the process exits 0', async () => {
    const { names, streaming } = await isolated('it_wterm');
    const series = exampleSeries({ points: 600, machines: 4, spikes: 1, endMs: 1_750_000_000_000, stepMs: 1000 });
    const messages = interleave(series.map((s) => telemetryMessages(ORG, s.machineId, s.timestampsMs, s.values)));
    const producer = await streaming.bus.producer();
    cleanups.push(() => producer.close());
    await producer.send(names.telemetryTopic, messages);
    const child = spawnWorker(names);
    await expect.poll(async () => (await counts(names)).stored, { timeout: 60_000, interval: 50 }).toBeGreaterThan(0);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    // Whatever it had not finished, the next worker does; nothing is lost or doubled.
    spawnWorker(names);
    await expect.poll(async () => (await counts(names)).final, { timeout: 60_000, interval: 250 }).toBe(messages.length);
    expect((await counts(names)).distinct).toBe(messages.length);
  });

  it('shares partitions between two workers of one group through rebalances, every point judged once', async () => {
    const { names, streaming } = await isolated('it_wgroup');
    // Each worker has its own Kafka clients, Redis connections and ClickHouse client, as two processes would.
    const second = await openIsolatedStreaming(urls, names, 200);
    cleanups.push(() => second.close());
    const series = exampleSeries({ points: 900, machines: 8, spikes: 1, endMs: 1_750_000_000_000, stepMs: 1000 });
    const messages = interleave(series.map((s) => telemetryMessages(ORG, s.machineId, s.timestampsMs, s.values)));
    const producer = await streaming.bus.producer();
    cleanups.push(() => producer.close());
    const deps = { store: { getBaseline: async () => null }, loadModel: async () => Promise.reject(new Error('no model needed')) };

    const a: RunningWorker = await startWorker({ ...streaming, ...deps, config: workerConfig(names) });
    cleanups.push(() => a.stop());
    await producer.send(names.telemetryTopic, messages.slice(0, 2400));
    await expect.poll(() => a.counters().rows, { timeout: 30_000, interval: 100 }).toBeGreaterThan(0);

    // B joins: the group rebalances and B gets some of the partitions.
    const b: RunningWorker = await startWorker({ ...second, ...deps, config: workerConfig(names) });
    cleanups.push(() => b.stop());
    await producer.send(names.telemetryTopic, messages.slice(2400, 4800));
    await expect.poll(() => b.counters().rows, { timeout: 30_000, interval: 100 }).toBeGreaterThan(0);
    await expect.poll(() => a.counters().rows + b.counters().rows - a.counters().replays, { timeout: 30_000, interval: 100 }).toBeGreaterThanOrEqual(4800 - 1);

    // A leaves: B takes every partition and resumes A's machines from their checkpoints.
    await a.stop();
    await producer.send(names.telemetryTopic, messages.slice(4800));
    await expect.poll(async () => (await counts(names)).final, { timeout: 60_000, interval: 250 }).toBe(messages.length);
    expect((await counts(names)).distinct).toBe(messages.length);
    expect(a.counters().rows).toBeGreaterThan(0);
    expect(b.counters().rows).toBeGreaterThan(0);
    expect(a.counters().failedBatches + b.counters().failedBatches).toBe(0);
    for (const s of series) {
      const rows = await streaming.results.query({ orgId: ORG, machineId: s.machineId, limit: 10_000 });
      expect(rows.map((row) => row.tsMs)).toEqual(s.timestampsMs);
    }
  });
});
