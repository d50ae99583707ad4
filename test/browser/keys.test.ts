// The dashboard's Keys page in real Chromium against the platform `npm start` opens, on a loopback
// port: sign in with the first-start account, create a live key (its secret shown once, and it
// works), see the last live key refused revocation in plain words, revoke the key (refused
// afterwards), rotate another one. With SCREENSHOTS=1 it saves docs/screenshots/keys.png.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumPresent, launchChromium } from './chromium.js';
import { signInWithPassword, startBrowserTestPlatform, type BrowserTestPlatform } from './platform.js';

const inCi = process.env['CI'] === 'true';
const SCREENSHOTS = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
const TAKE_SCREENSHOTS = process.env['SCREENSHOTS'] === '1';
/** Waits on the page: generous, for a loaded CI machine (each wait ends as soon as its condition holds). */
const WAIT = { timeout: 60_000, interval: 100 };

describe.skipIf(!chromiumPresent && !inCi)('the Keys page in Chromium', () => {
  let started: BrowserTestPlatform | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let baseUrl: string;
  let email: string;
  let password: string;
  /** The live key `ci` the second test creates and the third rotates. */
  let ci: { keyId: string; secret: string };

  /** The status of a call made with `key` alone, as a client of the API would make it. */
  async function statusWith(key: string, path = '/v1/usage'): Promise<number> {
    return (await fetch(`${baseUrl}${path}`, { headers: { 'x-service-key': key } })).status;
  }

  /** Creates a key on the page and returns its id and the secret the page showed. */
  async function createKey(kind: 'live' | 'test', name: string): Promise<{ keyId: string; secret: string }> {
    await page.getByLabel('Kind').selectOption(kind);
    await page.getByLabel('Name').fill(name);
    await page.getByRole('button', { name: 'Create key' }).click();
    const panel = page.getByTestId('new-key');
    await panel.waitFor();
    const keyId = (await panel.getAttribute('data-key-id')) ?? '';
    await page.locator(`tr[data-key-id="${keyId}"]`).waitFor();
    return { keyId, secret: await page.getByTestId('key-secret').inputValue() };
  }

  function row(keyId: string) {
    return page.locator(`tr[data-key-id="${keyId}"]`);
  }

  beforeAll(async () => {
    started = await startBrowserTestPlatform('adp-browser-keys-');
    ({ baseUrl, email, password } = started);
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl });
    page = await context.newPage();
    page.setDefaultTimeout(WAIT.timeout);
  });

  afterAll(async () => {
    await browser?.close();
    await started?.close();
  });

  it('signs in and lists the first-start key from the navigation', async () => {
    await page.goto(`${baseUrl}/dashboard/`);
    await signInWithPassword(page, email, password);
    await page.getByRole('link', { name: 'Keys' }).click();
    await page.getByTestId('keys').waitFor();
    expect(await page.locator('[data-testid="keys"] tbody tr').count()).toBe(1);
    expect(await page.locator('[data-testid="keys"] tbody tr td').nth(1).textContent()).toBe('test');
  });

  it('creates a live key whose secret is shown once and works; refuses to revoke the last live key in plain words; revokes it once another exists', async () => {
    const deploy = await createKey('live', 'deploy');
    expect(deploy.secret).toMatch(/^svc_live_/);
    expect(await page.getByTestId('new-key').textContent()).toContain('shown only this once');
    await page.getByTestId('copy-key').click();
    await expect.poll(() => page.getByTestId('copy-status').textContent(), WAIT).toBe('Copied.');
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(deploy.secret);
    // A live key may manage keys itself: the secret the page showed is the real key.
    expect(await statusWith(deploy.secret, '/v1/keys')).toBe(200);
    expect(await row(deploy.keyId).getByTestId('key-state').textContent()).toBe('active');

    await row(deploy.keyId).getByRole('button', { name: 'Revoke' }).click();
    await row(deploy.keyId).getByRole('button', { name: 'Confirm revoke' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent(), WAIT)
      .toBe("This is the organization's last live key that does not expire, so it cannot be revoked: create another live key first, then revoke this one.");
    expect(await statusWith(deploy.secret)).toBe(200);

    await page.getByRole('button', { name: 'I have stored it' }).click();
    ci = await createKey('live', 'ci');
    expect(ci.secret).not.toBe(deploy.secret);
    await row(deploy.keyId).getByRole('button', { name: 'Revoke' }).click();
    await row(deploy.keyId).getByRole('button', { name: 'Confirm revoke' }).click();
    await expect.poll(() => row(deploy.keyId).getAttribute('data-state'), WAIT).toBe('revoked');
    expect(await row(deploy.keyId).getByTestId('key-state').textContent()).toMatch(/^revoked \d{4}-\d\d-\d\d /);
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await statusWith(deploy.secret)).toBe(401);
    expect(await statusWith(ci.secret)).toBe(200);
  });

  it('rotates a key: the successor is shown once, and with no grace the old one is refused at once', async () => {
    await row(ci.keyId).getByRole('button', { name: 'Rotate' }).click();
    await row(ci.keyId).getByLabel('Grace seconds').fill('0');
    await row(ci.keyId).getByRole('button', { name: 'Confirm rotate' }).click();
    await expect.poll(() => page.getByTestId('new-key').getAttribute('data-key-id'), WAIT).not.toBe(ci.keyId);
    const successor = await page.getByTestId('key-secret').inputValue();
    expect(await page.getByTestId('new-key').textContent()).toContain('The successor key');
    await expect.poll(() => row(ci.keyId).getAttribute('data-state'), WAIT).toBe('revoked');
    expect(await statusWith(successor)).toBe(200);
    expect(await statusWith(ci.secret)).toBe(401);
    if (TAKE_SCREENSHOTS) await page.screenshot({ path: join(SCREENSHOTS, 'keys.png') });

    // Where the clipboard refuses, the field is selected to copy by hand.
    // Page-side code goes as text: this file is typed without the DOM's types.
    await page.evaluate("navigator.clipboard.writeText = () => Promise.reject(new Error('not allowed'))");
    await page.getByTestId('copy-key').click();
    await expect.poll(() => page.getByTestId('copy-status').textContent(), WAIT).toBe('Selected: press Ctrl+C (⌘C) to copy.');
    const selected = await page.evaluate(
      "(() => { const f = document.activeElement; return f instanceof HTMLInputElement && f.dataset.testid === 'key-secret' ? f.value.slice(f.selectionStart ?? 0, f.selectionEnd ?? 0) : ''; })()",
    );
    expect(selected).toBe(successor);

    // Once the page is left, no secret is ever shown again: the list holds prefixes only.
    await page.getByRole('link', { name: 'Usage' }).click();
    await page.getByRole('link', { name: 'Keys' }).click();
    await page.getByTestId('keys').waitFor();
    expect(await page.getByTestId('new-key').count()).toBe(0);
    expect(await page.content()).not.toContain(successor);
    expect(await page.locator('[data-testid="keys"] tbody tr').count()).toBe(4);
  });
});
