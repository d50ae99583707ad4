// API_WORKERS=2 on the scale-out configuration: the real server process (apps/api/src/server.ts)
// as the primary of two worker processes on one port. Connections are spread over both, and what
// they share stays right across them: an organization and its keys created through one are used
// through the other, usage counted by both adds up, the free tier's quota refuses the call after
// the one that crosses it whichever process serves it, and a revoked key is refused by both. SIGTERM
// to the primary stops both workers gracefully. The run owns its database, topics and Redis prefix.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { removeScaleOut } from '@adp/stream-worker/testing';
import { dailySeries } from '../../apps/api/test/fixtures/vendor/harness.js';
import { allServersGate, isolatedName } from './servers.js';

const servers = await allServersGate('the API as a cluster of two processes on Kafka, ClickHouse and Redis');
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ADMIN_TOKEN = 'admin-token-for-cluster-tests-0123456789';
const LAST = '/anomalydetector/v1.1/timeseries/last/detect';
const BODY = { series: dailySeries(20), granularity: 'daily' };
/** Points of one call (the series' length): the quota allows exactly CALLS_IN_QUOTA calls. */
const CALLS_IN_QUOTA = 12;

interface Answer {
  readonly status: number;
  readonly body: string;
}

/** One request on a connection of its own, so that the cluster hands each to a worker in turn. */
function request(port: number, method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      { host: '127.0.0.1', port, method, path: url, agent: false, headers: { ...headers, ...(payload ? { 'content-type': 'application/json' } : {}) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

describe.skipIf(!servers.run)(servers.title, () => {
  const run = isolatedName('it_cluster');
  const names = { database: run, prefix: `${run}:`, topics: [`${run}.telemetry`, `${run}.jobs`, `${run}.alerts`] };
  let dataDir = '';
  let child: ChildProcess | null = null;
  let stdout = '';
  let stderr = '';
  let exited: Promise<number | null> = Promise.resolve(null);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    await removeScaleOut(servers.urls, { topics: names.topics, database: names.database, redisKeyPrefix: names.prefix });
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /** The pids of the processes that logged a completed request (pino writes each line's pid). */
  const servingPids = (): Set<number> =>
    new Set(
      stdout
        .split('\n')
        .filter((line) => line.includes('"request completed"'))
        .map((line) => (JSON.parse(line) as { pid: number }).pid),
    );

  it('serves on two processes that share keys, usage, quotas and revocations, and stops them on SIGTERM', async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-cluster-'));
    const started = spawn(process.execPath, ['--import', 'tsx', 'apps/api/src/server.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env['PATH'] ?? '',
        API_WORKERS: '2',
        HOST: '127.0.0.1',
        PORT: '0',
        LOG_LEVEL: 'info',
        DATA_DIR: dataDir,
        ADMIN_TOKEN,
        EMBEDDED_WORKER: 'false',
        FREE_TIER_POINTS_PER_MONTH: String(CALLS_IN_QUOTA * BODY.series.length),
        CLICKHOUSE_URL: servers.urls.clickhouseUrl,
        CLICKHOUSE_DATABASE: names.database,
        KAFKA_BROKERS: servers.urls.kafkaBrokers,
        REDIS_URL: servers.urls.redisUrl,
        REDIS_KEY_PREFIX: names.prefix,
        REDIS_CHANNEL_PREFIX: names.prefix,
        TELEMETRY_TOPIC: names.topics[0]!,
        JOBS_TOPIC: names.topics[1]!,
        ALERTS_TOPIC: names.topics[2]!,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = started;
    started.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    started.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    exited = new Promise((resolve) => started.on('close', (code) => resolve(code)));
    let ended = false;
    void exited.then(() => (ended = true));
    await expect
      .poll(
        () => {
          if (ended) throw new Error(`the server ended:\n${stdout}\n${stderr}`);
          return stdout.includes('API: 2 worker processes listening');
        },
        { timeout: 120_000, interval: 100 },
      )
      .toBe(true);
    const listening = /"msg":"Server listening at http:\/\/127\.0\.0\.1:(\d+)"/.exec(stdout);
    const port = Number(listening?.[1]);
    expect(port).toBeGreaterThan(0);

    // An organization on the free plan, created through whichever process takes the connection.
    const created = await request(port, 'POST', '/admin/v1/organizations', { authorization: `Bearer ${ADMIN_TOKEN}` }, { name: 'Cluster Co', plan: 'free' });
    expect(created.status).toBe(201);
    const keys = (JSON.parse(created.body) as { keys: { key_id: string; kind: string; key: string }[] }).keys;
    const live = keys.find((key) => key.kind === 'live')!;
    const test = keys.find((key) => key.kind === 'test')!;

    // Every call in the quota is served, each on a new connection: both processes serve some.
    for (let call = 0; call < CALLS_IN_QUOTA; call++) {
      const answer = await request(port, 'POST', LAST, { 'ocp-apim-subscription-key': live.key }, BODY);
      expect(answer.status, answer.body).toBe(200);
    }
    expect(servingPids().size).toBe(2);
    const summary = await request(port, 'GET', '/v1/usage/summary?kind=live', { 'x-service-key': live.key });
    expect(JSON.parse(summary.body)).toMatchObject({
      plan: 'free',
      total_points: CALLS_IN_QUOTA * BODY.series.length,
      call_count: CALLS_IN_QUOTA,
      points_remaining: 0,
    });
    // The quota is used up: refused by either process, the refusals not counted.
    for (let call = 0; call < 4; call++) {
      const refused = await request(port, 'POST', LAST, { 'ocp-apim-subscription-key': live.key }, BODY);
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.body)).toMatchObject({ error: { code: '403' } });
    }
    expect(JSON.parse((await request(port, 'GET', '/v1/usage/summary?kind=live', { 'x-service-key': live.key })).body)).toMatchObject({ call_count: CALLS_IN_QUOTA });

    // A key revoked through one process is refused by both at once (the Redis key cache).
    for (let call = 0; call < 2; call++) expect((await request(port, 'POST', LAST, { 'ocp-apim-subscription-key': test.key }, BODY)).status).toBe(200);
    const revoked = await request(port, 'DELETE', `/v1/keys/${test.key_id}`, { 'x-service-key': live.key });
    expect(revoked.status, revoked.body).toBeLessThan(300);
    for (let call = 0; call < 4; call++) expect((await request(port, 'POST', LAST, { 'ocp-apim-subscription-key': test.key }, BODY)).status).toBe(401);

    started.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stdout.match(/"msg":"shutting down"/g)).toHaveLength(2);
  }, 240_000);
});
