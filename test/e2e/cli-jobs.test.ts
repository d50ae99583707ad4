// The CLI's --server mode against the platform `npm start` opens (embedded, on a loopback port): a
// CSV over the synchronous 8,640 points goes as a detection job, the progress bar reaches 100 % on
// stderr, and the JSON lines are the engine's entire-series answer over the same points, each
// timestamp as the file wrote it. A refused job is a data error (status 1) with the service's code.
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectEntireSeries } from '@adp/detection';
import { loadWorkerConfig } from '@adp/stream-worker';
import { runCli } from '../../apps/cli/src/cli.js';
import { memoryIo } from '../../apps/cli/test/memory-io.js';
import { loadConfig } from '../../apps/api/src/config.js';
import { openPlatform, type Platform } from '../../apps/api/src/platform.js';
import { randomTestKey } from './server.js';

const POINTS = 20_000;
const T0 = Date.UTC(2025, 2, 1);

function csv(): { text: string; values: number[]; timestampsMs: number[] } {
  const values: number[] = [];
  const timestampsMs: number[] = [];
  const lines = ['timestamp,value'];
  for (let i = 0; i < POINTS; i++) {
    const value = Math.round((20 + 3 * Math.sin((2 * Math.PI * i) / 288) + ((i * 7919) % 11) / 11 + (i === 15_000 ? 25 : 0)) * 1000) / 1000;
    values.push(value);
    timestampsMs.push(T0 + i * 300_000);
    // Epoch seconds, as many exports write them: the output repeats them as written.
    lines.push(`${(T0 + i * 300_000) / 1000},${value}`);
  }
  return { text: `${lines.join('\n')}\n`, values, timestampsMs };
}

describe('npm run detect -- file.csv --server URL --key KEY', () => {
  let platform: Platform;
  let dataDir: string;
  let url: string;
  const key = randomTestKey();

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'adp-cli-jobs-'));
    const env = { DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: '0', BOOTSTRAP_API_KEY: key, LOG_LEVEL: 'warn' };
    platform = await openPlatform(loadConfig(env), { worker: loadWorkerConfig(env) });
    await platform.app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(platform.app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await platform?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('sends a 20,000-point file as a job, shows its progress, and prints the entire-series answer', async () => {
    const file = csv();
    const run = memoryIo({ 'long.csv': file.text });
    const status = await runCli(['long.csv', '--granularity', 'minutely', '--custom-interval', '5', '--server', url, '--key', key], run.io);
    expect(run.stderr()).toMatch(/^detect: job job_[0-9a-f]{32} accepted: 20000 points\n/);
    expect(run.stderr()).toContain(`done [${'#'.repeat(30)}] 100% 20000/20000 points\n`);
    expect(status).toBe(0);
    const lines = run.lines();
    expect(lines).toHaveLength(POINTS);
    expect(lines[0]).toMatchObject({ timestamp: String(T0 / 1000), value: file.values[0] });
    const entire = detectEntireSeries(
      { timestampsMs: file.timestampsMs, values: file.values, granularity: 'minutely', customInterval: 5, imputeMode: 'auto' },
      { sensitivity: 95, maxAnomalyRatio: 0.25 },
    );
    expect(lines.map((line) => line['isAnomaly'])).toEqual(entire.isAnomaly);
    expect(lines.map((line) => line['expectedValue'])).toEqual(entire.expectedValues);
    expect(lines[15_000]).toMatchObject({ isAnomaly: true, isPositiveAnomaly: true });
  });

  it('reports a refused job with the service\'s code, status 1', async () => {
    const run = memoryIo({ 'long.csv': csv().text });
    const status = await runCli(['long.csv', '--server', url, '--key', 'svc_test_notAKeyOfThisServer000000'], run.io);
    expect(status).toBe(1);
    expect(run.stderr()).toMatch(/^detect: submitting the job: the service answered 401 /);
    expect(run.stdout()).toBe('');
  });
});
