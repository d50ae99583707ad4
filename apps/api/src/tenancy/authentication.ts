// Authentication: every route needs an API key unless it is marked `config: { public: true }`
// (liveness, readiness, the OpenAPI document). Unknown paths need a key too, like the vendor's
// gateway, so probing for routes without one only ever sees 401.
//
// Headers are checked in a fixed order and the FIRST ONE PRESENT is the one used, even if a later
// header holds a valid key: Ocp-Apim-Subscription-Key (all vendor SDKs), X-Service-Key,
// Authorization: Bearer <key>; with none of them, the `subscription-key` query parameter (as the
// vendor's gateway read it). A header with an empty value counts as absent, and so does an
// Authorization header with another scheme. An Azure AD token sent as Bearer is not a key and gets
// the invalid-key 401.
//
// Successful lookups are cached for AUTH_CACHE_TTL_MS: in memory (LRU, bounded), or in Redis when
// REDIS_URL is set, shared by every replica. Revoking a key through `ApiKeyAuthenticator.revoke`
// deletes the cache entry (Redis) and tells every replica to drop its own (the notifier), so it
// stops working at once; a key revoked behind the API's back still works until the TTL passes.
// Failed lookups are not cached, so a key created elsewhere works at once. A cache that fails
// (Redis down) is skipped: the store answers and the failure is logged.
//
// After the key, the rate limit (RATE_LIMIT_PER_MINUTE per key): over it, a 429 with Retry-After
// in the vendor gateway's shape on vendor paths and in the platform's shape elsewhere. A limiter
// that fails (Redis down) lets the request through and logs why.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKeyKind, Store } from '@adp/store';
import type { Notifier } from '@adp/streaming';
import { ERRORS } from '../errors.js';
import { MemoryApiKeyCache, type ApiKeyCache, type AuthenticatedKey } from './api-key-cache.js';
import { API_KEY_PATTERN, hashApiKey } from './keys.js';
import type { RateLimiter } from './rate-limit.js';
import { TtlCache } from './ttl-cache.js';

/** Notifier channel of key revocations; the message is the revoked key's SHA-256 hex hash. */
export const API_KEY_REVOKED_CHANNEL = 'adp:api-key-revoked';

/** At most one log line per this many milliseconds about a failing cache or limiter. */
const FAILURE_LOG_INTERVAL_MS = 10_000;

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
  interface FastifyInstance {
    /** Key lookups, the lookup cache and revocation (`app.apiKeys.revoke(orgId, keyId)`). */
    readonly apiKeys: ApiKeyAuthenticator;
  }
  interface FastifyContextConfig {
    /** True for routes that need no API key (health, readiness, OpenAPI). */
    public?: boolean;
  }
}

/** The vendor gateway's 429 body (the shape of its 401): the vendor SDKs read `error.code`/`error.message`. */
export function vendorRateLimitBody(limitPerMinute: number, retryAfterS: number): { error: { code: string; message: string } } {
  return {
    error: {
      code: '429',
      message: `Requests to the Anomaly Detector API have exceeded the rate limit of your key (${limitPerMinute} calls per minute). Please retry after ${retryAfterS} second${retryAfterS === 1 ? '' : 's'}.`,
    },
  };
}

/**
 * The query parameter the vendor's gateway also read a key from. Checked after every header; the
 * request log redacts it (../logging.ts).
 */
export const API_KEY_QUERY_PARAMETER = 'subscription-key';

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
  /** Where lookups are cached. Default: in memory, `cacheMaxEntries` entries for `cacheTtlMs`. */
  readonly cache?: ApiKeyCache;
  /** The per-key limiter; absent or null: no rate limiting. */
  readonly rateLimiter?: RateLimiter | null;
  /** RATE_LIMIT_PER_MINUTE, for the 429's message. */
  readonly rateLimitPerMinute?: number;
  /** Fan-out of revocations to the other replicas' caches. */
  readonly notifier?: Notifier;
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

/** The key in the `subscription-key` query parameter (the first, when repeated), or undefined. */
export function queryApiKey(query: unknown): string | undefined {
  if (typeof query !== 'object' || query === null) return undefined;
  const raw = (query as Record<string, unknown>)[API_KEY_QUERY_PARAMETER];
  const value = Array.isArray(raw) ? (raw[0] as unknown) : raw;
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** Looks keys up by hash with a short-lived cache of the keys that were found and active. */
export class ApiKeyAuthenticator {
  private readonly cache: ApiKeyCache;
  private readonly touched: TtlCache<true>;
  private readonly nowMs: () => number;
  /** Told about cache failures (the lookup then goes to the store). */
  onCacheError: (err: unknown) => void = () => undefined;

  constructor(private readonly options: AuthenticationOptions) {
    this.nowMs = options.nowMs ?? Date.now;
    const maxEntries = options.cacheMaxEntries ?? 10_000;
    this.cache = options.cache ?? new MemoryApiKeyCache(maxEntries, options.cacheTtlMs, this.nowMs);
    this.touched = new TtlCache(maxEntries, options.touchIntervalMs ?? 60_000, this.nowMs);
  }

  /** The active key for `key`, or null when it is malformed, unknown or revoked. */
  async authenticate(key: string): Promise<AuthenticatedKey | null> {
    // Malformed keys never reach the store: cheap rejection of garbage and of oversized headers.
    if (!API_KEY_PATTERN.test(key)) return null;
    const keyHash = hashApiKey(key);
    const cached = await this.cache.get(keyHash).catch((err: unknown) => {
      this.onCacheError(err);
      return undefined;
    });
    if (cached) return cached;
    const record = await this.options.store.findApiKeyByHash(keyHash);
    if (!record || record.revokedAt !== null) return null;
    const found: AuthenticatedKey = { id: record.id, orgId: record.orgId, kind: record.kind };
    await this.cache.set(keyHash, found).catch((err: unknown) => this.onCacheError(err));
    return found;
  }

  /**
   * Revokes a key of `orgId` and drops it from every replica's cache: this one's (and Redis's)
   * directly, the others' through the notifier. Returns false when the organization has no such
   * active key. A cache or notifier failure rejects after the store has revoked the key.
   */
  async revoke(orgId: string, keyId: string): Promise<boolean> {
    const record = (await this.options.store.listApiKeys(orgId)).find((candidate) => candidate.id === keyId);
    if (!record) return false;
    const revoked = await this.options.store.revokeApiKey(keyId);
    await this.forget(record.keyHash);
    await this.options.notifier?.publish(API_KEY_REVOKED_CHANNEL, record.keyHash);
    return revoked;
  }

  /** Drops a key's cache entry. */
  forget(keyHash: string): Promise<void> {
    return this.cache.delete(keyHash);
  }

  /** Drops the entries other replicas revoke. Returns the unsubscribe function. */
  listenForRevocations(notifier: Notifier): Promise<() => Promise<void>> {
    return notifier.subscribe(API_KEY_REVOKED_CHANNEL, (message) => {
      if (!/^[0-9a-f]{64}$/.test(message)) return;
      this.forget(message).catch((err: unknown) => this.onCacheError(err));
    });
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
  const cacheFailures = throttled(FAILURE_LOG_INTERVAL_MS);
  authenticator.onCacheError = (err) => {
    if (cacheFailures()) app.log.warn({ err }, 'API key cache failed; looking keys up in the store');
  };
  const limiterFailures = throttled(FAILURE_LOG_INTERVAL_MS);
  const limiter = options.rateLimiter ?? null;
  const limitPerMinute = options.rateLimitPerMinute ?? 0;
  app.decorate('apiKeys', authenticator);
  // Fastify 5 wants a primitive initial value for request decorators; the hook always assigns a
  // real context before a non-public handler runs.
  app.decorateRequest('auth', null as unknown as AuthContext);

  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config?.public === true) return;
    const key = presentedApiKey(request.headers) ?? queryApiKey(request.query);
    if (key === undefined) {
      request.log.info({ code: ERRORS.MissingSubscriptionKey.code }, 'request without an API key');
      return sendJson(reply, 401, MISSING_KEY_BODY);
    }
    let record: AuthenticatedKey | null;
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
    if (limiter === null) return undefined;
    let decision;
    try {
      decision = await limiter.consume(record.id);
    } catch (err) {
      // Fail open: an unreachable Redis must not take the API down with it.
      if (limiterFailures()) request.log.warn({ err }, 'rate limiter failed; letting requests through');
      return undefined;
    }
    if (decision.allowed) return undefined;
    const retryAfterS = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
    request.log.info({ code: ERRORS.RateLimitExceeded.code, keyId: record.id, retryAfterS }, 'rate limit exceeded');
    reply.header('retry-after', String(retryAfterS));
    if (isVendorPath(request)) return sendJson(reply, 429, vendorRateLimitBody(limitPerMinute, retryAfterS));
    return sendJson(reply, ERRORS.RateLimitExceeded.statusCode, {
      error: {
        code: ERRORS.RateLimitExceeded.code,
        message: `This API key has made more than ${limitPerMinute} requests this minute. Retry after ${retryAfterS} second${retryAfterS === 1 ? '' : 's'}.`,
      },
    });
  });
  return authenticator;
}

/** Whether the request is for the vendor-compatible routes (their clients expect the gateway's shapes). */
function isVendorPath(request: FastifyRequest): boolean {
  return /^\/anomalydetector(\/|$|\?)/i.test(request.url);
}

/** A gate that opens at most once per `intervalMs`: for log lines about an outage. */
function throttled(intervalMs: number): () => boolean {
  let lastMs = Number.NEGATIVE_INFINITY;
  return () => {
    const now = Date.now();
    if (now - lastMs < intervalMs) return false;
    lastMs = now;
    return true;
  };
}

/**
 * Sends `body` as JSON text. Serialising here keeps the shape exact whatever response schema the
 * matched route declares for the status code.
 */
function sendJson(reply: FastifyReply, statusCode: number, body: unknown): FastifyReply {
  return reply.code(statusCode).type('application/json; charset=utf-8').send(JSON.stringify(body));
}
