// Errors the HTTP edge answers before any route runs: a URL the router cannot read, a path
// parameter over the router's limit, a request line or headers Node refuses (431, 400, 408), a
// method the path does not serve (405). Fastify and Node answer these with their own bodies by
// default; here every one gets the platform's shape, or the vendor's on /anomalydetector paths,
// because clients of either API parse only their own shape.
import type { Socket } from 'node:net';
import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ERRORS, type ErrorName } from './errors.js';
import { VENDOR_ERROR_STATUS, type VendorErrorCode } from './vendor/errors.js';

const VENDOR_PATH = /^\/anomalydetector(?:[/?#]|$)/i;

/** Whether `url` (path and query, as on the request line) is under the vendor-compatible prefix. */
export function isVendorUrl(url: string): boolean {
  return VENDOR_PATH.test(url);
}

/** The body and headers of one error, in the shape the path's clients parse. */
interface WireError {
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

function platformWire(name: ErrorName, message: string): WireError {
  const { statusCode, code } = ERRORS[name];
  return { statusCode, headers: {}, body: JSON.stringify({ error: { code, message } }) };
}

function vendorWire(code: VendorErrorCode, message: string): WireError {
  return { statusCode: VENDOR_ERROR_STATUS[code], headers: { 'x-ms-error-code': code }, body: JSON.stringify({ code, message }) };
}

function send(reply: FastifyReply, wire: WireError): FastifyReply {
  return reply.code(wire.statusCode).headers(wire.headers).type('application/json; charset=utf-8').send(wire.body);
}

/**
 * Fastify's `frameworkErrors`: errors its router raises before a route is chosen. Messages never
 * repeat the URL, which may carry a key in its query.
 */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const vendor = isVendorUrl(request.raw.url ?? '');
  let wire: WireError;
  switch (error.code) {
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // On the vendor paths the long segment is a version or an operation, neither of which exists.
      wire = vendor
        ? vendorWire('NotFound', 'Resource not found: a path segment is longer than 512 characters.')
        : platformWire('UriTooLong', 'A path segment is longer than 512 characters.');
      break;
    case 'FST_ERR_BAD_URL':
      wire = vendor
        ? vendorWire('BadArgument', 'The request path is not a valid URL (malformed percent-encoding).')
        : platformWire('BadRequest', 'The request path is not a valid URL (malformed percent-encoding).');
      break;
    default:
      request.log.error({ err: error }, 'router failed');
      wire = vendor ? vendorWire('InternalServerError', 'Internal server error') : platformWire('InternalError', 'Internal server error');
  }
  if (wire.statusCode < 500) request.log.info({ code: error.code, statusCode: wire.statusCode }, 'request rejected by the router');
  void send(reply, wire);
}

/** The request line's path, when the refused bytes still hold it (they do for oversized headers). */
function requestPath(rawPacket: unknown): string {
  if (!Buffer.isBuffer(rawPacket)) return '';
  const line = rawPacket.subarray(0, 8192).toString('latin1');
  return /^[A-Z]+ (\S+)/.exec(line)?.[1] ?? '';
}

/**
 * Fastify's `clientErrorHandler`: Node refused the request before Fastify saw it, so the answer is
 * written to the socket by hand and the connection closed.
 */
export function answerClientError(error: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const vendor = isVendorUrl(requestPath(error.rawPacket));
  let wire: WireError;
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW': {
      const message = 'The request headers are larger than the server accepts.';
      wire = vendor ? vendorWire('RequestHeaderFieldsTooLarge', message) : platformWire('RequestHeaderFieldsTooLarge', message);
      break;
    }
    case 'ERR_HTTP_REQUEST_TIMEOUT': {
      const message = 'The request was not received in time.';
      wire = vendor ? vendorWire('RequestTimeout', message) : platformWire('RequestTimeout', message);
      break;
    }
    default: {
      const message = 'The request is not valid HTTP/1.1.';
      wire = vendor ? vendorWire('BadArgument', message) : platformWire('BadRequest', message);
    }
  }
  if (socket.writable) {
    const headers = Object.entries({
      ...wire.headers,
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(wire.body)),
      connection: 'close',
    })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    socket.write(`HTTP/1.1 ${wire.statusCode} ${STATUS_CODES[wire.statusCode] ?? ''}\r\n${headers}\r\n${wire.body}`);
  }
  socket.destroy();
}

/** The methods each route path serves, to tell a 405 from a 404. */
export class RouteMethods {
  private readonly routes: { readonly pattern: RegExp; readonly methods: Set<string> }[] = [];

  add(url: string, methods: string | readonly string[]): void {
    const source = url
      .split('/')
      .map((segment) => {
        if (segment === '*') return '.*';
        if (segment.startsWith(':')) return '[^/]+';
        return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      })
      .join('/');
    const existing = this.routes.find((route) => route.pattern.source === `^${source}$`);
    const entry = existing ?? { pattern: new RegExp(`^${source}$`), methods: new Set<string>() };
    if (!existing) this.routes.push(entry);
    for (const method of typeof methods === 'string' ? [methods] : methods) entry.methods.add(method.toUpperCase());
  }

  /** The methods served at `path` (no query), sorted; empty when no route matches it. */
  allowed(path: string): string[] {
    const methods = new Set<string>();
    for (const route of this.routes) if (route.pattern.test(path)) for (const method of route.methods) methods.add(method);
    return [...methods].sort();
  }
}

/** The 405 for a path that exists under other methods, with the `Allow` header listing them. */
export function sendMethodNotAllowed(request: FastifyRequest, reply: FastifyReply, allowed: readonly string[]): FastifyReply {
  const path = (request.url.split('?')[0] ?? '').slice(0, 200);
  const message = `${request.method} is not allowed on ${path}; it answers ${allowed.join(', ')}.`;
  request.log.info({ code: ERRORS.MethodNotAllowed.code, allowed }, 'request rejected');
  reply.header('allow', allowed.join(', '));
  return send(reply, platformWire('MethodNotAllowed', message));
}

/** The message of a 415, naming what was sent. */
export function unsupportedMediaTypeMessage(contentType: string | undefined): string {
  return `The Content-Type must be 'application/json' (got ${contentType === undefined ? 'none' : `'${contentType.slice(0, 100)}'`}).`;
}
