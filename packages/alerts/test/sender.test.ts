// Attempts made in the delivery thread: signed there so that the Standard Webhooks library
// verifies them (with every secret in force), the receiver's answer reported, a target on a
// loopback address refused unless allowed, attempts in flight abandoned on close, and a thread
// that dies answering its attempts as failed instead of leaving them hanging.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { newWebhookSecret } from '../src/index.js';
import { threadSender, type AttemptSender, type SenderAttempt } from '../src/sender.js';

const SETTINGS = { maxSocketsPerAddress: 2, idleMs: 1_000 };
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanups.splice(0).reverse()) await step();
});

interface Received {
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

async function receiver(status: number, delayMs = 0): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      setTimeout(() => res.writeHead(status).end(), delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise((resolve) => {
        server.close(resolve);
        server.closeAllConnections();
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received };
}

function sender(entry?: URL): AttemptSender {
  const started = entry ? threadSender(SETTINGS, entry) : threadSender(SETTINGS);
  cleanups.push(() => started.close());
  return started;
}

const body = '{"type":"episode.opened","timestamp":"2026-01-01T00:00:00.000Z","data":{}}';
const attempt = (url: string, secrets: readonly string[], overrides: Partial<SenderAttempt> = {}): SenderAttempt => ({
  url,
  body,
  secrets,
  messageId: 'msg_thread_1',
  atMs: Date.now(),
  timeoutMs: 5_000,
  allowPrivate: true,
  ...overrides,
});

describe('threadSender', () => {
  it('signs in the thread with every secret in force, so that the library verifies the delivery with either', async () => {
    const target = await receiver(204);
    const [current, old] = [newWebhookSecret(), newWebhookSecret()];
    const outcome = await sender().send(attempt(target.url, [current, old]));
    expect(outcome).toMatchObject({ ok: true, statusCode: 204, error: null });
    expect(target.received).toHaveLength(1);
    const { headers, body: got } = target.received[0]!;
    expect(got).toBe(body);
    expect(headers['webhook-id']).toBe('msg_thread_1');
    expect(String(headers['webhook-signature']).split(' ')).toHaveLength(2);
    const signed = { 'webhook-id': String(headers['webhook-id']), 'webhook-timestamp': String(headers['webhook-timestamp']), 'webhook-signature': String(headers['webhook-signature']) };
    expect(new Webhook(current).verify(got, signed)).toEqual(JSON.parse(body));
    expect(new Webhook(old).verify(got, signed)).toEqual(JSON.parse(body));
    expect(() => new Webhook(newWebhookSecret()).verify(got, signed)).toThrow();
  });

  it("reports the receiver's failure and refuses a loopback target unless private targets are allowed", async () => {
    const target = await receiver(500);
    const send = sender();
    expect(await send.send(attempt(target.url, [newWebhookSecret()]))).toMatchObject({ ok: false, statusCode: 500, error: 'HTTP 500' });
    const refused = await send.send(attempt(target.url, [newWebhookSecret()], { allowPrivate: false }));
    expect(refused).toMatchObject({ ok: false, statusCode: null });
    expect(refused.error).toMatch(/^WebhookUrlForbidden: /);
    expect(target.received).toHaveLength(1);
  });

  it('abandons the attempts in flight when closed', async () => {
    const target = await receiver(204, 10_000);
    const send = sender();
    const outcome = send.send(attempt(target.url, [newWebhookSecret()]));
    await expect.poll(() => target.received.length, { timeout: 30_000 }).toBe(1);
    await send.close();
    expect(await outcome).toMatchObject({ ok: false, statusCode: null, error: 'abandoned: the dispatcher stopped' });
    expect(await send.send(attempt(target.url, [newWebhookSecret()]))).toMatchObject({ ok: false, error: 'abandoned: the dispatcher stopped' });
  });

  it('answers an attempt as failed when its thread dies, and starts a new thread for the next', async () => {
    const send = sender(new URL('data:text/javascript,process.exit(3)'));
    for (const messageId of ['msg_a', 'msg_b']) {
      // The second would never be answered if it were posted to the dead thread.
      expect(await send.send(attempt('http://127.0.0.1:9/hook', [newWebhookSecret()], { messageId }))).toMatchObject({ ok: false, statusCode: null, error: 'the delivery thread exited (3)' });
    }
  });
});
