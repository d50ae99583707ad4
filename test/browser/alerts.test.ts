// The dashboard's Webhooks page and a machine's episodes, alerts and feedback, in real Chromium
// against the platform `npm start` opens (embedded store, bus, worker and dispatcher) on a loopback
// port, with receivers this test runs on 127.0.0.1 (WEBHOOK_ALLOW_PRIVATE=true). On the Webhooks
// page: create a target (its secret shown once, and a test delivery verifies with it), read the
// delivery log, see a refused URL said in words, see a failing target disabled with the reason and
// re-enable it. On the machine page: the episode of a spike with what became of each alert's
// deliveries, "Not an anomaly" on the episode and on a flagged point (the feedback stored and
// listed), and removal (also of feedback already gone).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { constantEnergyModel } from '../../apps/api/test/streaming-helpers.js';
import { chromiumPresent, launchChromium } from './chromium.js';
import { signInWithPassword, startBrowserTestPlatform, type BrowserTestPlatform } from './platform.js';

const inCi = process.env['CI'] === 'true';
/** Waits on the page: generous, for a loaded CI machine (each wait ends as soon as its condition holds). */
const WAIT = { timeout: 60_000, interval: 100 };
const MACHINE = 'pump-17';
const minute = (i: number): string => new Date(Date.UTC(2025, 5, 1, 10, i)).toISOString();
const SPIKE_AT = minute(250);

interface Received {
  readonly headers: Record<string, string>;
  readonly body: string;
}

interface Receiver {
  readonly url: string;
  readonly received: Received[];
  status: number;
  close(): Promise<void>;
}

async function receiver(status: number): Promise<Receiver> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers as Record<string, string>, body });
      res.writeHead(self.status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const self: Receiver = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    status,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  return self;
}

/** 300 one-minute points of a 60-minute cycle with a spike of +15 at point 250. */
function telemetry(machineId: string) {
  const points = Array.from({ length: 300 }, (_, i) => ({
    timestamp: minute(i),
    value: 50 + 5 * Math.sin((2 * Math.PI * i) / 60) + ((i * 7919) % 13) / 26 + (i === 250 ? 15 : 0),
  }));
  return { machine_id: machineId, points };
}

interface WebhookBody {
  webhook_id: string;
  url: string;
  enabled: boolean;
  disabled_reason: string | null;
}
interface FeedbackBody {
  feedback_id: string;
  from: string;
  to: string;
  label: string;
  pattern: { low: number; high: number; direction: string; points: number } | null;
}
interface EpisodesBody {
  episodes: { started_at: string; alerts: { event: string; deliveries: { webhook_id: string; status: string }[] }[] }[];
}

describe.skipIf(!chromiumPresent && !inCi)('webhooks, episodes and feedback in Chromium', () => {
  let started: BrowserTestPlatform | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let baseUrl: string;
  let key: string;
  let good: Receiver;
  let bad: Receiver;
  /** The target on `good` (every machine, opened and closed) and its secret, shown once. */
  let goodTarget: { webhookId: string; secret: string };
  let badTargetId: string;

  async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { 'x-service-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    expect(response.status, `${method} ${path}`).toBeLessThan(300);
    return (await response.json()) as T;
  }

  const webhookRow = (webhookId: string) => page.locator(`tr[data-webhook-id="${webhookId}"]`);

  /** Creates a target on the page's form; its id from the table's new row. */
  async function createOnPage(url: string, options: { machines?: string; closed?: boolean } = {}): Promise<string> {
    await page.getByLabel('URL').fill(url);
    if (options.closed === false) await page.getByLabel('episode.closed').uncheck();
    await page.getByLabel('Machines (comma-separated)').fill(options.machines ?? '');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    const row = page.locator('tr[data-webhook-id]', { hasText: url });
    await row.waitFor();
    return (await row.getAttribute('data-webhook-id')) ?? '';
  }

  beforeAll(async () => {
    good = await receiver(204);
    bad = await receiver(503);
    started = await startBrowserTestPlatform('adp-browser-alerts-', {
      env: {
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_RETRIES: '1',
        WEBHOOK_RETRY_MIN_DELAY_MS: '10',
        WEBHOOK_RETRY_MAX_DELAY_MS: '50',
        WORKER_EPISODE_QUIET_POINTS: '5',
      },
      model: constantEnergyModel(1),
    });
    ({ baseUrl, key } = started);
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage();
    page.setDefaultTimeout(WAIT.timeout);
    await page.goto(`${baseUrl}/dashboard/`);
    await signInWithPassword(page, started.email, started.password);
  });

  afterAll(async () => {
    await browser?.close();
    await started?.close();
    await good?.close();
    await bad?.close();
  });

  it('creates a webhook: its secret shown once, a test delivery verifies with it, and the delivery log lists it', async () => {
    await page.goto(`${baseUrl}/dashboard/#/webhooks`);
    await page.getByText('No webhooks yet.').waitFor();
    const webhookId = await createOnPage(good.url);
    const secret = await page.getByTestId('webhook-secret').inputValue();
    expect(secret).toMatch(/^whsec_/);
    goodTarget = { webhookId, secret };
    // Never again: not in the API's list, not on the page once put away or reloaded.
    expect(JSON.stringify(await api('GET', '/v1/webhooks'))).not.toContain(secret.slice(6));
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await page.getByTestId('new-webhook').waitFor({ state: 'detached' });
    await page.reload();
    await webhookRow(webhookId).waitFor();
    expect(await page.content()).not.toContain(secret.slice(6));
    await expect.poll(() => webhookRow(webhookId).getAttribute('data-state'), WAIT).toBe('enabled');
    expect(await webhookRow(webhookId).locator('td').nth(1).textContent()).toBe('episode.opened, episode.closed');
    expect(await webhookRow(webhookId).locator('td').nth(2).textContent()).toBe('all');

    await webhookRow(webhookId).getByRole('button', { name: 'Send test' }).click();
    await expect.poll(() => page.getByTestId('test-result').textContent(), WAIT).toBe('Test delivery delivered: HTTP 204.');
    expect(good.received).toHaveLength(1);
    const verified = new Webhook(secret).verify(good.received[0]!.body, good.received[0]!.headers) as { type: string; data: { webhook_id: string } };
    expect(verified).toMatchObject({ type: 'webhook.test', data: { webhook_id: webhookId } });
    // The log the test opened: the delivery, as the API has it.
    const log = page.getByTestId('deliveries');
    await log.waitFor();
    const [delivery] = (await api<{ deliveries: { delivery_id: string; attempts: unknown[] }[] }>('GET', `/v1/webhooks/${webhookId}/deliveries`)).deliveries;
    expect(delivery?.delivery_id).toBe(good.received[0]!.headers['webhook-id']);
    const row = log.locator(`tr[data-delivery-id="${delivery!.delivery_id}"]`);
    expect(await row.locator('td').evaluateAll((cells) => cells.slice(1, 5).map((c) => c.textContent))).toEqual(['webhook.test', 'delivered', '1', 'HTTP 204']);
  });

  it('says a refused URL in words and creates nothing', async () => {
    await page.getByLabel('URL').fill('ftp://hooks.example.com/adp');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    const refusal = page.getByRole('alert');
    await refusal.waitFor();
    expect(await refusal.textContent()).toMatch(/\(400 WebhookUrlInvalid\)$/);
    expect((await api<{ webhooks: unknown[] }>('GET', '/v1/webhooks')).webhooks).toHaveLength(1);
  });

  it('a failing target: the test says so, alerts exhaust their retries, the page shows it disabled with why, and Re-enable turns it back on', async () => {
    badTargetId = await createOnPage(bad.url, { machines: MACHINE, closed: false });
    expect(await webhookRow(badTargetId).locator('td').nth(1).textContent()).toBe('episode.opened');
    expect(await webhookRow(badTargetId).locator('td').nth(2).textContent()).toBe(MACHINE);
    await webhookRow(badTargetId).getByRole('button', { name: 'Send test' }).click();
    await expect.poll(() => page.getByTestId('test-result').textContent(), WAIT).toBe('Test delivery failed: HTTP 503.');
    expect(await page.getByTestId('test-result').getAttribute('class')).toBe('error');

    await api('POST', '/v1/telemetry', telemetry(MACHINE));
    await expect.poll(async () => (await api<WebhookBody>('GET', `/v1/webhooks/${badTargetId}`)).enabled, WAIT).toBe(false);
    const { disabled_reason } = await api<WebhookBody>('GET', `/v1/webhooks/${badTargetId}`);
    expect(disabled_reason).toMatch(/failed 2 attempts; last: HTTP 503$/);
    await page.reload();
    await expect.poll(() => webhookRow(badTargetId).getAttribute('data-state'), WAIT).toBe('disabled');
    expect(await webhookRow(badTargetId).getByTestId('webhook-state').textContent()).toContain(disabled_reason!);
    await webhookRow(badTargetId).getByRole('button', { name: 'Deliveries' }).click();
    const failed = page.getByTestId('deliveries').locator('tr', { hasText: 'episode.opened' });
    await failed.waitFor();
    expect(await failed.locator('td').evaluateAll((cells) => cells.slice(1, 5).map((c) => c.textContent))).toEqual(['episode.opened', 'failed', '2', 'HTTP 503']);

    bad.status = 204;
    await webhookRow(badTargetId).getByRole('button', { name: 'Re-enable' }).click();
    await expect.poll(() => webhookRow(badTargetId).getAttribute('data-state'), WAIT).toBe('enabled');
    expect(await api<WebhookBody>('GET', `/v1/webhooks/${badTargetId}`)).toMatchObject({ enabled: true, disabled_reason: null });
    await webhookRow(badTargetId).getByRole('button', { name: 'Send test' }).click();
    await expect.poll(() => page.getByTestId('test-result').textContent(), WAIT).toBe('Test delivery delivered: HTTP 204.');
  });

  it("the machine page lists the spike's episode with each alert's deliveries; Not an anomaly stores feedback the page lists, and it can be removed", async () => {
    // Both alerts of the spike's episode recorded, and the good target's deliveries done.
    await expect
      .poll(async () => {
        const { episodes } = await api<EpisodesBody>('GET', `/v1/machines/${MACHINE}/episodes`);
        const spike = episodes.find((e) => e.started_at === SPIKE_AT);
        return spike?.alerts.map((a) => `${a.event} ${a.deliveries.map((d) => `${d.webhook_id === goodTarget.webhookId ? 'good' : 'bad'}:${d.status}`).sort().join(' ')}`);
      }, WAIT)
      .toEqual([`episode.opened bad:failed good:delivered`, `episode.closed good:delivered`]);

    await page.goto(`${baseUrl}/dashboard/#/machines/${MACHINE}`);
    const episode = page.locator(`[data-testid="episodes"] tr[data-started-at="${SPIKE_AT}"]`);
    await episode.waitFor();
    expect(await episode.getAttribute('data-state')).toBe('closed');
    expect(await episode.getByTestId('episode-alerts').locator('div').allTextContents()).toEqual([
      'opened: delivered to 1 of 2, 1 failed (HTTP 503)',
      'closed: delivered to 1 of 1',
    ]);
    expect(await episode.locator('td').evaluateAll((cells) => cells.slice(0, 4).map((c) => c.textContent))).toEqual([
      'machine',
      '2025-06-01 14:10:00 UTC',
      '2025-06-01 14:10:00 UTC',
      '1',
    ]);
    await page.getByTestId('feedback').or(page.getByText('No feedback yet.')).first().waitFor();
    expect(await page.getByTestId('machine-feedback').textContent()).toContain('No feedback yet.');

    await episode.getByTestId('episode-not-anomaly').click();
    await episode.getByRole('status').waitFor();
    expect(await episode.getByRole('status').textContent()).toBe('Marked: like points no longer alert.');
    const stored = (await api<{ feedback: FeedbackBody[] }>('GET', `/v1/machines/${MACHINE}/feedback`)).feedback;
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ from: SPIKE_AT, to: new Date(Date.parse(SPIKE_AT) + 1).toISOString(), label: 'not_anomaly', pattern: { direction: 'up', points: 1 } });
    const listed = page.locator(`[data-testid="feedback"] tr[data-feedback-id="${stored[0]!.feedback_id}"]`);
    await listed.waitFor();
    expect(await listed.locator('td').nth(2).textContent()).toBe('not an anomaly');

    // The flagged point's own button, in the stored results' table: a second piece of feedback, listed too.
    const pointButton = page.getByTestId('not-anomaly').first();
    await pointButton.click();
    await expect.poll(async () => (await api<{ feedback: FeedbackBody[] }>('GET', `/v1/machines/${MACHINE}/feedback`)).feedback.length, WAIT).toBe(2);
    await expect.poll(() => page.locator('[data-testid="feedback"] tbody tr').count(), WAIT).toBe(2);

    // Removed on the page; and removing one already gone is said in words.
    await listed.getByRole('button', { name: 'Remove' }).click();
    await listed.waitFor({ state: 'detached' });
    const [last] = (await api<{ feedback: FeedbackBody[] }>('GET', `/v1/machines/${MACHINE}/feedback`)).feedback;
    expect(last).toBeDefined();
    await api('DELETE', `/v1/machines/${MACHINE}/feedback/${last!.feedback_id}`);
    const gone = page.locator(`[data-testid="feedback"] tr[data-feedback-id="${last!.feedback_id}"]`);
    await gone.getByRole('button', { name: 'Remove' }).click();
    await gone.getByRole('alert').waitFor();
    expect(await gone.getByRole('alert').textContent()).toBe('This feedback was already removed. Reload the page.');
    expect((await api<{ feedback: unknown[] }>('GET', `/v1/machines/${MACHINE}/feedback`)).feedback).toEqual([]);
  });
});
