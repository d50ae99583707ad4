// Authentication: every route needs an API key unless it is marked `config: { public: true }`
// (liveness, readiness, the OpenAPI document). Unknown paths need a key too, like the vendor's
// gateway, so probing for routes without one only ever sees 401.
//
// Headers are checked in a fixed order and the FIRST ONE PRESENT is the one used, even if a later
// header holds a valid key: Ocp-Apim-Subscription-Key (all vendor SDKs), X-Service-Key,
// Authorization: Bearer <key>; with none of them, the `subscription-key` query parameter (as the
// vendor's gateway read it). A header with an empty value counts as absent, and so does an
// Authorization header with another scheme. An Azure AD token sent as Bearer is not a key and gets
// the invalid-key 401, except as below.
//
// Identity-provider tokens (with OIDC_ISSUER set): a JWT in `Authorization: Bearer` on a path under
// `/v1/` is verified against the provider's keys (./identity-provider.ts) instead of looked up as a
// key; the caller is the token's subject in the organization its claim names, and counts as live
// usage. Anywhere else (vendor paths, /admin/) a JWT is not a key and gets the invalid-key 401. A
// refused token gets a 401 InvalidIdentityToken saying why, and counts as a failed authentication.
//
// Successful lookups are cached for AUTH_CACHE_TTL_MS: in memory (LRU, bounded), or in Redis when
// REDIS_URL is set, shared by every replica. Revoking a key through `ApiKeyAuthenticator.revoke`
// (or rotating it, or disabling its organization: `invalidate`) deletes the cache entry (Redis)
// and tells every replica to drop its own (the notifier), so it stops working at once; a key
// revoked behind the API's back still works until the TTL passes. A rotated key's entry carries
// its expiry, so it is refused from then on even while cached. Keys of a disabled organization
// are refused at lookup.
// Failed lookups (unknown or revoked keys) are remembered in this process for
// AUTH_NEGATIVE_CACHE_TTL_MS, so repeating a bad key costs no store query; a key created through
// this process (`ApiKeyAuthenticator.keyCreated`) clears its entry, and one created elsewhere works
// once the short TTL passes. A cache that fails (Redis down) is skipped: the store answers and the
// failure is logged.
//
// A client address that has failed authentication (no key, or a bad one) AUTH_FAILURES_PER_MINUTE
// times in a minute is throttled until that minute ends: its requests get a 429 with Retry-After
// and no store lookup, unless they carry a key the cache already holds as valid (so a shared
// address, such as a proxy's, does not lock out callers with good keys).
//
// Dashboard sessions (../dashboard/sessions.ts): with no key presented, the session cookie
// authenticates /v1/ and the vendor paths (never /admin/), CSRF-checked for state-changing calls;
// a refused cookie counts as a failed authentication.
//
// After the key, the rate limit (RATE_LIMIT_PER_MINUTE per organization, all its keys together):
// over it, a 429 with Retry-After. Both 429s use the vendor gateway's shape on vendor paths and the
// platform's shape elsewhere. A limiter that fails (Redis down) lets the request through and logs why.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKeyKind, Store } from '@adp/store';
import type { Notifier } from '@adp/streaming';
import { ERRORS } from '../errors.js';
import { MemoryApiKeyCache, type ApiKeyCache, type AuthenticatedKey } from './api-key-cache.js';
import { signInWithToken, looksLikeJwt, type IdentityTokenVerifier } from './identity-provider.js';
import { API_KEY_PATTERN, hashApiKey } from './keys.js';
import { FailedAuthThrottle, type RateLimiter } from './rate-limit.js';
import { TtlCache } from './ttl-cache.js';
import { sessionCookie, sessionPath, type DashboardSessions } from '../dashboard/sessions.js';

/** Notifier channel of key revocations; the message is the revoked key's SHA-256 hex hash. */
export const API_KEY_REVOKED_CHANNEL = 'adp:api-key-revoked';

/** At most one log line per this many milliseconds about a failing cache or limiter. */
const FAILURE_LOG_INTERVAL_MS = 10_000;

/**
 * Who is calling: set on every request to a non-public route before its handler runs. An API key
 * (`via: 'key'`), or an identity-provider token (`via: 'jwt'`): no key id, the token's `sub` as
 * `subject`, and live usage.
 */
export type AuthContext =
  | { readonly via: 'key'; readonly orgId: string; readonly keyId: string; readonly keyKind: ApiKeyKind; readonly subject: null }
  | { readonly via: 'jwt'; readonly orgId: string; readonly keyId: null; readonly keyKind: 'live'; readonly subject: string }
  /** A dashboard session: `subject` is the local account's user id or the provider's `sub`. */
  | { readonly via: 'session'; readonly orgId: string; readonly keyId: null; readonly keyKind: 'live'; readonly subject: string };

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
      message: `Requests to the Anomaly Detector API have exceeded the rate limit of your subscription (${limitPerMinute} calls per minute). Please retry after ${seconds(retryAfterS)}.`,
    },
  };
}

/** The vendor gateway's 429 shape for an address throttled after failed authentications. */
export function vendorAuthThrottledBody(retryAfterS: number): { error: { code: string; message: string } } {
  return {
    error: {
      code: '429',
      message: `Too many requests with a missing or invalid subscription key from this address. Please retry after ${seconds(retryAfterS)}.`,
    },
  };
}

function seconds(count: number): string {
  return `${count} second${count === 1 ? '' : 's'}`;
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
  /**
   * How long a key that was not found (or is revoked) is remembered as invalid in this process, in
   * milliseconds; 0 (default) disables it.
   */
  readonly negativeCacheTtlMs?: number;
  /** Failed authentications per client address and minute before it is throttled; 0 or absent: never. */
  readonly failuresPerMinute?: number;
  /** The failed-authentication throttle, instead of one built from `failuresPerMinute`. */
  readonly failureThrottle?: FailedAuthThrottle;
  /** The per-organization limiter; absent or null: no rate limiting. */
  readonly rateLimiter?: RateLimiter | null;
  /** RATE_LIMIT_PER_MINUTE, for the 429's message. */
  readonly rateLimitPerMinute?: number;
  /** Fan-out of revocations to the other replicas' caches. */
  readonly notifier?: Notifier;
  /** Identity-provider tokens on /v1/ routes; absent: API keys only. */
  readonly identityTokens?: { readonly verifier: IdentityTokenVerifier; readonly orgClaim: string };
  /** Dashboard sessions (the cookie) on /v1/ and vendor paths; absent: no cookie is looked at. */
  readonly sessions?: DashboardSessions;
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
  /** Hashes of keys the store did not hold as active, recently. */
  private readonly invalid: TtlCache<true>;
  private readonly touched: TtlCache<true>;
  private readonly nowMs: () => number;
  /** Told about cache failures (the lookup then goes to the store). */
  onCacheError: (err: unknown) => void = () => undefined;

  constructor(private readonly options: AuthenticationOptions) {
    this.nowMs = options.nowMs ?? Date.now;
    const maxEntries = options.cacheMaxEntries ?? 10_000;
    this.cache = options.cache ?? new MemoryApiKeyCache(maxEntries, options.cacheTtlMs, this.nowMs);
    this.invalid = new TtlCache(maxEntries, options.negativeCacheTtlMs ?? 0, this.nowMs);
    this.touched = new TtlCache(maxEntries, options.touchIntervalMs ?? 60_000, this.nowMs);
  }

  /**
   * The active key for `key`, or null when it is malformed, unknown or revoked. With
   * `storeLookup: false` only the caches answer: a key neither holds is null.
   */
  async authenticate(key: string, options: { readonly storeLookup?: boolean } = {}): Promise<AuthenticatedKey | null> {
    // Malformed keys never reach the store: cheap rejection of garbage and of oversized headers.
    if (!API_KEY_PATTERN.test(key)) return null;
    const keyHash = hashApiKey(key);
    const cached = await this.cache.get(keyHash).catch((err: unknown) => {
      this.onCacheError(err);
      return undefined;
    });
    if (cached) {
      if (cached.expiresAtMs === undefined || cached.expiresAtMs > this.nowMs()) return cached;
      await this.forget(keyHash).catch((err: unknown) => this.onCacheError(err));
      this.invalid.set(keyHash, true);
      return null;
    }
    if (this.invalid.get(keyHash) || options.storeLookup === false) return null;
    const record = await this.options.store.findApiKeyByHash(keyHash);
    const usable =
      record !== null &&
      record.revokedAt === null &&
      (record.expiresAt === null || record.expiresAt.getTime() > this.nowMs()) &&
      (await this.options.store.getOrganization(record.orgId))?.disabledAt === null;
    if (!record || !usable) {
      this.invalid.set(keyHash, true);
      return null;
    }
    const found: AuthenticatedKey = {
      id: record.id,
      orgId: record.orgId,
      kind: record.kind,
      ...(record.expiresAt === null ? {} : { expiresAtMs: record.expiresAt.getTime() }),
    };
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
    await this.invalidate([record.keyHash]);
    return revoked;
  }

  /**
   * Drops these keys' cache entries on every replica (this one's and Redis's directly, the others'
   * through the notifier), so their next use reads the store: after a rotation or after their
   * organization was disabled.
   */
  async invalidate(keyHashes: readonly string[]): Promise<void> {
    for (const keyHash of keyHashes) {
      await this.forget(keyHash);
      await this.options.notifier?.publish(API_KEY_REVOKED_CHANNEL, keyHash);
    }
  }

  /** Call after creating a key through this process: it works at once even if it was tried before. */
  keyCreated(keyHash: string): void {
    this.invalid.delete(keyHash);
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
  if (options.identityTokens) {
    const providerFailures = throttled(FAILURE_LOG_INTERVAL_MS);
    options.identityTokens.verifier.onProviderError = (err) => {
      if (providerFailures()) app.log.warn({ err }, 'identity provider or organization lookup failed; answering token callers 503');
    };
  }
  const limiter = options.rateLimiter ?? null;
  const limitPerMinute = options.rateLimitPerMinute ?? 0;
  const failures =
    options.failureThrottle ??
    ((options.failuresPerMinute ?? 0) > 0 ? new FailedAuthThrottle(options.failuresPerMinute ?? 0, undefined, options.nowMs) : null);
  app.decorate('apiKeys', authenticator);
  // Fastify 5 wants a primitive initial value for request decorators; the hook always assigns a
  // real context before a non-public handler runs.
  app.decorateRequest<AuthContext, 'auth'>('auth', null as unknown as AuthContext);

  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config?.public === true) return;
    // Read before this request's own failure counts: the request that reaches the limit still
    // gets its 401, the ones after it the 429.
    const address = request.ip;
    const blockedMs = failures?.blockedForMs(address) ?? 0;
    const key = presentedApiKey(request.headers) ?? queryApiKey(request.query);
    if (key !== undefined && options.identityTokens && isIdentityTokenRequest(request, key)) {
      if (blockedMs > 0) return sendThrottled(request, reply, blockedMs);
      const { verifier, orgClaim } = options.identityTokens;
      const signIn = await signInWithToken(verifier, options.store, orgClaim, key);
      if (!signIn.ok) {
        if (signIn.status === 503) {
          reply.header('retry-after', '5');
          return sendJson(reply, 503, { error: { code: ERRORS.ServiceUnavailable.code, message: signIn.reason } });
        }
        failures?.recordFailure(address);
        request.log.info({ code: ERRORS.InvalidIdentityToken.code, reason: signIn.reason }, 'request with a refused identity token');
        reply.header('www-authenticate', 'Bearer error="invalid_token"');
        return sendJson(reply, 401, { error: { code: ERRORS.InvalidIdentityToken.code, message: signIn.reason } });
      }
      request.auth = { via: 'jwt', orgId: signIn.orgId, keyId: null, keyKind: 'live', subject: signIn.subject };
      return rateLimit(request, reply);
    }
    const cookie = key === undefined && options.sessions && sessionPath(request.url) ? sessionCookie(request) : undefined;
    if (cookie !== undefined && options.sessions) {
      if (blockedMs > 0) return sendThrottled(request, reply, blockedMs);
      let verdict;
      try {
        verdict = await options.sessions.authenticate(request, cookie);
      } catch (err) {
        request.log.error({ err }, 'session lookup failed');
        reply.header('retry-after', '1');
        return sendJson(reply, 503, { error: { code: ERRORS.ServiceUnavailable.code, message: 'The service cannot check sessions right now. Retry shortly.' } });
      }
      if (!verdict.ok) {
        if (verdict.status === 401) failures?.recordFailure(address);
        request.log.info({ code: verdict.code }, 'request with a refused dashboard session');
        return sendJson(reply, verdict.status, { error: { code: verdict.code, message: verdict.message } });
      }
      const { orgId, subject } = verdict.session;
      request.auth = { via: 'session', orgId, keyId: null, keyKind: 'live', subject };
      return rateLimit(request, reply);
    }
    if (key === undefined) {
      if (blockedMs > 0) return sendThrottled(request, reply, blockedMs);
      failures?.recordFailure(address);
      request.log.info({ code: ERRORS.MissingSubscriptionKey.code }, 'request without an API key');
      return sendJson(reply, 401, MISSING_KEY_BODY);
    }
    let record: AuthenticatedKey | null;
    try {
      record = await authenticator.authenticate(key, { storeLookup: blockedMs === 0 });
    } catch (err) {
      request.log.error({ err }, 'API key lookup failed');
      reply.header('retry-after', '1');
      return sendJson(reply, ERRORS.ServiceUnavailable.statusCode, {
        error: { code: ERRORS.ServiceUnavailable.code, message: 'The service cannot check API keys right now. Retry shortly.' },
      });
    }
    if (!record) {
      if (blockedMs > 0) return sendThrottled(request, reply, blockedMs);
      failures?.recordFailure(address);
      request.log.info({ code: ERRORS.InvalidSubscriptionKey.code }, 'request with an invalid API key');
      return sendJson(reply, 401, INVALID_KEY_BODY);
    }
    request.auth = { via: 'key', orgId: record.orgId, keyId: record.id, keyKind: record.kind, subject: null };
    if (authenticator.claimTouch(record.id)) {
      // Bookkeeping only: a failure must not fail the request.
      options.store.touchApiKey(record.id, new Date()).catch((err: unknown) => {
        request.log.warn({ err, keyId: record.id }, 'could not record API key use');
      });
    }
    return rateLimit(request, reply);
  });

  /** The per-organization limit, after the caller is known. */
  async function rateLimit(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    if (limiter === null) return undefined;
    const { orgId, keyId } = request.auth;
    let decision;
    try {
      decision = await limiter.consume(orgId);
    } catch (err) {
      // Fail open: an unreachable Redis must not take the API down with it.
      if (limiterFailures()) request.log.warn({ err }, 'rate limiter failed; letting requests through');
      return undefined;
    }
    if (decision.allowed) return undefined;
    const retryAfterS = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
    request.log.info({ code: ERRORS.RateLimitExceeded.code, orgId, keyId, retryAfterS }, 'rate limit exceeded');
    reply.header('retry-after', String(retryAfterS));
    if (isVendorPath(request)) return sendJson(reply, 429, vendorRateLimitBody(limitPerMinute, retryAfterS));
    return sendJson(reply, ERRORS.RateLimitExceeded.statusCode, {
      error: {
        code: ERRORS.RateLimitExceeded.code,
        message: `This organization has made more than ${limitPerMinute} requests this minute. Retry after ${seconds(retryAfterS)}.`,
      },
    });
  }
  return authenticator;
}

/**
 * Whether the credential is an identity-provider token to verify: a JWT sent as
 * `Authorization: Bearer` on a path under /v1/ (never the vendor's paths, never /admin/).
 */
function isIdentityTokenRequest(request: FastifyRequest, credential: string): boolean {
  if (!request.url.startsWith('/v1/') || !looksLikeJwt(credential)) return false;
  const header = request.headers.authorization;
  const bearer = /^Bearer\s+(\S+)$/i.exec((Array.isArray(header) ? header[0] : header)?.trim() ?? '');
  return bearer?.[1] === credential;
}

/** The 429 for an address throttled after failed authentications. */
function sendThrottled(request: FastifyRequest, reply: FastifyReply, blockedMs: number): FastifyReply {
  const retryAfterS = Math.max(1, Math.ceil(blockedMs / 1000));
  request.log.info({ code: ERRORS.AuthenticationThrottled.code, retryAfterS }, 'failed authentications throttled');
  reply.header('retry-after', String(retryAfterS));
  if (isVendorPath(request)) return sendJson(reply, 429, vendorAuthThrottledBody(retryAfterS));
  return sendJson(reply, ERRORS.AuthenticationThrottled.statusCode, {
    error: {
      code: ERRORS.AuthenticationThrottled.code,
      message: `Too many requests with a missing or invalid API key from this address. Retry after ${seconds(retryAfterS)}.`,
    },
  });
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
