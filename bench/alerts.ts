// Alerts benchmark on the embedded default (`npm start`'s one process: the in-process bus, the
// worker and the webhook dispatcher, DuckDB under a temporary DATA_DIR), with receivers on
// 127.0.0.1:
//
//   npm run bench:alerts [-- --quick]
//
// Rows:
//  - latency: machines warmed up with normal points, then, one machine at a time, a spike sent
//    alone through POST /v1/telemetry; latency = from that call's start (the point's arrival) to
//    the receiver reading the signed episode.opened delivery, p50/p99.
//  - throughput: the same telemetry (machines with a few spikes each) drained by the worker, from
//    the first POST to the last result stored, without webhooks and with 100 slow receivers (each
//    answers after SLOW_MS, 5 per machine) attached; the ratio says whether deliveries slow
//    detection. The two alternate, three runs each (one with --quick), and each row is its median run.
// Prints a markdown table; writes nothing.
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { loadWorkerConfig } from '@adp/stream-worker';
import { loadConfig, openPlatform, type NativeModelFactory, type Platform } from '@adp/api';
import { round, summarize } from './stats.js';

const API_KEY = 'svc_test_alertsbench0123456789';

/** A learned model whose every energy is 1 (no ONNX): the alerts' cost without inference. */
const constantEnergyModel: NativeModelFactory = () =>
  Promise.resolve({
    modelVersion: 'bench-constant',
    energies: (values: ArrayLike<number>) =>
      Promise.resolve({ energies: new Float64Array(values.length).fill(1), embeddings: null, normalisation: { center: 0, scale: 1 } }),
    fineTune: () => Promise.reject(new Error('the bench model does not fine-tune')),
    close: () => Promise.resolve(),
  });

const quick = process.argv.includes('--quick');
const SLOW_MS = 2_000;
const T0 = Date.UTC(2025, 5, 1);
const MINUTE = 60_000;
/** Further apart than the engine's refractory stretch (150 points), so each spike is its own event. */
const SPIKE_EVERY = 200;

const value = (machine: number, i: number, spike: boolean): number =>
  50 + 5 * Math.sin((2 * Math.PI * (i + machine * 7)) / 60) + ((i * 7919 + machine * 104729) % 13) / 26 + (spike ? 15 : 0);

interface Receiver {
  readonly url: string;
  close(): Promise<void>;
}

async function receiver(onBody: (body: string) => void, delayMs: number): Promise<Receiver> {
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      onBody(body);
      setTimeout(() => res.writeHead(204).end(), delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function withPlatform<T>(run: (platform: Platform) => Promise<T>): Promise<T> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-bench-alerts-'));
  const env = { DATA_DIR: dataDir, BOOTSTRAP_API_KEY: API_KEY, LOG_LEVEL: 'silent', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CONCURRENCY: '4' };
  const platform = await openPlatform(loadConfig(env), { model: constantEnergyModel, worker: loadWorkerConfig({ WORKER_WINDOW_POINTS: '120' }) });
  try {
    return await run(platform);
  } finally {
    await platform.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function call(platform: Platform, url: string, body: unknown): Promise<number> {
  const response = await platform.app.inject({
    method: 'POST',
    url,
    headers: { 'x-service-key': API_KEY, 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
  if (response.statusCode >= 300) throw new Error(`${url} answered ${response.statusCode}: ${response.body}`);
  return response.statusCode;
}

async function until(condition: () => boolean, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function send(platform: Platform, machine: number, from: number, to: number, spikes: (i: number) => boolean): Promise<void> {
  const points = Array.from({ length: to - from }, (_, k) => ({ timestamp: new Date(T0 + (from + k) * MINUTE).toISOString(), value: value(machine, from + k, spikes(from + k)) }));
  await call(platform, '/v1/telemetry', { machine_id: `m-${machine}`, points });
}

async function latencyRow(): Promise<Record<string, unknown>> {
  const machines = quick ? 4 : 20;
  const rounds = quick ? 2 : 5;
  return withPlatform(async (platform) => {
    const arrived = new Map<string, number>();
    const target = await receiver((body) => {
      const payload = JSON.parse(body) as { type: string; data: { machine_id: string; episode: { started_at: string } } };
      if (payload.type === 'episode.opened') arrived.set(`${payload.data.machine_id}@${payload.data.episode.started_at}`, performance.now());
    }, 0);
    try {
      await call(platform, '/v1/webhooks', { url: target.url, events: ['episode.opened'] });
      const samples: number[] = [];
      let unflagged = 0;
      let next = 0;
      for (let round = 0; round < rounds; round++) {
        const from = next;
        const spikeAt = from + SPIKE_EVERY - 1;
        for (let m = 0; m < machines; m++) await send(platform, m, from, spikeAt, () => false);
        // The normal points judged first, so a sample times the spike alone.
        await until(() => platform.worker!.counters().rows >= machines * spikeAt);
        for (let m = 0; m < machines; m++) {
          const key = `m-${m}@${new Date(T0 + spikeAt * MINUTE).toISOString()}`;
          const started = performance.now();
          await send(platform, m, spikeAt, spikeAt + 1, () => true);
          await until(() => platform.worker!.counters().rows >= machines * spikeAt + m + 1);
          // A spike the engine did not flag raises nothing: not a sample.
          const [row] = await platform.streaming.results.query({ orgId: 'org_default', machineId: `m-${m}`, fromMs: T0 + spikeAt * MINUTE, limit: 1 });
          if (!row?.isAnomaly) {
            unflagged++;
            continue;
          }
          await until(() => arrived.has(key), 60_000);
          samples.push(arrived.get(key)! - started);
        }
        next = spikeAt + 1;
      }
      return { row: 'alert latency: point arrival to signed delivery', machines, unflagged, ...summarize(samples) };
    } finally {
      await target.close();
    }
  });
}

async function throughputRow(slowReceivers: number): Promise<Record<string, unknown>> {
  const machines = 20;
  const points = quick ? 600 : 2_000;
  return withPlatform(async (platform) => {
    const receivers: Receiver[] = [];
    let deliveries = 0;
    try {
      for (let r = 0; r < slowReceivers; r++) {
        const target = await receiver(() => deliveries++, SLOW_MS);
        receivers.push(target);
        await call(platform, '/v1/webhooks', { url: target.url, events: ['episode.opened', 'episode.closed'], machine_ids: [`m-${r % machines}`] });
      }
      const isSpike = (i: number): boolean => i > 0 && i % SPIKE_EVERY === 0;
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      for (let from = 0; from < points; from += 500) {
        for (let m = 0; m < machines; m++) await send(platform, m, from, Math.min(points, from + 500), isSpike);
      }
      const sentMs = performance.now() - started;
      await until(() => platform.worker!.counters().rows >= machines * points);
      const seconds = (performance.now() - started) / 1000;
      const cpu = process.cpuUsage(cpuBefore);
      return {
        row: slowReceivers === 0 ? 'detection throughput, no webhooks' : `detection throughput, ${slowReceivers} receivers answering after ${SLOW_MS} ms`,
        machines,
        points: machines * points,
        pointsPerSecond: round((machines * points) / seconds, 0),
        alerts: platform.worker!.counters().alerts,
        deliveriesDuringDrain: deliveries,
        /** How long the POST /v1/telemetry calls took (the rest is the worker catching up). */
        postsMs: Math.round(sentMs),
        /** The process's CPU time (every thread) per 1,000 points: what the work costs, whatever else runs on the machine. */
        cpuMsPer1000Points: round((cpu.user + cpu.system) / 1000 / ((machines * points) / 1000), 1),
      };
    } finally {
      await Promise.all(receivers.map((r) => r.close()));
    }
  });
}

// The two throughput rows alternate, REPEATS times each, and each reports its median run: the
// machine's other load drifts, and alternating spreads it over both.
const REPEATS = quick ? 1 : 3;
const latency = await latencyRow();
const runs: { without: Record<string, unknown>[]; with: Record<string, unknown>[] } = { without: [], with: [] };
for (let r = 0; r < REPEATS; r++) {
  runs.without.push(await throughputRow(0));
  runs.with.push(await throughputRow(100));
}
const middle = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const median = (list: Record<string, unknown>[]): Record<string, unknown> => ({
  ...list[0]!,
  pointsPerSecond: middle(list.map((row) => row['pointsPerSecond'] as number)),
  cpuMsPer1000Points: middle(list.map((row) => row['cpuMsPer1000Points'] as number)),
  runs: list.map((row) => row['pointsPerSecond']),
  cpuRuns: list.map((row) => row['cpuMsPer1000Points']),
});
const rows = [latency, median(runs.without), median(runs.with)];
const base = rows[1]!['pointsPerSecond'] as number;
const slow = rows[2]!['pointsPerSecond'] as number;
console.log(`| row | machines | points or samples | points/s (median of runs) | CPU ms per 1,000 points | p50 ms | p99 ms |`);
console.log(`|---|---:|---:|---:|---:|---:|---:|`);
for (const row of rows) {
  const perRun = Array.isArray(row['runs']) ? ` (${(row['runs'] as number[]).join(', ')})` : '';
  console.log(
    `| ${String(row['row'])} | ${String(row['machines'])} | ${String(row['points'] ?? row['samples'])} | ${String(row['pointsPerSecond'] ?? '')}${perRun} | ${String(row['cpuMsPer1000Points'] ?? '')} | ${String(row['p50Ms'] ?? '')} | ${String(row['p99Ms'] ?? '')} |`,
  );
}
console.log(`\nthroughput with slow receivers / without (medians): ${round(slow / base, 3)}`);
console.log(`CPU per point with slow receivers / without (medians): ${round((rows[2]!['cpuMsPer1000Points'] as number) / (rows[1]!['cpuMsPer1000Points'] as number), 3)}`);
console.log(JSON.stringify(rows));
