// What a 202 from POST /v1/telemetry promises on the embedded default (`npm start`: no Kafka, the
// durable in-process bus under DATA_DIR, the worker in the API process): the real server runs as
// a child process, several clients send telemetry at once, and the server is killed (SIGKILL at a
// random moment, a few rounds; or SIGTERM with a short grace period) and started again on the same
// DATA_DIR. After the last start every point that got a 202 has exactly one result, and usage
// counts no more points than were sent. Conditions are polled, never slept on.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { randomTestKey } from './server.js';

const CLIENTS = 4;
const POINTS_PER_CALL = 200;
const MINUTE = 60_000;
const START_MS = Date.UTC(2024, 0, 1);
/** Each start of the server takes seconds (tsx, DuckDB, the worker); a test starts it four or five times. */
const TEST_TIMEOUT_MS = 420_000;

interface Child {
  readonly process: ChildProcess;
  readonly baseUrl: string;
  readonly exited: Promise<number | null>;
  /** The last lines of its output, for a failure's message. */
  readonly output: string[];
}

const children = new Set<ChildProcess>();
const dirs: string[] = [];

afterEach(async () => {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** Starts `apps/api/src/server.ts` on a free port; resolves once it listens. */
function startServer(dataDir: string, key: string, env: Record<string, string> = {}): Promise<Child> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'apps/api/src/server.ts'], {
    env: {
      ...process.env,
      // The embedded default, whatever servers the test process knows of (CI exports them for the
      // integration tier): an empty variable counts as unset.
      KAFKA_BROKERS: '',
      CLICKHOUSE_URL: '',
      REDIS_URL: '',
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: '0',
      BOOTSTRAP_API_KEY: key,
      LOG_LEVEL: 'info',
      TELEMETRY_PARTITIONS: '4',
      OTEL_SDK_DISABLED: 'true',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const output: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => {
    children.delete(child);
    resolve(code);
  }));
  return new Promise<Child>((resolve, reject) => {
    let pending = '';
    const onData = (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        output.push(line);
        if (output.length > 200) output.shift();
        const listening = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(line);
        if (listening) resolve({ process: child, baseUrl: listening[1]!, exited, output });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => reject(new Error(`the server exited (${code}) before listening:\n${output.join('\n')}`)));
  });
}

/** One client: its own machine, consecutive one-minute points, one call at a time. */
class Client {
  /** Timestamps (ms) of points answered 202. */
  readonly acked = new Set<number>();
  /** Points sent in calls that got no 202 (refused, or cut off by the kill). */
  unacked = 0;
  private nextMs: number;

  constructor(readonly machineId: string, index: number) {
    this.nextMs = START_MS + index * 1000;
  }

  /** Sends until a call fails (the server went away); resolves with the number of 202s. */
  async run(baseUrl: string, key: string, stop: () => boolean): Promise<number> {
    let accepted = 0;
    while (!stop()) {
      const timestamps = Array.from({ length: POINTS_PER_CALL }, (_, i) => this.nextMs + i * MINUTE);
      // Always forward: a point at or before the machine's newest judged one would be skipped.
      this.nextMs += POINTS_PER_CALL * MINUTE;
      const points = timestamps.map((ms) => ({ timestamp: new Date(ms).toISOString(), value: 50 + 5 * Math.sin(ms / (60 * MINUTE)) }));
      let status = 0;
      try {
        const response = await fetch(`${baseUrl}/v1/telemetry`, {
          method: 'POST',
          headers: { 'x-service-key': key, 'content-type': 'application/json' },
          body: JSON.stringify({ machine_id: this.machineId, points }),
        });
        status = response.status;
        await response.arrayBuffer();
      } catch {
        status = 0;
      }
      if (status === 202) {
        for (const ms of timestamps) this.acked.add(ms);
        accepted++;
      } else {
        this.unacked += POINTS_PER_CALL;
        if (status === 0) return accepted;
      }
    }
    return accepted;
  }
}

async function getJson(url: string, key: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(url, { headers: { 'x-service-key': key } });
  return { status: response.status, body: await response.json() };
}

/** Every stored result timestamp of a machine, paging through GET /v1/machines/{id}/results. */
async function storedTimestamps(baseUrl: string, key: string, machineId: string): Promise<number[]> {
  const out: number[] = [];
  let cursor: string | null = null;
  do {
    const query = new URLSearchParams({ limit: '10000', ...(cursor ? { cursor } : {}) });
    const { status, body } = await getJson(`${baseUrl}/v1/machines/${machineId}/results?${query}`, key);
    if (status === 404) return out;
    if (status !== 200) throw new Error(`results of ${machineId}: HTTP ${status} ${JSON.stringify(body)}`);
    const page = body as { results: { timestamp: string }[]; next_cursor: string | null };
    for (const row of page.results) out.push(Date.parse(row.timestamp));
    cursor = page.next_cursor;
  } while (cursor !== null);
  return out;
}

/** Runs the clients against `child` until `kill` has stopped it; returns how many calls got a 202. */
async function loadUntilStopped(
  child: Child,
  key: string,
  clients: readonly Client[],
  kill: (child: Child) => void,
): Promise<number> {
  let acceptedSoFar = 0;
  let killed = false;
  const running = clients.map(async (client) => {
    const accepted = await client.run(child.baseUrl, key, () => killed);
    acceptedSoFar += accepted;
    return accepted;
  });
  // A random moment after the load is under way: at least a few 202s, then 0.2 to 1.5 s more.
  const acks = () => clients.reduce((n, client) => n + client.acked.size, 0);
  const before = acks();
  await expect.poll(() => acks() - before, { timeout: 60_000, interval: 20 }).toBeGreaterThanOrEqual(4 * POINTS_PER_CALL);
  const moreMs = 200 + Math.floor(Math.random() * 1300);
  const until = Date.now() + moreMs;
  await expect.poll(() => Date.now() >= until, { timeout: moreMs + 5_000, interval: 20 }).toBe(true);
  kill(child);
  await child.exited;
  killed = true;
  await Promise.all(running);
  return acceptedSoFar;
}

/** After the last start: every 202'd point has exactly one result, and nothing else is there. */
async function expectEveryAcceptedPointOnce(child: Child, key: string, clients: readonly Client[]): Promise<void> {
  for (const client of clients) {
    let stored: number[] = [];
    await expect
      .poll(
        async () => {
          stored = await storedTimestamps(child.baseUrl, key, client.machineId);
          return [...client.acked].filter((ms) => !stored.includes(ms)).length;
        },
        { timeout: 180_000, interval: 250 },
      )
      .toBe(0);
    const counts = new Map<number, number>();
    for (const ms of stored) counts.set(ms, (counts.get(ms) ?? 0) + 1);
    const duplicated = [...counts].filter(([, n]) => n > 1);
    expect(duplicated, `${client.machineId}: timestamps with more than one result`).toEqual([]);
    for (const ms of client.acked) expect(counts.get(ms), `${client.machineId} @ ${new Date(ms).toISOString()}`).toBe(1);
  }
  // Usage counts what was accepted: at least every 202, never more than was sent.
  const { body } = await getJson(`${child.baseUrl}/v1/usage`, key);
  const telemetry = (body as { endpoint: string; total_points: number }[]).find((entry) => entry.endpoint === 'telemetry');
  const acked = clients.reduce((n, client) => n + client.acked.size, 0);
  const sent = acked + clients.reduce((n, client) => n + client.unacked, 0);
  expect(telemetry?.total_points).toBeGreaterThanOrEqual(acked);
  expect(telemetry?.total_points).toBeLessThanOrEqual(sent);
}

describe('POST /v1/telemetry on the embedded default: a 202 survives the process', () => {
  it('keeps every accepted point through SIGKILLs at random moments: each has exactly one result after a restart', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'adp-durable-'));
    dirs.push(dataDir);
    const key = randomTestKey();
    const clients = Array.from({ length: CLIENTS }, (_, i) => new Client(`press-${i}`, i));
    for (let round = 0; round < 3; round++) {
      const child = await startServer(dataDir, key);
      const accepted = await loadUntilStopped(child, key, clients, (c) => c.process.kill('SIGKILL'));
      expect(accepted).toBeGreaterThan(0);
    }
    const last = await startServer(dataDir, key);
    await expectEveryAcceptedPointOnce(last, key, clients);
    last.process.kill('SIGTERM');
    expect(await last.exited).toBe(0);
  }, TEST_TIMEOUT_MS);

  it('keeps every accepted point through SIGTERMs under load: what the grace period does not drain is replayed', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'adp-durable-'));
    dirs.push(dataDir);
    const key = randomTestKey();
    const clients = Array.from({ length: CLIENTS }, (_, i) => new Client(`lathe-${i}`, i));
    const env = { SHUTDOWN_GRACE_MS: '1000' };
    for (let round = 0; round < 2; round++) {
      const child = await startServer(dataDir, key, env);
      await loadUntilStopped(child, key, clients, (c) => c.process.kill('SIGTERM'));
    }
    const last = await startServer(dataDir, key, env);
    await expectEveryAcceptedPointOnce(last, key, clients);
    last.process.kill('SIGTERM');
    await last.exited;
  }, TEST_TIMEOUT_MS);
});
