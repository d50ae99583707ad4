// Detection-job throughput: one job of N points (default 1,000,000, one minutely series with a
// daily cycle and a few spikes) posted as JSON over loopback HTTP to a platform opened in this
// process, then GET /v1/jobs/{id} until done. `--series N` spreads the points over N machines'
// series (`series_list`) instead.
//
//   npm run bench:jobs [-- --points 100000] [-- --series 1000] [-- --scale-out]
//
// Embedded (default): the durable in-process bus and jobs.duckdb under a temporary DATA_DIR, the
// job worker in the API process, as `npm start` runs. --scale-out: Kafka and ClickHouse from
// KAFKA_BROKERS and CLICKHOUSE_URL (the infra/ scripts' addresses by default), with a topic and
// database of the run's own, removed at the end; the job worker still runs in this process.
// Prints a markdown table: the body's size, the time to the 202, the time from the 202 to done,
// and points per second end to end (submission included). Writes nothing.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { loadWorkerConfig } from '@adp/stream-worker';
import { removeScaleOut } from '@adp/stream-worker/testing';
import { loadConfig, openPlatform } from '@adp/api';

const argument = (name: string): string | undefined => {
  const index = process.argv.indexOf(name);
  return index >= 0 ? process.argv[index + 1] : undefined;
};
const POINTS = Number(argument('--points') ?? 1_000_000);
const SERIES = Number(argument('--series') ?? 1);
const SCALE_OUT = process.argv.includes('--scale-out');
const KEY = `svc_test_${randomBytes(16).toString('hex')}`;
const T0 = Date.UTC(2025, 0, 1);

function seriesJson(points: number): string {
  const parts: string[] = [];
  for (let i = 0; i < points; i++) {
    const value = 100 + 10 * Math.sin((2 * Math.PI * i) / 1440) + ((i * 7919) % 17) / 17 + (i % 99_991 === 50_000 ? 80 : 0);
    parts.push(`{"timestamp":"${new Date(T0 + i * 60_000).toISOString()}","value":${value}}`);
  }
  return `[${parts.join(',')}]`;
}

function body(points: number, series: number): string {
  if (series === 1) return `{"machine_id":"bench-press","granularity":"minutely","series":${seriesJson(points)}}`;
  const each = seriesJson(Math.floor(points / series));
  const list = Array.from({ length: series }, (_, i) => `{"machine_id":"bench-press-${i}","series":${each}}`);
  return `{"granularity":"minutely","series_list":[${list.join(',')}]}`;
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-bench-jobs-'));
  const run = `bench_jobs_${Date.now().toString(36)}`;
  const scaleOut = SCALE_OUT
    ? {
        KAFKA_BROKERS: process.env['KAFKA_BROKERS'] ?? '127.0.0.1:9092',
        CLICKHOUSE_URL: process.env['CLICKHOUSE_URL'] ?? 'http://127.0.0.1:8123',
        CLICKHOUSE_DATABASE: run,
        JOBS_TOPIC: `${run}.jobs`,
        TELEMETRY_TOPIC: `${run}.telemetry`,
        DEAD_LETTER_TOPIC: `${run}.dead`,
        WORKER_GROUP_ID: run,
        EMBEDDED_WORKER: 'true',
      }
    : {};
  const env = { DATA_DIR: dataDir, BOOTSTRAP_API_KEY: KEY, LOG_LEVEL: 'warn', PORT: '0', ...scaleOut };
  const platform = await openPlatform(loadConfig(env), { worker: loadWorkerConfig(env) });
  try {
    await platform.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = platform.app.server.address() as AddressInfo;
    const base = `http://127.0.0.1:${port}`;
    const payload = body(POINTS, SERIES);
    const started = performance.now();
    const response = await fetch(`${base}/v1/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-key': KEY },
      body: payload,
    });
    const acceptedMs = performance.now() - started;
    if (response.status !== 202) throw new Error(`POST /v1/jobs answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
    const { job_id: jobId } = (await response.json()) as { job_id: string };
    let status = 'queued';
    let runningMs: number | null = null;
    while (status === 'queued' || status === 'running') {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const job = (await (await fetch(`${base}/v1/jobs/${jobId}`, { headers: { 'x-service-key': KEY } })).json()) as { status: string; running_ms: number | null };
      status = job.status;
      runningMs = job.running_ms;
    }
    const totalMs = performance.now() - started;
    if (status !== 'done') throw new Error(`the job ended ${status}`);
    const rows = [
      ['configuration', SCALE_OUT ? 'Kafka + ClickHouse' : 'embedded (in-process bus, DuckDB)'],
      ['points', `${POINTS.toLocaleString('en')} in ${SERIES} series`],
      ['body', `${(Buffer.byteLength(payload) / 2 ** 20).toFixed(1)} MiB`],
      ['POST /v1/jobs to 202', `${(acceptedMs / 1000).toFixed(2)} s`],
      ['202 to done', `${((totalMs - acceptedMs) / 1000).toFixed(2)} s`],
      ['worker running_ms', `${runningMs ?? '-'}`],
      ['end to end', `${(totalMs / 1000).toFixed(2)} s`],
      ['throughput', `${Math.round(POINTS / (totalMs / 1000)).toLocaleString('en')} points/s`],
    ];
    process.stdout.write(`| measure | value |\n|---|---|\n${rows.map(([name, value]) => `| ${name} | ${value} |`).join('\n')}\n`);
  } finally {
    await platform.close();
    await rm(dataDir, { recursive: true, force: true });
    if (SCALE_OUT) {
      await removeScaleOut(
        { kafkaBrokers: scaleOut.KAFKA_BROKERS!, clickhouseUrl: scaleOut.CLICKHOUSE_URL! },
        { topics: [scaleOut.JOBS_TOPIC!, scaleOut.TELEMETRY_TOPIC!, scaleOut.DEAD_LETTER_TOPIC!], database: run },
      );
    }
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
