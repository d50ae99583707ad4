// The address guard refuses private targets after resolution; a delivery never follows a redirect.
import { getEventListeners } from 'node:events';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryConnections, TargetRefused, attemptDelivery, isPublicAddress, resolveTarget, type Lookup } from '../src/index.js';

const lookupTo = (address: string): Lookup => () => Promise.resolve([{ address, family: address.includes(':') ? 6 : 4 }]);

async function refusal(run: Promise<unknown>): Promise<string> {
  try {
    await run;
  } catch (err) {
    expect(err).toBeInstanceOf(TargetRefused);
    return (err as TargetRefused).code;
  }
  throw new Error('expected a refusal');
}

describe('resolveTarget', () => {
  it('tells public addresses from private, loopback, link-local and mapped ones', () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '::1', 'fe80::1', 'fc00::1', '::ffff:10.0.0.1', '0.0.0.0', '100.64.0.1']) {
      expect(isPublicAddress(address), address).toBe(false);
    }
    for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700::1111']) expect(isPublicAddress(address), address).toBe(true);
  });

  it('refuses a host that resolves to a private address unless private targets are allowed', async () => {
    expect(await refusal(resolveTarget('https://hooks.example.com/x', { allowPrivate: false, lookup: lookupTo('10.0.0.7') }))).toBe('WebhookUrlForbidden');
    expect(await refusal(resolveTarget('http://127.0.0.1:9/x', { allowPrivate: false }))).toBe('WebhookUrlForbidden');
    expect(await refusal(resolveTarget('http://[::1]:9/x', { allowPrivate: false }))).toBe('WebhookUrlForbidden');
    await expect(resolveTarget('http://127.0.0.1:9/x', { allowPrivate: true })).resolves.toMatchObject({ address: '127.0.0.1', family: 4 });
    await expect(resolveTarget('https://hooks.example.com/x', { allowPrivate: false, lookup: lookupTo('93.184.216.34') })).resolves.toMatchObject({ address: '93.184.216.34' });
  });

  it('refuses what is not an http(s) URL, or carries credentials, or does not resolve', async () => {
    expect(await refusal(resolveTarget('ftp://example.com/x', { allowPrivate: true }))).toBe('WebhookUrlInvalid');
    expect(await refusal(resolveTarget('not a url', { allowPrivate: true }))).toBe('WebhookUrlInvalid');
    expect(await refusal(resolveTarget('https://user:pw@example.com/', { allowPrivate: true }))).toBe('WebhookUrlInvalid');
    const failing: Lookup = () => Promise.reject(new Error('ENOTFOUND'));
    expect(await refusal(resolveTarget('https://nowhere.invalid/', { allowPrivate: true, lookup: failing }))).toBe('WebhookUrlUnresolvable');
  });
});

describe('attemptDelivery', () => {
  const servers: http.Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
  });
  async function serve(handler: http.RequestListener): Promise<string> {
    const server = http.createServer(handler);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it('posts the body with the headers and reports the status', async () => {
    let received = '';
    let headers: http.IncomingHttpHeaders = {};
    const url = await serve((req, res) => {
      headers = req.headers;
      req.on('data', (chunk: Buffer) => (received += chunk.toString()));
      req.on('end', () => res.writeHead(204).end());
    });
    const outcome = await attemptDelivery({ url: `${url}/hook`, body: '{"a":1}', headers: { 'webhook-id': 'msg_1' }, timeoutMs: 5_000, allowPrivate: true });
    expect(outcome).toMatchObject({ ok: true, statusCode: 204, error: null });
    expect(received).toBe('{"a":1}');
    expect(headers['webhook-id']).toBe('msg_1');
    expect(headers['content-type']).toBe('application/json');
  });

  it('does not follow a redirect, reports a failure status, a timeout, and a refused private target', async () => {
    let followed = false;
    const elsewhere = await serve((_req, res) => {
      followed = true;
      res.writeHead(200).end();
    });
    const redirecting = await serve((_req, res) => res.writeHead(302, { location: elsewhere }).end());
    expect(await attemptDelivery({ url: redirecting, body: '{}', headers: {}, timeoutMs: 5_000, allowPrivate: true })).toMatchObject({ ok: false, statusCode: 302 });
    expect(followed).toBe(false);
    const failing = await serve((_req, res) => res.writeHead(500).end('no'));
    expect(await attemptDelivery({ url: failing, body: '{}', headers: {}, timeoutMs: 5_000, allowPrivate: true })).toMatchObject({ ok: false, statusCode: 500, error: 'HTTP 500' });
    const silent = await serve(() => undefined);
    expect(await attemptDelivery({ url: silent, body: '{}', headers: {}, timeoutMs: 100, allowPrivate: true })).toMatchObject({ ok: false, statusCode: null, error: 'no answer within 100 ms' });
    const refused = await attemptDelivery({ url: failing, body: '{}', headers: {}, timeoutMs: 5_000, allowPrivate: false });
    expect(refused).toMatchObject({ ok: false, statusCode: null });
    expect(refused.error).toMatch(/^WebhookUrlForbidden/);
  });

  it('reuses a kept-open connection per checked address, closes them on request, and leaves no listener on the signal', async () => {
    const sockets = new Set<unknown>();
    const url = await serve((req, res) => {
      sockets.add(req.socket);
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    });
    const connections = new DeliveryConnections({ maxSocketsPerAddress: 2, idleMs: 4_000 });
    const signal = new AbortController().signal;
    for (let i = 0; i < 3; i++) {
      const outcome = await attemptDelivery({ url: `${url}/hook`, body: '{}', headers: {}, timeoutMs: 5_000, allowPrivate: true, signal, connections });
      expect(outcome).toMatchObject({ ok: true, statusCode: 204 });
    }
    expect(sockets.size).toBe(1);
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    // Without the pools, a connection per attempt.
    await attemptDelivery({ url: `${url}/hook`, body: '{}', headers: {}, timeoutMs: 5_000, allowPrivate: true });
    expect(sockets.size).toBe(2);
    connections.close();
    const [first] = [...sockets] as Socket[];
    await new Promise((resolve) => (first!.destroyed ? resolve(undefined) : first!.once('close', resolve)));
    expect(first!.destroyed).toBe(true);
  });
});
