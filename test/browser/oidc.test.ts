// Dashboard sign-in through an identity provider in real Chromium: the platform with OIDC_CLIENT_ID
// set, a loopback provider (apps/api/test/oidc-login-provider.ts) that signs the user in at once,
// the round trip through its authorize endpoint back to the dashboard, signed in, then signed out.
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '@adp/stream-worker';
import { startLoginProvider, type LoginProvider } from '../../apps/api/test/oidc-login-provider.js';
import { loadConfig } from '../../apps/api/src/config.js';
import { openPlatform, type Platform } from '../../apps/api/src/platform.js';
import { chromiumPresent, launchChromium } from './chromium.js';

const inCi = process.env['CI'] === 'true';
const WAIT = { timeout: 60_000, interval: 100 };

describe.skipIf(!chromiumPresent && !inCi)('dashboard sign-in through an identity provider, in Chromium', () => {
  let platform: Platform | undefined;
  let provider: LoginProvider | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let baseUrl: string;
  let dataDir: string;

  beforeAll(async () => {
    provider = await startLoginProvider();
    dataDir = await mkdtemp(join(tmpdir(), 'adp-browser-oidc-'));
    const env = {
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'warn',
      OIDC_ISSUER: provider.issuer,
      OIDC_AUDIENCE: 'adp-api',
      OIDC_CLIENT_ID: provider.clientId,
    };
    const config = loadConfig(env);
    platform = await openPlatform(config, { logger: { level: config.logLevel }, worker: loadWorkerConfig(env) });
    await platform.app.listen({ host: config.host, port: config.port });
    baseUrl = `http://127.0.0.1:${(platform.app.server.address() as AddressInfo).port}`;
    provider.claims = { org_id: platform.app.bootstrap.organizationId, email: 'sso-user@example.com' };
    browser = await launchChromium();
    page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(WAIT.timeout);
  });

  afterAll(async () => {
    await browser?.close();
    await platform?.close();
    await provider?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('signs in at the provider and comes back signed in, then signs out', async () => {
    await page.goto(`${baseUrl}/dashboard/`);
    await page.getByTestId('oidc-signin').click();
    await page.getByTestId('who').waitFor();
    expect(await page.getByTestId('who').textContent()).toBe('Signed in as sso-user@example.com');
    expect(page.url()).toBe(`${baseUrl}/dashboard/`);
    expect(provider?.authorizeRequests[0]?.get('redirect_uri')).toBe(`${baseUrl}/dashboard/api/oidc/callback`);
    expect((await page.context().cookies()).map((cookie) => cookie.name)).toEqual(['adp_session']);

    await page.getByTestId('sign-out').click();
    await page.getByTestId('signin').waitFor();
    expect(await page.context().cookies()).toEqual([]);
  });
});
