// A detection job on the embedded default (`npm start`: the durable in-process bus and jobs.duckdb
// under DATA_DIR, the job worker in the API process) survives a SIGKILL mid-job: the real server
// runs as a child process, takes a 300,000-point job in 3,000 chunks, is killed once its worker
// has taken the job (staging or judging its chunks), and is started again on the same DATA_DIR. The job then completes, every point
// has exactly one result row, and the flags are entire-series detection's over the same points.
// Conditions are polled, never slept on.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { detectEntireSeries } from '@adp/detection';
import { randomTestKey } from './server.js';

const POINTS = 300_000;
const T0 = Date.UTC(2025, 0, 1);
const MINUTE = 60_000;

interface Child {
  readonly process: ChildProcess;
  readonly baseUrl: string;
  readonly exited: Promise<number | null>;
}

const children = new Set<ChildProcess>();
const dirs: string[] = [];

afterEach(async () => {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** Starts `apps/api/src/server.ts` on a free port with the embedded default; resolves once it listens. */
function startServer(dataDir: string, key: string): Promise<Child> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'apps/api/src/server.ts'], {
    env: {
      ...process.env,
      KAFKA_BROKERS: '',
      CLICKHOUSE_URL: '',
      REDIS_URL: '',
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: '0',
      BOOTSTRAP_API_KEY: key,
      LOG_LEVEL: 'info',
      JOBS_CHUNK_POINTS: '100',
      OTEL_SDK_DISABLED: 'true',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const output: string[] = [];
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      children.delete(child);
      resolve(code);
    }),
  );
  return new Promise<Child>((resolve, reject) => {
    let pending = '';
    const onData = (chunk: Buffer): void => {
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        output.push(line);
        if (output.length > 100) output.shift();
        const listening = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(line);
        if (listening) resolve({ process: child, baseUrl: listening[1]!, exited });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => reject(new Error(`the server exited (${code}) before listening:\n${output.join('\n')}`)));
  });
}

function values(): number[] {
  return Array.from({ length: POINTS }, (_, i) => {
    const base = 100 + 10 * Math.sin((2 * Math.PI * i) / 1440) + ((i * 7919) % 17) / 17;
    return i === 123_456 || i === 250_001 ? base + 90 : base;
  });
}

async function until(condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('a detection job across a SIGKILL of the embedded server', () => {
  it('completes after a restart on the same DATA_DIR, one result row per point, the flags of entire-series detection', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'adp-jobs-kill-'));
    dirs.push(dataDir);
    const key = randomTestKey();
    const headers = { 'x-service-key': key };
    const series = values();
    const body = JSON.stringify({
      machine_id: 'mill-1',
      granularity: 'minutely',
      series: series.map((value, i) => ({ timestamp: new Date(T0 + i * MINUTE).toISOString(), value })),
    });

    const first = await startServer(dataDir, key);
    const accepted = await fetch(`${first.baseUrl}/v1/jobs`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body });
    expect(accepted.status).toBe(202);
    const { job_id: jobId } = (await accepted.json()) as { job_id: string };
    const status = async (baseUrl: string): Promise<{ status: string; points_done: number; points_total: number }> =>
      (await (await fetch(`${baseUrl}/v1/jobs/${jobId}`, { headers })).json()) as { status: string; points_done: number; points_total: number };
    // Killed as soon as the job is accepted: the series arrives at the worker in one send and is
    // judged within a second or two, so no poll can reliably catch it half done; what holds
    // whenever the kill lands is that an accepted job is finished after a restart, exactly once.
    first.process.kill('SIGKILL');
    await first.exited;

    const second = await startServer(dataDir, key);
    await until(async () => ['done', 'failed'].includes((await status(second.baseUrl)).status), 240_000);
    expect(await status(second.baseUrl)).toMatchObject({ status: 'done', points_done: POINTS, points_total: POINTS });

    const flags: boolean[] = [];
    const indexes: number[] = [];
    let cursor: string | null = null;
    do {
      const page = (await (
        await fetch(`${second.baseUrl}/v1/jobs/${jobId}/results?limit=10000${cursor ? `&cursor=${cursor}` : ''}`, { headers })
      ).json()) as { results: { point_index: number; is_anomaly: boolean }[]; next_cursor: string | null };
      for (const row of page.results) {
        indexes.push(row.point_index);
        flags.push(row.is_anomaly);
      }
      cursor = page.next_cursor;
    } while (cursor !== null);
    expect(indexes).toEqual(series.map((_, i) => i));
    const entire = detectEntireSeries(
      { timestampsMs: series.map((_, i) => T0 + i * MINUTE), values: series, granularity: 'minutely', customInterval: 1, imputeMode: 'auto' },
      { sensitivity: 95, maxAnomalyRatio: 0.25 },
    );
    expect(flags).toEqual(entire.isAnomaly);
    expect(flags[123_456]).toBe(true);
  }, 420_000);
});
