// The first start as `npm start` runs it: the real server process (apps/api/src/server.ts), its
// exit and what it prints. A first start whose port is taken has already created the keys and
// saved them: it must say where, and so must every later start while the file exists. With
// BOOTSTRAP_API_KEY set, that key is the organization's only one and no keys file is written.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { randomTestKey } from './server.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const KEYS_FILE = 'bootstrap-keys.json';

interface ServerProcess {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code once the process has ended. */
  readonly exited: Promise<number | null>;
}

/**
 * Runs the server as the Dockerfile does (tsx registered in-process) with only these variables
 * besides PATH: the embedded store and bus, whatever servers the test process's environment names.
 */
function runServer(env: Record<string, string>): ServerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'apps/api/src/server.ts'], {
    cwd: ROOT,
    env: { PATH: process.env['PATH'] ?? '', LOG_LEVEL: 'warn', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve(code));
  });
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

/** Waits until the server's standard output contains `text`; fails if the process ends first. */
async function printed(server: ServerProcess, text: string): Promise<void> {
  let ended = false;
  void server.exited.then(() => (ended = true));
  while (!server.stdout().includes(text)) {
    if (ended) throw new Error(`the server ended without printing ${JSON.stringify(text)}:\n${server.stdout()}\n${server.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function stop(server: ServerProcess): Promise<number | null> {
  server.child.kill('SIGTERM');
  return server.exited;
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
}

describe('the first start, as npm start runs it', () => {
  let dataDir: string;
  const running: ServerProcess[] = [];

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'adp-first-start-'));
  });
  afterEach(async () => {
    for (const server of running.splice(0)) if (server.child.exitCode === null) await stop(server);
    await rm(dataDir, { recursive: true, force: true });
  });

  it('names the keys file when its port is taken, and every later start names it again', async () => {
    const holder = createServer();
    const port = await listen(holder);
    let first: ServerProcess;
    try {
      first = runServer({ DATA_DIR: dataDir, PORT: String(port) });
      running.push(first);
      expect(await first.exited).toBe(1);
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
    const file = join(dataDir, KEYS_FILE);
    expect(first.stderr()).toContain('EADDRINUSE');
    expect(first.stderr()).toContain(`The API keys created on this start are saved in ${file}`);
    // The keys themselves never reach the terminal of a failed start, only the file.
    expect(first.stdout() + first.stderr()).not.toContain('svc_');
    const saved = JSON.parse(await readFile(file, 'utf8')) as { keys: { kind: string; key: string }[] };
    expect(saved.keys.map((key) => key.kind)).toEqual(['test', 'live']);

    // The port is free now: the next start creates nothing and points at the file.
    const second = runServer({ DATA_DIR: dataDir, PORT: String(port) });
    running.push(second);
    await printed(second, `The first start's API keys are saved in ${file}`);
    expect(second.stdout()).not.toContain('svc_');
    // The keys in the file are the ones that work.
    const usage = await fetch(`http://127.0.0.1:${port}/v1/usage`, { headers: { 'x-service-key': saved.keys[0]!.key } });
    expect(usage.status).toBe(200);
    expect(await stop(second)).toBe(0);
  });

  it('with BOOTSTRAP_API_KEY set, creates only that key on the first start and writes no keys file', async () => {
    const key = randomTestKey();
    const holder = createServer();
    const port = await listen(holder);
    await new Promise<void>((resolve) => holder.close(() => resolve()));
    const server = runServer({ DATA_DIR: dataDir, PORT: String(port), BOOTSTRAP_API_KEY: key });
    running.push(server);
    await printed(server, 'Created BOOTSTRAP_API_KEY (a test key) for the default organization.');
    expect(server.stdout()).not.toContain('svc_');
    expect(server.stdout()).not.toContain('First start: created');
    expect(await readdir(dataDir)).not.toContain(KEYS_FILE);
    // The dashboard's first account is made either way: its password is printed once and saved.
    await printed(server, 'Dashboard account created for the default organization: admin@localhost, password');
    expect(await readdir(dataDir)).toContain('bootstrap-account.json');
    const usage = await fetch(`http://127.0.0.1:${port}/v1/usage`, { headers: { 'x-service-key': key } });
    expect(usage.status).toBe(200);
    expect(await stop(server)).toBe(0);
  });
});
