// The platform `npm start` opens, on a loopback port with a fresh data directory, for the browser
// tests: its base URL, the first-start API key and dashboard account, and a close that removes it.
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { loadWorkerConfig } from '@adp/stream-worker';
import { loadConfig } from '../../apps/api/src/config.js';
import { openPlatform, type Platform } from '../../apps/api/src/platform.js';
import { randomTestKey } from '../e2e/server.js';

export interface BrowserTestPlatform {
  readonly platform: Platform;
  readonly baseUrl: string;
  /** The first-start test key (BOOTSTRAP_API_KEY). */
  readonly key: string;
  /** The first-start dashboard account. */
  readonly email: string;
  readonly password: string;
  close(): Promise<void>;
}

export async function startBrowserTestPlatform(dataDirPrefix: string): Promise<BrowserTestPlatform> {
  const dataDir = await mkdtemp(join(tmpdir(), dataDirPrefix));
  const key = randomTestKey();
  const env = { DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: '0', BOOTSTRAP_API_KEY: key, LOG_LEVEL: 'warn' };
  const config = loadConfig(env);
  const platform = await openPlatform(config, { logger: { level: config.logLevel }, worker: loadWorkerConfig(env) });
  const close = async (): Promise<void> => {
    await platform.close();
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    await platform.app.listen({ host: config.host, port: config.port });
    const account = platform.app.bootstrapAccount;
    if (account === null) throw new Error('the first start created no dashboard account');
    const baseUrl = `http://127.0.0.1:${(platform.app.server.address() as AddressInfo).port}`;
    return { platform, baseUrl, key, email: account.email, password: account.password, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Signs in on the dashboard's sign-in form and waits for the signed-in header. */
export async function signInWithPassword(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('who').waitFor();
}
