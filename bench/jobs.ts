// The jobs section of `npm run bench` (`--sections jobs`; `npm run bench:jobs` runs it alone):
// detection jobs of N points (default 1,000,000, one minutely series with a daily cycle and a few
// spikes; `--job-series N` spreads them over N machines' series) posted as JSON over loopback HTTP
// to the whole platform in a child process (./serve-platform.ts: the API, the bus, the job store
// and the job worker, as `npm start` runs them), then GET /v1/jobs/{id} until done. Per
// configuration, a row of the time to the 202 and a row of the time to done (points/s end to end,
// submission included). Embedded (the durable in-process bus, jobs.duckdb under a temporary
// DATA_DIR) always; Kafka + ClickHouse only when KAFKA_BROKERS and CLICKHOUSE_URL are set, with a
// topic and database of the run's own, removed at the end.
import { fork, type ChildProcess } from 'node:child_process';
import { Agent } from 'node:http';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeScaleOut } from '@adp/stream-worker/testing';
import { getJson, keepAliveAgent, postJson, type HttpTarget } from './http.js';
import type { ServePlatformReply, ServePlatformRequest } from './serve-platform.js';
import { round, summarize } from './stats.js';

export interface JobSettings {
  readonly points: number;
  readonly series: number;
  /** Untimed jobs first (of `warmupPoints` each), then `runs` timed ones. */
  readonly warmupPoints: number;
  readonly runs: number;
  readonly logLevel: string;
}

export interface JobRow {
  readonly section: 'http-jobs';
  readonly name: string;
  readonly points: number;
  readonly latency: ReturnType<typeof summarize>;
  readonly throughput: number;
  readonly throughputUnit: 'points/s';
  readonly notes: Record<string, number | string>;
  readonly remark: string;
}

const T0 = Date.UTC(2025, 0, 1);

function seriesJson(points: number): string {
  const parts: string[] = [];
  for (let i = 0; i < points; i++) {
    const value = 100 + 10 * Math.sin((2 * Math.PI * i) / 1440) + ((i * 7919) % 17) / 17 + (i % 99_991 === 50_000 ? 80 : 0);
    parts.push(`{"timestamp":"${new Date(T0 + i * 60_000).toISOString()}","value":${value}}`);
  }
  return `[${parts.join(',')}]`;
}

/** The job's JSON body: one machine's series, or `series` machines' series of points/series points each. */
export function jobBody(points: number, series: number): Buffer {
  if (series === 1) return Buffer.from(`{"machine_id":"bench-press","granularity":"minutely","series":${seriesJson(points)}}`);
  const each = seriesJson(Math.floor(points / series));
  const list = Array.from({ length: series }, (_, i) => `{"machine_id":"bench-press-${i}","series":${each}}`);
  return Buffer.from(`{"granularity":"minutely","series_list":[${list.join(',')}]}`);
}

interface Configuration {
  readonly label: string;
  readonly env: Record<string, string>;
  cleanUp(): Promise<void>;
}

/** Kafka + ClickHouse where both are configured, with names of this run's own. */
function scaleOut(): Configuration | null {
  const brokers = process.env['KAFKA_BROKERS'];
  const url = process.env['CLICKHOUSE_URL'];
  if (!brokers || !url) return null;
  const run = `bench_jobs_${Date.now().toString(36)}`;
  const topics = { JOBS_TOPIC: `${run}.jobs`, TELEMETRY_TOPIC: `${run}.telemetry`, DEAD_LETTER_TOPIC: `${run}.dead` };
  return {
    label: 'Kafka + ClickHouse',
    env: { KAFKA_BROKERS: brokers, CLICKHOUSE_URL: url, CLICKHOUSE_DATABASE: run, WORKER_GROUP_ID: run, EMBEDDED_WORKER: 'true', ...topics },
    cleanUp: () => removeScaleOut({ kafkaBrokers: brokers, clickhouseUrl: url }, { topics: Object.values(topics), groups: [run, `${run}.jobs`], database: run }),
  };
}

interface PlatformServer {
  readonly target: HttpTarget;
  close(): Promise<void>;
}

async function startPlatform(env: Record<string, string>): Promise<PlatformServer> {
  const child: ChildProcess = fork(fileURLToPath(new URL('./serve-platform.ts', import.meta.url)), [], {
    execArgv: ['--import', import.meta.resolve('tsx')],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`the platform process exited (status ${code}) before listening`)));
      child.once('error', reject);
      child.on('message', (m: ServePlatformReply) => {
        if (m.type === 'listening') resolve(m.port);
        if (m.type === 'failed') reject(new Error(`the platform did not start: ${m.message}`));
      });
      const start: ServePlatformRequest = { type: 'start', env };
      child.send(start);
    });
    child.removeAllListeners('exit');
    const target = { port, apiKey: env['BOOTSTRAP_API_KEY']!, agent: keepAliveAgent(2) };
    return {
      target,
      close: async () => {
        target.agent.destroy();
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            child.kill();
            resolve();
          }, 30_000);
          child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          child.send({ type: 'close' });
        });
      },
    };
  } catch (err) {
    child.kill();
    throw err;
  }
}

interface JobTiming {
  readonly acceptedMs: number;
  readonly totalMs: number;
  readonly runningMs: number | null;
}

/** One job: the POST, then its status every 50 ms until it is done. */
async function runJob(target: HttpTarget, body: Buffer): Promise<JobTiming> {
  const started = performance.now();
  // A connection of its own: never a kept-alive one the server may be closing as the body starts.
  const accepted = await postJson({ ...target, agent: new Agent({ keepAlive: false }) }, '/v1/jobs', body);
  const acceptedMs = accepted.elapsedMs;
  if (accepted.status !== 202) throw new Error(`POST /v1/jobs answered ${accepted.status}: ${accepted.body.slice(0, 300)}`);
  const { job_id: jobId } = JSON.parse(accepted.body) as { job_id: string };
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    // A kept-alive connection closed by the server as it is reused: ask again on a new one.
    const res = await getJson(target, `/v1/jobs/${jobId}`).catch(() => getJson({ ...target, agent: new Agent({ keepAlive: false }) }, `/v1/jobs/${jobId}`));
    if (res.status !== 200) throw new Error(`GET /v1/jobs/${jobId} answered ${res.status}: ${res.body.slice(0, 300)}`);
    const job = JSON.parse(res.body) as { status: string; running_ms: number | null };
    if (job.status === 'queued' || job.status === 'running') continue;
    if (job.status !== 'done') throw new Error(`the job ended ${job.status}: ${res.body.slice(0, 300)}`);
    return { acceptedMs, totalMs: performance.now() - started, runningMs: job.running_ms };
  }
}

export async function jobRows(settings: JobSettings, log: (message: string) => void): Promise<JobRow[]> {
  const rows: JobRow[] = [];
  const body = jobBody(settings.points, settings.series);
  const warmup = jobBody(settings.warmupPoints, 1);
  const mib = round(body.length / 2 ** 20, 1);
  const embedded: Configuration = { label: 'embedded', env: {}, cleanUp: () => Promise.resolve() };
  const configurations = [embedded, scaleOut()].filter((c): c is Configuration => c !== null);
  if (configurations.length === 1) log('jobs: KAFKA_BROKERS and CLICKHOUSE_URL not both set: embedded rows only');
  for (const configuration of configurations) {
    const dataDir = await mkdtemp(join(os.tmpdir(), 'adp-bench-jobs-'));
    const apiKey = `svc_test_${randomBytes(16).toString('hex')}`;
    try {
      const server = await startPlatform({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY: apiKey, LOG_LEVEL: settings.logLevel, ...configuration.env });
      try {
        await runJob(server.target, warmup);
        const timings: JobTiming[] = [];
        for (let run = 0; run < settings.runs; run++) timings.push(await runJob(server.target, body));
        const accepted = summarize(timings.map((t) => t.acceptedMs));
        const total = summarize(timings.map((t) => t.totalMs));
        const running = summarize(timings.map((t) => t.runningMs ?? Number.NaN));
        const what = `${settings.points.toLocaleString('en-US')} points in ${settings.series.toLocaleString('en-US')} series, ${configuration.label}`;
        log(`job ${what}: 202 p50 ${accepted.p50Ms} ms, done p50 ${total.p50Ms} ms`);
        rows.push({
          section: 'http-jobs',
          name: `POST /v1/jobs to 202, ${what}`,
          points: settings.points,
          latency: accepted,
          throughput: Math.round((settings.points * 1000) / accepted.p50Ms),
          throughputUnit: 'points/s',
          notes: { bodyMiB: mib, configuration: configuration.label },
          remark: `body ${mib} MiB; points accepted per second of the 202`,
        });
        rows.push({
          section: 'http-jobs',
          name: `job end to end, ${what}`,
          points: settings.points,
          latency: total,
          throughput: Math.round((settings.points * 1000) / total.p50Ms),
          throughputUnit: 'points/s',
          notes: { bodyMiB: mib, configuration: configuration.label, workerRunningP50Ms: running.p50Ms },
          remark: `from the POST to done (202 included); worker running_ms p50 ${running.p50Ms}`,
        });
      } finally {
        await server.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
      await configuration.cleanUp().catch((err: unknown) => log(`jobs: cleaning up ${configuration.label} failed: ${String(err)}`));
    }
  }
  return rows;
}
