// The vendor's last/detect at concurrency 32 against the real server process (apps/api/src/server.ts,
// as `npm start` runs it, LOG_LEVEL=info), in three configurations running side by side:
//  - embedded: the default (DuckDB, the in-process bus), one process;
//  - scale-out: ClickHouse, Kafka and Redis (key cache and rate limits in Redis), one process;
//  - scale-out, API_WORKERS=N: the same as a cluster of N processes on one port.
//
//   npm run bench:cluster [-- --quick] [--rounds N] [--workers N]
//
// The same bodies as `npm run bench`'s last/detect rows (8,640-point series, each body as long as
// the service's suggested window). Rounds are interleaved (each round measures every
// configuration for the same time, in turn), so the host's drift falls on all alike; per
// configuration it prints the median req/s with each round's, failures, and p50/p99 over all
// rounds. Servers from CLICKHOUSE_URL, KAFKA_BROKERS and REDIS_URL (defaults: the infra/ scripts'
// addresses); the database, topics and Redis keys it creates have names of its own and are removed
// at the end. Writes nothing.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeScaleOut } from '@adp/stream-worker/testing';
import { keepAliveAgent, postJson, type HttpTarget } from './http.js';
import { benchSeries, type BenchSeries } from './series.js';
import { round, summarize } from './stats.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const option = (name: string, fallback: number): number => {
  const at = argv.indexOf(name);
  return at >= 0 ? Number(argv[at + 1]) : fallback;
};
const ROUNDS = option('--rounds', quick ? 2 : 3);
const WORKERS = option('--workers', os.cpus().length);
const CONCURRENCY = 32;
const DURATION_S = quick ? 3 : 10;
const LAST = '/anomalydetector/v1.1/timeseries/last/detect';
// The shape `npm run bench` uses (bench/run.ts SETTINGS).
const SHAPE = { points: 8640, period: 288, stepMs: 5 * 60_000, seed: 20240101, levelShiftFraction: 0.6 } as const;
const REQUEST = { granularity: 'minutely', customInterval: 5, sensitivity: 95, maxAnomalyRatio: 0.25 } as const;
const BODIES = 32;

const servers = {
  kafkaBrokers: process.env['KAFKA_BROKERS']?.trim() || '127.0.0.1:9092',
  clickhouseUrl: process.env['CLICKHOUSE_URL']?.trim() || 'http://127.0.0.1:8123',
  redisUrl: process.env['REDIS_URL']?.trim() || 'redis://127.0.0.1:6379',
};

const log = (message: string): void => void process.stderr.write(`[bench:cluster] ${message}\n`);

function body(series: BenchSeries, from: number, to: number): Buffer {
  const points = [];
  for (let i = from; i < to; i++) points.push({ timestamp: new Date(series.timestampsMs[i]!).toISOString(), value: series.values[i] });
  return Buffer.from(JSON.stringify({ series: points, ...REQUEST }));
}

interface Running {
  readonly label: string;
  readonly target: HttpTarget;
  stop(): Promise<void>;
}

/** Starts server.ts with `env`; resolves once it (every worker of it) listens. */
async function start(label: string, env: Record<string, string>, workers: number): Promise<Running> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-bench-cluster-'));
  const apiKey = `svc_test_${randomBytes(24).toString('base64url')}`;
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'apps/api/src/server.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env['PATH'] ?? '',
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      DATA_DIR: dataDir,
      BOOTSTRAP_API_KEY: apiKey,
      // The row measures serving, not the per-organization limit (30,000 a minute by default).
      RATE_LIMIT_PER_MINUTE: '0',
      API_WORKERS: String(workers),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const port = await new Promise<number>((resolve, reject) => {
    const ready = workers > 1 ? `API: ${workers} worker processes listening` : '"msg":"Server listening at';
    const onData = (chunk: string): void => {
      output += chunk;
      const found = /"msg":"Server listening at http:\/\/127\.0\.0\.1:(\d+)"/.exec(output);
      if (found && output.includes(ready)) {
        child.stdout!.off('data', onData);
        // The request log from here on is read and dropped.
        child.stdout!.resume();
        resolve(Number(found[1]));
      }
    };
    child.stdout!.setEncoding('utf8').on('data', onData);
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.once('exit', (code) => reject(new Error(`${label}: the server exited (${code}) before listening:\n${output.slice(-2000)}`)));
  });
  child.removeAllListeners('exit');
  return {
    label,
    target: { port, apiKey, agent: keepAliveAgent(CONCURRENCY) },
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

interface RoundResult {
  readonly rps: number;
  readonly failures: number;
  readonly durations: number[];
}

/** bench/run.ts's concurrent row: CONCURRENCY clients in a loop for DURATION_S. */
async function concurrent(target: HttpTarget, bodies: readonly Buffer[]): Promise<RoundResult> {
  const durations: number[] = [];
  let failures = 0;
  let next = 0;
  const started = performance.now();
  const deadline = started + DURATION_S * 1000;
  const client = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const res = await postJson(target, LAST, bodies[next++ % bodies.length]!);
      if (res.status === 200) durations.push(res.elapsedMs);
      else failures++;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, client));
  return { rps: round(durations.length / ((performance.now() - started) / 1000), 1), failures, durations };
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const half = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[half]! : (sorted[half - 1]! + sorted[half]!) / 2;
};

const run = `bench_cluster_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
const scaleOut = (suffix: string): Record<string, string> => ({
  CLICKHOUSE_URL: servers.clickhouseUrl,
  CLICKHOUSE_DATABASE: `${run}_${suffix}`,
  KAFKA_BROKERS: servers.kafkaBrokers,
  REDIS_URL: servers.redisUrl,
  REDIS_KEY_PREFIX: `${run}_${suffix}:`,
  REDIS_CHANNEL_PREFIX: `${run}_${suffix}:`,
  TELEMETRY_TOPIC: `${run}_${suffix}.telemetry`,
  JOBS_TOPIC: `${run}_${suffix}.jobs`,
  ALERTS_TOPIC: `${run}_${suffix}.alerts`,
  // The API alone, as replicas in front of separate workers run.
  EMBEDDED_WORKER: 'false',
});
const CONFIGS = [
  { label: 'embedded, 1 process', env: {}, workers: 1, suffix: null },
  { label: 'scale-out, 1 process', env: scaleOut('one'), workers: 1, suffix: 'one' },
  { label: `scale-out, API_WORKERS=${WORKERS}`, env: scaleOut('many'), workers: WORKERS, suffix: 'many' },
] as const;

const loadAtStart = os.loadavg();
const running: Running[] = [];
try {
  for (const config of CONFIGS) {
    log(`starting ${config.label}`);
    running.push(await start(config.label, config.env, config.workers));
  }
  const series = benchSeries(SHAPE);
  const n = series.values.length;
  const probe = await postJson(running[0]!.target, LAST, body(series, 0, n));
  const window = Math.min(n, (JSON.parse(probe.body) as { suggestedWindow: number }).suggestedWindow);
  const bodies = Array.from({ length: BODIES }, (_, k) => body(series, n - k * 7 - window, n - k * 7));
  // Warm-up: every server (and every worker of a cluster) compiles the paths before the rounds.
  for (const server of running) {
    for (let i = 0; i < 200; i++) {
      const res = await postJson(server.target, LAST, bodies[i % BODIES]!);
      if (res.status !== 200) throw new Error(`${server.label}: warm-up answered ${res.status}: ${res.body.slice(0, 200)}`);
    }
    await concurrent(server.target, bodies);
  }
  const results = new Map<string, RoundResult[]>(running.map((server) => [server.label, []]));
  for (let r = 0; r < ROUNDS; r++) {
    // Each round in a different order, so no configuration always follows the same one.
    const order = r % 2 === 0 ? running : [...running].reverse();
    for (const server of order) {
      const result = await concurrent(server.target, bodies);
      results.get(server.label)!.push(result);
      log(`round ${r + 1}: ${server.label}: ${result.rps} req/s, ${result.failures} failed`);
    }
  }
  const loadAtEnd = os.loadavg();
  console.log(
    `${os.cpus().length} CPUs; load average ${loadAtStart.map((x) => round(x, 1)).join(' ')} at the start, ${loadAtEnd.map((x) => round(x, 1)).join(' ')} at the end; ` +
      `last/detect of ${window} points, concurrency ${CONCURRENCY}, ${ROUNDS} rounds of ${DURATION_S} s\n`,
  );
  console.log('| configuration | req/s, median (each round) | failed | p50 ms | p99 ms |');
  console.log('|---|---|---:|---:|---:|');
  for (const [label, rounds] of results) {
    const latency = summarize(rounds.flatMap((one) => one.durations));
    const rps = rounds.map((one) => one.rps);
    console.log(`| ${label} | ${round(median(rps), 1)} (${rps.join(', ')}) | ${rounds.reduce((sum, one) => sum + one.failures, 0)} | ${latency.p50Ms} | ${latency.p99Ms} |`);
  }
} finally {
  for (const server of running) await server.stop().catch((err: unknown) => log(`${server.label}: ${String(err)}`));
  for (const config of CONFIGS) {
    if (config.suffix === null) continue;
    await removeScaleOut(servers, {
      topics: [`${run}_${config.suffix}.telemetry`, `${run}_${config.suffix}.jobs`, `${run}_${config.suffix}.alerts`],
      database: `${run}_${config.suffix}`,
      redisKeyPrefix: `${run}_${config.suffix}:`,
    });
  }
}
