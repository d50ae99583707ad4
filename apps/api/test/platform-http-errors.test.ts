// Errors answered at the HTTP edge, before or around the routes: router failures (bad URL, long
// path segment), socket-level refusals (oversized headers, broken request lines), 405 with Allow,
// content types and empty JSON bodies, the query-string key and its redaction from the logs. Each
// case asserts the exact wire shape: the platform's on native paths, the vendor's on vendor paths.
import { once } from 'node:events';
import net from 'node:net';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { redactUrl } from '../src/logging.js';
import { testEnvironment, type TestEnvironment } from './platform-helpers.js';

const KEY = 'svc_test_httperrors0123456789ab';
const JSON_TYPE = 'application/json; charset=utf-8';

/** Sends raw bytes to the listening app and reads everything until the server closes. */
async function rawExchange(port: number, request: string): Promise<string> {
  const socket = net.connect(port, '127.0.0.1');
  await once(socket, 'connect');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => undefined);
  socket.end(request);
  await once(socket, 'close');
  return Buffer.concat(chunks).toString('utf8');
}

function parseRaw(response: string): { status: number; headers: Record<string, string>; body: unknown } {
  const [head = '', body = ''] = response.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) as unknown };
}

describe('errors at the HTTP edge', () => {
  let env: TestEnvironment;
  let app: FastifyInstance;
  const keyed = { 'x-service-key': KEY };

  beforeAll(async () => {
    env = await testEnvironment();
    app = await env.start({ BOOTSTRAP_API_KEY: KEY });
  });
  afterAll(async () => {
    await env.cleanup();
  });

  it('answers a path segment over 512 characters with 414 UriTooLong on native paths', async () => {
    const response = await app.inject({ method: 'GET', url: `/v1/machines/${'a'.repeat(600)}/results`, headers: keyed });
    expect(response.statusCode).toBe(414);
    expect(response.headers['content-type']).toBe(JSON_TYPE);
    expect(response.json()).toEqual({ error: { code: 'UriTooLong', message: 'A path segment is longer than 512 characters.' } });
  });

  it('answers a path segment over 512 characters with the vendor 404 on vendor paths', async () => {
    const response = await app.inject({
      method: 'POST',
      url: `/anomalydetector/${'v'.repeat(600)}/timeseries/entire/detect`,
      headers: keyed,
    });
    expect(response.statusCode).toBe(404);
    expect(response.headers['x-ms-error-code']).toBe('NotFound');
    expect(response.headers['content-type']).toBe(JSON_TYPE);
    const body = response.json() as { code: string; message: string };
    expect(Object.keys(body)).toEqual(['code', 'message']);
    expect(body.code).toBe('NotFound');
    expect(body.message).toMatch(/^Resource not found: POST \/anomalydetector\/v{100}/);
  });

  it('answers malformed percent-encoding with 400 in the shape of the path', async () => {
    const native = await app.inject({ method: 'GET', url: '/v1/machines/%E0%A4%A/results?subscription-key=x', headers: keyed });
    expect(native.statusCode).toBe(400);
    expect(native.headers['content-type']).toBe(JSON_TYPE);
    expect(native.json()).toEqual({
      error: { code: 'BadRequest', message: 'The request path is not a valid URL (malformed percent-encoding).' },
    });
    const vendor = await app.inject({ method: 'POST', url: '/anomalydetector/v1.1/%E0%A4%A/entire/detect', headers: keyed });
    expect(vendor.statusCode).toBe(400);
    expect(vendor.headers['x-ms-error-code']).toBe('BadArgument');
    expect(vendor.json()).toEqual({ code: 'BadArgument', message: 'The request path is not a valid URL (malformed percent-encoding).' });
  });

  it('answers a method the path does not serve with 405 and Allow (platform shape)', async () => {
    const response = await app.inject({ method: 'PUT', url: '/v1/usage', headers: keyed });
    expect(response.statusCode).toBe(405);
    expect(response.headers['allow']).toBe('GET, HEAD');
    expect(response.headers['content-type']).toBe(JSON_TYPE);
    expect(response.json()).toEqual({
      error: { code: 'MethodNotAllowed', message: 'PUT is not allowed on /v1/usage; it answers GET, HEAD.' },
    });
    const parametric = await app.inject({ method: 'POST', url: '/v1/machines/pump-1', headers: keyed });
    expect(parametric.statusCode).toBe(405);
    expect(parametric.headers['allow']).toBe('DELETE');
    const unknown = await app.inject({ method: 'PUT', url: '/v1/nothing-here', headers: keyed });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: { code: 'NotFound', message: 'Route PUT /v1/nothing-here not found' } });
  });

  it('answers a method a vendor operation does not serve with 405 and Allow: POST (vendor shape)', async () => {
    const response = await app.inject({ method: 'GET', url: '/anomalydetector/v1.1/timeseries/last/detect', headers: keyed });
    expect(response.statusCode).toBe(405);
    expect(response.headers['allow']).toBe('POST');
    expect(response.headers['x-ms-error-code']).toBe('MethodNotAllowed');
    expect(response.headers['content-type']).toBe(JSON_TYPE);
    expect(response.json()).toEqual({
      code: 'MethodNotAllowed',
      message: 'GET is not allowed on /anomalydetector/v1.1/timeseries/last/detect; it answers POST.',
    });
    // An unknown version stays a 404, whatever the method.
    const unknown = await app.inject({ method: 'GET', url: '/anomalydetector/v9/timeseries/last/detect', headers: keyed });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers['x-ms-error-code']).toBe('NotFound');
  });

  it('answers text/plain on native routes with 415 UnsupportedMediaType', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/v1/detect',
      headers: { ...keyed, 'content-type': 'text/plain' },
      payload: '{"machine_id":"pump-1"}',
    });
    expect(response.statusCode).toBe(415);
    expect(response.headers['content-type']).toBe(JSON_TYPE);
    expect(response.json()).toEqual({
      error: { code: 'UnsupportedMediaType', message: "The Content-Type must be 'application/json' (got 'text/plain')." },
    });
  });

  it('accepts DELETE and GET with Content-Type: application/json and an empty body', async () => {
    const deleted = await app.inject({
      method: 'DELETE',
      url: '/v1/machines/pump-none',
      headers: { ...keyed, 'content-type': 'application/json' },
      payload: '',
    });
    // Past the body parser: the route itself answers (the machine does not exist).
    expect(deleted.statusCode).toBe(404);
    expect((deleted.json() as { error: { code: string } }).error.code).toBe('MachineNotFound');
    const usage = await app.inject({ method: 'GET', url: '/v1/usage', headers: { ...keyed, 'content-type': 'application/json' }, payload: '' });
    expect(usage.statusCode).toBe(200);
  });

  it('still answers malformed JSON with 400 BadRequest', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/v1/detect',
      headers: { ...keyed, 'content-type': 'application/json' },
      payload: '{"machine_id":',
    });
    expect(response.statusCode).toBe(400);
    expect((response.json() as { error: { code: string } }).error.code).toBe('BadRequest');
  });

  it('takes the key from the subscription-key query parameter when no header carries one', async () => {
    const ok = await app.inject({ method: 'GET', url: `/v1/usage?subscription-key=${KEY}` });
    expect(ok.statusCode).toBe(200);
    const vendor = await app.inject({ method: 'GET', url: `/anomalydetector/v1.1/timeseries/entire/detect?subscription-key=${KEY}` });
    expect(vendor.statusCode).toBe(405);
    const wrong = await app.inject({ method: 'GET', url: '/v1/usage?subscription-key=svc_test_notakeyatallnotakey' });
    expect(wrong.statusCode).toBe(401);
    expect((wrong.json() as { error: { code: string } }).error.code).toBe('401');
    // A header wins over the query, as the headers are checked first.
    const header = await app.inject({ method: 'GET', url: '/v1/usage?subscription-key=garbage', headers: keyed });
    expect(header.statusCode).toBe(200);
  });
});

describe('errors Node answers on the socket', () => {
  let env: TestEnvironment;
  let app: FastifyInstance;
  let port: number;

  beforeAll(async () => {
    env = await testEnvironment();
    app = await env.start({ BOOTSTRAP_API_KEY: KEY });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    port = address.port;
  });
  afterAll(async () => {
    await env.cleanup();
  });

  it('answers oversized headers with 431 in the platform shape', async () => {
    const raw = await rawExchange(port, `GET /v1/usage HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    const response = parseRaw(raw);
    expect(response.status).toBe(431);
    expect(response.headers['content-type']).toBe(JSON_TYPE);
    expect(response.headers['connection']).toBe('close');
    expect(response.body).toEqual({
      error: { code: 'RequestHeaderFieldsTooLarge', message: 'The request headers are larger than the server accepts.' },
    });
  });

  it('answers oversized headers on a vendor path with 431 in the vendor shape', async () => {
    const raw = await rawExchange(
      port,
      `POST /anomalydetector/v1.1/timeseries/entire/detect HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    const response = parseRaw(raw);
    expect(response.status).toBe(431);
    expect(response.headers['x-ms-error-code']).toBe('RequestHeaderFieldsTooLarge');
    expect(response.body).toEqual({ code: 'RequestHeaderFieldsTooLarge', message: 'The request headers are larger than the server accepts.' });
  });

  it('answers a request that is not HTTP with 400 in the platform shape', async () => {
    const response = parseRaw(await rawExchange(port, 'HELLO\r\n\r\n'));
    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toBe(JSON_TYPE);
    expect(response.body).toEqual({ error: { code: 'BadRequest', message: 'The request is not valid HTTP/1.1.' } });
  });
});

describe('keys in the request log', () => {
  it('redacts the subscription-key parameter and key-shaped text from logged URLs', () => {
    expect(redactUrl(`/v1/usage?a=1&subscription-key=${KEY}&b=2`)).toBe('/v1/usage?a=1&subscription-key=[redacted]&b=2');
    expect(redactUrl('/v1/usage?Subscription%2DKey=abc')).toBe('/v1/usage?Subscription%2DKey=[redacted]');
    expect(redactUrl(`/v1/usage?other=${KEY}`)).toBe('/v1/usage?other=[redacted]');
  });

  it('never writes a key to the log, whether it came in the query or a header', async () => {
    const env = await testEnvironment();
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(chunk.toString('utf8'));
        callback();
      },
    });
    const app = await buildApp(env.config({ BOOTSTRAP_API_KEY: KEY }), { logger: { level: 'trace', stream } });
    try {
      expect((await app.inject({ method: 'GET', url: `/v1/usage?subscription-key=${KEY}` })).statusCode).toBe(200);
      await app.inject({ method: 'GET', url: `/v1/nothing?subscription-key=${KEY}` });
      await app.inject({ method: 'GET', url: `/v1/machines/%E0%A4%A/results?subscription-key=${KEY}` });
      await app.inject({ method: 'GET', url: '/v1/usage', headers: { 'ocp-apim-subscription-key': KEY } });
      const log = lines.join('');
      expect(log).toContain('subscription-key=[redacted]');
      expect(log).not.toContain(KEY);
      expect(log).not.toContain(KEY.slice('svc_test_'.length));
    } finally {
      await app.close();
      await env.cleanup();
    }
  });
});
