// Authentication: every route needs an API key unless it is marked `config: { public: true }`
// (liveness, readiness, the OpenAPI document). Unknown paths need a key too, like the vendor's
// gateway, so probing for routes without one only ever sees 401.
//
// Headers are checked in a fixed order and the FIRST ONE PRESENT is the one used, even if a later
// header holds a valid key: Ocp-Apim-Subscription-Key (all vendor SDKs), X-Service-Key,
// Authorization: Bearer <key>. A header with an empty value counts as absent, and so does an
// Authorization header with another scheme. An Azure AD token sent as Bearer is not a key and gets
// the invalid-key 401.
//
// Successful lookups are cached in memory for AUTH_CACHE_TTL_MS (LRU, bounded): revoking a key
// takes effect within that TTL on every server. Failed lookups are not cached, so a key created
// elsewhere works at once.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKeyKind, ApiKeyRecord, Store } from '@adp/store';
import { ERRORS } from '../errors.js';
import { API_KEY_PATTERN, hashApiKey } from './keys.js';
import { TtlCache } from './ttl-cache.js';

/** Who is calling: set on every request to a non-public route before its handler runs. */
export interface AuthContext {
  readonly orgId: string;
  readonly keyId: string;
  readonly keyKind: ApiKeyKind;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller. Set by the authentication hook; only read it on routes that are not public. */
    auth: AuthContext;
  }
  interface FastifyContextConfig {
    /** True for routes that need no API key (health, readiness, OpenAPI). */
    public?: boolean;
  }
}

/** Header names in the order they are checked (lower case, as Node delivers them). */
export const API_KEY_HEADERS = ['ocp-apim-subscription-key', 'x-service-key', 'authorization'] as const;

// The vendor gateway's 401 bodies, word for word: the vendor SDKs read `error.code`/`error.message`.
export const MISSING_KEY_BODY = {
  error: {
    code: '401',
    message:
      'Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API.',
  },
} as const;
export const INVALID_KEY_BODY = {
  error: {
    code: '401',
    message:
      'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.',
  },
} as const;

export interface AuthenticationOptions {
  readonly store: Store;
  /** How long a successful lookup is cached, in milliseconds; 0 disables the cache. */
  readonly cacheTtlMs: number;
  /** Most keys kept in the cache. Default 10,000. */
  readonly cacheMaxEntries?: number;
  /** `last_used_at` is written at most once per key per this many milliseconds. Default 60,000. */
  readonly touchIntervalMs?: number;
  /** Clock in epoch milliseconds, for tests. */
  readonly nowMs?: () => number;
}

/**
 * The key the request presents: the value of the first accepted header present, or undefined when
 * none is present.
 */
export function presentedApiKey(headers: FastifyRequest['headers']): string | undefined {
  for (const name of API_KEY_HEADERS) {
    const raw = headers[name];
    const value = (Array.isArray(raw) ? raw[0] : raw)?.trim();
    if (!value) continue;
    if (name !== 'authorization') return value;
    const bearer = /^Bearer\s+(\S+)$/i.exec(value);
    if (bearer) return bearer[1];
  }
  return undefined;
}

/** Looks keys up by hash with a short-lived cache of the keys that were found and active. */
export class ApiKeyAuthenticator {
  private readonly cache: TtlCache<ApiKeyRecord>;
  private readonly touched: TtlCache<true>;
  private readonly nowMs: () => number;

  constructor(private readonly options: AuthenticationOptions) {
    this.nowMs = options.nowMs ?? Date.now;
    const maxEntries = options.cacheMaxEntries ?? 10_000;
    this.cache = new TtlCache(maxEntries, options.cacheTtlMs, this.nowMs);
    this.touched = new TtlCache(maxEntries, options.touchIntervalMs ?? 60_000, this.nowMs);
  }

  /** The active key record for `key`, or null when it is malformed, unknown or revoked. */
  async authenticate(key: string): Promise<ApiKeyRecord | null> {
    // Malformed keys never reach the store: cheap rejection of garbage and of oversized headers.
    if (!API_KEY_PATTERN.test(key)) return null;
    const keyHash = hashApiKey(key);
    const cached = this.cache.get(keyHash);
    if (cached) return cached;
    const record = await this.options.store.findApiKeyByHash(keyHash);
    if (!record || record.revokedAt !== null) return null;
    this.cache.set(keyHash, record);
    return record;
  }

  /** Whether `last_used_at` is due for this key; marks it as written when it is. */
  claimTouch(keyId: string): boolean {
    if (this.touched.get(keyId)) return false;
    this.touched.set(keyId, true);
    return true;
  }
}

/**
 * Adds the authentication hook to `app` itself (not an encapsulated plugin), so it guards every
 * route registered on the app afterwards, whichever plugin registers it.
 */
export function installAuthentication(app: FastifyInstance, options: AuthenticationOptions): ApiKeyAuthenticator {
  const authenticator = new ApiKeyAuthenticator(options);
  // Fastify 5 wants a primitive initial value for request decorators; the hook always assigns a
  // real context before a non-public handler runs.
  app.decorateRequest('auth', null as unknown as AuthContext);

  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config?.public === true) return;
    const key = presentedApiKey(request.headers);
    if (key === undefined) {
      request.log.info({ code: ERRORS.MissingSubscriptionKey.code }, 'request without an API key');
      return sendJson(reply, 401, MISSING_KEY_BODY);
    }
    let record: ApiKeyRecord | null;
    try {
      record = await authenticator.authenticate(key);
    } catch (err) {
      request.log.error({ err }, 'API key lookup failed');
      reply.header('retry-after', '1');
      return sendJson(reply, ERRORS.ServiceUnavailable.statusCode, {
        error: { code: ERRORS.ServiceUnavailable.code, message: 'The service cannot check API keys right now. Retry shortly.' },
      });
    }
    if (!record) {
      request.log.info({ code: ERRORS.InvalidSubscriptionKey.code }, 'request with an invalid API key');
      return sendJson(reply, 401, INVALID_KEY_BODY);
    }
    request.auth = { orgId: record.orgId, keyId: record.id, keyKind: record.kind };
    if (authenticator.claimTouch(record.id)) {
      // Bookkeeping only: a failure must not fail the request.
      options.store.touchApiKey(record.id, new Date()).catch((err: unknown) => {
        request.log.warn({ err, keyId: record.id }, 'could not record API key use');
      });
    }
    return undefined;
  });
  return authenticator;
}

/**
 * Sends `body` as JSON text. Serialising here keeps the shape exact whatever response schema the
 * matched route declares for the status code.
 */
function sendJson(reply: FastifyReply, statusCode: number, body: unknown): FastifyReply {
  return reply.code(statusCode).type('application/json; charset=utf-8').send(JSON.stringify(body));
}
