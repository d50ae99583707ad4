// What the request log may say about a request. Fastify's request serializer writes `req.url`
// whole, and the vendor's clients may send their key in the query (`?subscription-key=`), so the
// URL is logged with that parameter's value, and anything shaped like a key, replaced.
import type { FastifyRequest, FastifyServerOptions } from 'fastify';
import { API_KEY_QUERY_PARAMETER } from './tenancy/authentication.js';

export const REDACTED = '[redacted]';

const KEY_PARAMETER = new RegExp(`([?&;])(${API_KEY_QUERY_PARAMETER.replace('-', '(?:-|%2D)')})=[^&;#]*`, 'gi');
/** Keys sent under any other name still look like keys (API_KEY_PATTERN, unanchored). */
const KEY_SHAPED = /svc_(?:live|test)_[A-Za-z0-9_-]+/g;

/** The marketplace's registration token (`/marketplace/landing?x-cloud-marketplace-token=`) resolves to a customer. */
const MARKETPLACE_TOKEN_PARAMETER = /([?&;])(x(?:-|%2D)(?:cloud|amzn)(?:-|%2D)marketplace(?:-|%2D)token)=[^&;#]*/gi;

/** `url` with the key and marketplace-token parameters' values and every key-shaped substring replaced. */
export function redactUrl(url: string): string {
  return url
    .replace(KEY_PARAMETER, `$1$2=${REDACTED}`)
    .replace(MARKETPLACE_TOKEN_PARAMETER, `$1$2=${REDACTED}`)
    .replace(KEY_SHAPED, REDACTED);
}

/** Fastify's request serializer, with the URL redacted. */
function serializeRequest(request: FastifyRequest): Record<string, unknown> {
  return {
    method: request.method,
    url: redactUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

/** The app's logger option with the redacting request serializer; `false` stays off. */
export function withKeyRedaction(logger: FastifyServerOptions['logger']): FastifyServerOptions['logger'] {
  if (logger === undefined || logger === false) return false;
  const options = logger === true ? {} : logger;
  return { ...options, serializers: { ...options.serializers, req: serializeRequest } };
}
