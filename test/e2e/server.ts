// Starts the real API on a loopback socket for the vendor-SDK tests: a fresh DATA_DIR per server,
// a known bootstrap key, an OS-assigned port. Each test file starts its own server, so no state
// (keys, usage, stored series) leaks between files.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../../apps/api/src/app.js';
import { loadConfig } from '../../apps/api/src/config.js';

export interface TestServer {
  /** `http://127.0.0.1:<port>`, without a trailing slash: what a user puts where the Azure endpoint was. */
  readonly baseUrl: string;
  /** The bootstrap test key of the default organization. */
  readonly key: string;
  readonly dataDir: string;
  close(): Promise<void>;
}

/** A key in the service's own format (`svc_test_` + url-safe characters), random on every call. */
export function randomTestKey(): string {
  return `svc_test_${randomBytes(24).toString('base64url')}`;
}

export async function startServer(): Promise<TestServer> {
  const dataDir = await mkdtemp(join(tmpdir(), 'adp-e2e-'));
  const key = randomTestKey();
  const config = loadConfig({
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: '0',
    BOOTSTRAP_API_KEY: key,
    // Warnings and errors only: a 500 behind a failing SDK call still shows in the test output.
    LOG_LEVEL: 'warn',
  });
  let app: Awaited<ReturnType<typeof buildApp>> | undefined;
  try {
    app = await buildApp(config, { logger: { level: config.logLevel } });
    await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    await app?.close().catch(() => undefined);
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  const listening = app;
  const { port } = listening.server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    key,
    dataDir,
    async close() {
      try {
        await listening.close();
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    },
  };
}
