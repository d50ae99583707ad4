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
//  - throughput: the same telemetry (20 machines × 2,000 points with a spike every 200) drained by
//    the worker, from the first POST to the last result stored, without webhooks and with 100 slow
//    receivers attached (each answers after SLOW_MS; 5 per machine). The receivers run in a child
//    process (bench/slow-receivers.ts), as real ones would run elsewhere. After one uncounted
//    warm-up run, runs go in pairs (without, with) in ABBA order on this process and host; each
//    pair gives a ratio, and the median ratio is reported with its spread, for speed and for the
//    process's CPU time per point (which the host's other load moves less). `--pairs N` (default
//    5, 2 with --quick).
// Prints a markdown table; writes nothing.
import { fork } from 'node:child_process';
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
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

/** The slow receivers, in a process of their own (bench/slow-receivers.ts). */
interface SlowReceivers {
  readonly urls: readonly string[];
  /** Requests they have received so far. */
  count(): Promise<number>;
  close(): void;
}

async function slowReceivers(count: number, delayMs: number): Promise<SlowReceivers> {
  const child = fork(fileURLToPath(new URL('./slow-receivers.ts', import.meta.url)), [String(count), String(delayMs)], { execArgv: ['--import', 'tsx'] });
  const next = <T>(key: string): Promise<T> =>
    new Promise((resolve, reject) => {
      const onMessage = (message: Record<string, unknown>): void => {
        if (!(key in message)) return;
        child.off('message', onMessage);
        resolve(message[key] as T);
      };
      child.on('message', onMessage);
      child.once('exit', (code) => reject(new Error(`the receivers' process exited (${code})`)));
    });
  const ports = await next<number[]>('ports');
  return {
    urls: ports.map((port) => `http://127.0.0.1:${port}/hook`),
    count: () => {
      const answer = next<number>('count');
      child.send('count');
      return answer;
    },
    close: () => child.send('exit'),
  };
}

interface ThroughputRun {
  readonly pointsPerSecond: number;
  /** The platform process's CPU time (every thread) per 1,000 points: what detection and delivery cost it, whatever else runs on the host. */
  readonly cpuMsPer1000Points: number;
  readonly alerts: number;
  readonly deliveriesDuringDrain: number;
  /** How long the POST /v1/telemetry calls took (ingest; the worker judges meanwhile and after). */
  readonly postsMs: number;
  /** From the last POST's answer to the last result stored: the worker catching up. */
  readonly tailMs: number;
  /** The share of the run the main thread's event loop was busy (0..1): near 1, everything on it waits for everything else. */
  readonly eventLoopBusy: number;
}

const THROUGHPUT_MACHINES = 20;

async function throughputRun(receivers: SlowReceivers | null, pointsPerMachine: number): Promise<ThroughputRun> {
  const machines = THROUGHPUT_MACHINES;
  return withPlatform(async (platform) => {
    for (const [r, url] of (receivers?.urls ?? []).entries()) {
      await call(platform, '/v1/webhooks', { url, events: ['episode.opened', 'episode.closed'], machine_ids: [`m-${r % machines}`] });
    }
    const deliveredBefore = (await receivers?.count()) ?? 0;
    const isSpike = (i: number): boolean => i > 0 && i % SPIKE_EVERY === 0;
    const cpuBefore = process.cpuUsage();
    const loopBefore = performance.eventLoopUtilization();
    const started = performance.now();
    for (let from = 0; from < pointsPerMachine; from += 500) {
      for (let m = 0; m < machines; m++) await send(platform, m, from, Math.min(pointsPerMachine, from + 500), isSpike);
    }
    const postedAt = performance.now();
    await until(() => platform.worker!.counters().rows >= machines * pointsPerMachine);
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const loop = performance.eventLoopUtilization(loopBefore);
    const points = machines * pointsPerMachine;
    return {
      eventLoopBusy: round(loop.utilization, 3),
      pointsPerSecond: round(points / seconds, 0),
      cpuMsPer1000Points: round((cpu.user + cpu.system) / 1000 / (points / 1000), 1),
      alerts: platform.worker!.counters().alerts,
      deliveriesDuringDrain: ((await receivers?.count()) ?? 0) - deliveredBefore,
      postsMs: Math.round(postedAt - started),
      tailMs: Math.round(started + seconds * 1000 - postedAt),
    };
  });
}

const middle = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const half = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[half]! : (sorted[half - 1]! + sorted[half]!) / 2;
};
const spread = (values: readonly number[]): string => `${round(Math.min(...values), 3)} to ${round(Math.max(...values), 3)}`;

const pairsArgument = process.argv.indexOf('--pairs');
const PAIRS = pairsArgument > 0 ? Number(process.argv[pairsArgument + 1]) : quick ? 2 : 5;
const POINTS_PER_MACHINE = quick ? 600 : 2_000;
const RECEIVERS = 100;

const latency = await latencyRow();
const receivers = await slowReceivers(RECEIVERS, SLOW_MS);
try {
  // A first run warms the process (JIT, the model, DuckDB) and is not counted.
  await throughputRun(null, POINTS_PER_MACHINE);
  // Pairs in ABBA order, so drift of the host's other load falls on both alike; each pair's ratio
  // compares two runs minutes apart at most.
  const pairs: { without: ThroughputRun; with: ThroughputRun }[] = [];
  for (let p = 0; p < PAIRS; p++) {
    if (p % 2 === 0) {
      const without = await throughputRun(null, POINTS_PER_MACHINE);
      pairs.push({ without, with: await throughputRun(receivers, POINTS_PER_MACHINE) });
    } else {
      const withReceivers = await throughputRun(receivers, POINTS_PER_MACHINE);
      pairs.push({ without: await throughputRun(null, POINTS_PER_MACHINE), with: withReceivers });
    }
  }
  const speed = pairs.map((p) => p.with.pointsPerSecond / p.without.pointsPerSecond);
  const cpu = pairs.map((p) => p.with.cpuMsPer1000Points / p.without.cpuMsPer1000Points);
  const [l1, l5] = os.loadavg();
  console.log(`${os.cpus().length} CPUs, load average ${round(l1!, 1)} (1 min), ${round(l5!, 1)} (5 min) at the end\n`);
  console.log(`| row | machines × points | runs | p50 ms | p99 ms | points/s, median (each run) | CPU ms per 1,000 points, median (each run) |`);
  console.log(`|---|---:|---:|---:|---:|---|---|`);
  console.log(`| ${String(latency['row'])} | ${String(latency['machines'])} | ${String(latency['samples'])} samples | ${String(latency['p50Ms'])} | ${String(latency['p99Ms'])} | | |`);
  for (const [name, key] of [
    ['detection throughput, no webhooks', 'without'],
    [`detection throughput, ${RECEIVERS} receivers answering after ${SLOW_MS} ms`, 'with'],
  ] as const) {
    const runs = pairs.map((p) => p[key]);
    console.log(
      `| ${name} | ${THROUGHPUT_MACHINES} × ${POINTS_PER_MACHINE} | ${runs.length} | | | ${middle(runs.map((r) => r.pointsPerSecond))} (${runs.map((r) => r.pointsPerSecond).join(', ')}) | ` +
        `${middle(runs.map((r) => r.cpuMsPer1000Points))} (${runs.map((r) => r.cpuMsPer1000Points).join(', ')}) |`,
    );
  }
  console.log(`\nwith receivers / without, per pair (${PAIRS} pairs, ABBA order):`);
  console.log(`  throughput: median ${round(middle(speed), 3)}, ${spread(speed)} (${speed.map((x) => round(x, 3)).join(', ')})`);
  console.log(`  CPU per point: median ${round(middle(cpu), 3)}, ${spread(cpu)} (${cpu.map((x) => round(x, 3)).join(', ')})`);
  for (const key of ['without', 'with'] as const) {
    console.log(
      `  ${key} receivers: POSTs ms ${pairs.map((p) => p[key].postsMs).join(', ')}; then the worker's tail ms ${pairs.map((p) => p[key].tailMs).join(', ')}; ` +
        `event loop busy ${pairs.map((p) => p[key].eventLoopBusy).join(', ')}`,
    );
  }
  console.log(`  alerts per run: ${pairs.map((p) => p.with.alerts).join(', ')}; deliveries received during the drains: ${pairs.map((p) => p.with.deliveriesDuringDrain).join(', ')}`);
  console.log(JSON.stringify({ latency, pairs }));
} finally {
  receivers.close();
}
