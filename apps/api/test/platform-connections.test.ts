// Slow and surplus clients over a real loopback socket: REQUEST_TIMEOUT_MS, HEADERS_TIMEOUT_MS and
// KEEP_ALIVE_TIMEOUT_MS close connections that hold the server, and MAX_CONNECTIONS answers a
// connection beyond it with a raw 503 while the admitted ones keep working.
import net from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { NativeModelFactory } from '../src/machines/model.js';
import { API_KEY, NO_MODEL, nativeEnvironment, type NativeEnvironment } from './native-helpers.js';

interface RawConnection {
  readonly socket: net.Socket;
  /** Everything received so far. */
  received(): string;
  /** Resolves when the server has closed the connection. */
  readonly closed: Promise<void>;
}

async function connect(app: FastifyInstance): Promise<RawConnection> {
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('the app does not listen on TCP');
  const socket = net.connect({ host: '127.0.0.1', port: address.port });
  socket.on('error', () => undefined);
  let data = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    data += chunk;
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return { socket, received: () => data, closed };
}

/** Waits until `connection` has received `count` whole responses (Content-Length framed). */
async function responses(connection: RawConnection, count: number): Promise<string[]> {
  for (;;) {
    const parsed: string[] = [];
    let rest = connection.received();
    while (parsed.length < count) {
      const end = rest.indexOf('\r\n\r\n');
      if (end < 0) break;
      const length = Number(/content-length: *(\d+)/i.exec(rest.slice(0, end))?.[1] ?? 0);
      if (rest.length < end + 4 + length) break;
      parsed.push(rest.slice(0, end + 4 + length));
      rest = rest.slice(end + 4 + length);
    }
    if (parsed.length >= count) return parsed;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const HEALTHZ = 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n';

/** A detect request whose headers promise a large body that never comes in full. */
function slowUploadHeaders(): string {
  return [
    'POST /v1/detect HTTP/1.1',
    'Host: localhost',
    `X-Service-Key: ${API_KEY}`,
    'Content-Type: application/json',
    'Content-Length: 1000000',
    '',
    '',
  ].join('\r\n');
}

/** Sends one byte of body every 20 ms until the socket closes. */
function trickle(socket: net.Socket): void {
  const timer = setInterval(() => {
    if (socket.destroyed || !socket.writable) clearInterval(timer);
    else socket.write(' ');
  }, 20);
  socket.once('close', () => clearInterval(timer));
}

describe('connection timeouts and limits', () => {
  let env: NativeEnvironment;
  beforeEach(async () => {
    env = await nativeEnvironment(NO_MODEL);
  });
  afterEach(async () => {
    await env.cleanup();
  });

  async function listening(vars: Record<string, string>, model?: NativeModelFactory): Promise<FastifyInstance> {
    const app = await env.start(vars, model);
    await app.listen({ host: '127.0.0.1', port: 0 });
    return app;
  }

  it('closes a client that trickles its body once REQUEST_TIMEOUT_MS passes, with a 408', async () => {
    const app = await listening({ REQUEST_TIMEOUT_MS: '300', HEADERS_TIMEOUT_MS: '300' });
    const slow = await connect(app);
    slow.socket.write(slowUploadHeaders());
    trickle(slow.socket);
    await slow.closed;
    expect(slow.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('does not cut a request whose body has arrived while its handler runs past REQUEST_TIMEOUT_MS', async () => {
    let started = false;
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const held: NativeModelFactory = () =>
      Promise.resolve({
        modelVersion: 'fake-held',
        energies: async (values: ArrayLike<number>) => {
          started = true;
          await released;
          return { energies: new Float64Array(values.length).fill(1), embeddings: null, normalisation: { center: 0, scale: 1 } };
        },
        fineTune: () => Promise.reject(new Error('the fake model does not fine-tune')),
        close: () => Promise.resolve(),
      });
    const app = await listening({ REQUEST_TIMEOUT_MS: '300' }, held);
    const address = app.server.address();
    if (address === null || typeof address === 'string') throw new Error('the app does not listen on TCP');
    const detection = fetch(`http://127.0.0.1:${address.port}/v1/detect`, {
      method: 'POST',
      headers: { 'x-service-key': API_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ series: Array.from({ length: 48 }, (_, index) => ({ value: 10 + Math.sin(index / 3) })) }),
    });
    while (!started) await new Promise((resolve) => setTimeout(resolve, 10));
    // A slow client that connects later is cut: by then the running request is older than the timeout.
    const slow = await connect(app);
    slow.socket.write(slowUploadHeaders());
    trickle(slow.socket);
    await slow.closed;
    release();
    expect((await detection).status).toBe(200);
  });

  it('closes a client that never finishes its headers once HEADERS_TIMEOUT_MS passes', async () => {
    const app = await listening({ REQUEST_TIMEOUT_MS: '60000', HEADERS_TIMEOUT_MS: '300' });
    const slow = await connect(app);
    slow.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n');
    const timer = setInterval(() => slow.socket.writable && slow.socket.write('X-Slow: 1\r\n'), 20);
    try {
      await slow.closed;
    } finally {
      clearInterval(timer);
    }
    expect(slow.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('closes an idle keep-alive connection once KEEP_ALIVE_TIMEOUT_MS passes', async () => {
    const app = await listening({ KEEP_ALIVE_TIMEOUT_MS: '300' });
    const idle = await connect(app);
    idle.socket.write(HEALTHZ);
    const [first] = await responses(idle, 1);
    expect(first).toMatch(/^HTTP\/1\.1 200 /);
    await idle.closed;
  });

  it('answers a connection beyond MAX_CONNECTIONS with a raw 503 and closes it; admitted connections keep working', async () => {
    const app = await listening({ MAX_CONNECTIONS: '2' });
    const keepAlive = await connect(app);
    keepAlive.socket.write(HEALTHZ);
    expect((await responses(keepAlive, 1))[0]).toMatch(/^HTTP\/1\.1 200 /);
    const slow = await connect(app);
    slow.socket.write(slowUploadHeaders());

    const surplus = await connect(app);
    surplus.socket.write(HEALTHZ);
    await surplus.closed;
    const answer = surplus.received();
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    const lines = head.split('\r\n');
    expect(lines[0]).toBe('HTTP/1.1 503 Service Unavailable');
    expect(lines).toContain('Retry-After: 1');
    expect(lines).toContain('Connection: close');
    expect(lines).toContain('Content-Type: application/json; charset=utf-8');
    expect(JSON.parse(body)).toEqual({
      error: { code: 'TooManyConnections', message: 'The server has 2 connections open, its limit. Retry after 1 second.' },
    });

    // The admitted keep-alive connection still gets answers.
    keepAlive.socket.write(HEALTHZ);
    expect((await responses(keepAlive, 2))[1]).toMatch(/^HTTP\/1\.1 200 /);

    // Once the slow client's slot frees, a new connection is admitted.
    slow.socket.destroy();
    await slow.closed;
    for (;;) {
      const next = await connect(app);
      next.socket.write(HEALTHZ);
      const [response] = await Promise.race([responses(next, 1), next.closed.then(() => [''])]);
      next.socket.destroy();
      if (response?.startsWith('HTTP/1.1 200 ')) break;
      await next.closed;
    }
    keepAlive.socket.destroy();
  });
});
