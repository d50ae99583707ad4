// Per-organization rate limiting (in memory: one replica), the throttle on failed authentication
// per client address, and the key-lookup cache's revocation and negative entries. The Redis
// implementations run the same checks against a real Redis in test/integration/api-redis.test.ts.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createMemoryNotifier } from '@adp/streaming';
import { INVALID_KEY_BODY, MISSING_KEY_BODY } from '../src/tenancy/authentication.js';
import { FailedAuthThrottle, MemoryRateLimiter, type RateLimiter } from '../src/tenancy/rate-limit.js';
import { MemoryApiKeyCache } from '../src/tenancy/api-key-cache.js';
import { describeApiKey } from '../src/tenancy/keys.js';
import { API_KEY, OTHER_KEY, OTHER_ORG, eventually, get, post, streamingEnvironment, type StreamingEnvironment } from './streaming-helpers.js';

const VENDOR_LAST = '/anomalydetector/v1.1/timeseries/last/detect';
const SERIES = { series: [10, 11, 10, 12, 11, 10, 11, 12, 10, 11, 12, 11, 30].map((value) => ({ value })) };

describe('rate limiting (in memory)', () => {
  let env: StreamingEnvironment;
  let now: number;
  let app: FastifyInstance;

  beforeEach(async () => {
    env = await streamingEnvironment();
    await env.addOtherOrganization();
    now = 1_000_000;
    app = await env.start({ RATE_LIMIT_PER_MINUTE: '3' }, { rateLimiter: new MemoryRateLimiter(3, 60_000, () => now) });
  });
  afterEach(async () => {
    await env.cleanup();
  });

  it('answers the request after the limit with 429, Retry-After and the platform error on native paths', async () => {
    for (let call = 0; call < 3; call++) expect((await get(app, '/v1/usage')).statusCode).toBe(200);
    now += 15_000;
    const response = await get(app, '/v1/machines');
    expect(response.statusCode).toBe(429);
    expect(response.headers['retry-after']).toBe('45');
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json()).toEqual({
      error: {
        code: 'RateLimitExceeded',
        message: 'This organization has made more than 3 requests this minute. Retry after 45 seconds.',
      },
    });
  });

  it("answers with the vendor gateway's shape on vendor paths", async () => {
    for (let call = 0; call < 3; call++) expect((await post(app, VENDOR_LAST, SERIES)).statusCode).toBe(200);
    now += 59_500;
    const response = await post(app, VENDOR_LAST, SERIES);
    expect(response.statusCode).toBe(429);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json()).toEqual({
      error: {
        code: '429',
        message: 'Requests to the Anomaly Detector API have exceeded the rate limit of your subscription (3 calls per minute). Please retry after 1 second.',
      },
    });
    // The vendor's path casing variants are vendor paths too.
    expect((await post(app, '/AnomalyDetector/v1.1/timeseries/entire/detect', SERIES)).json()).toMatchObject({ error: { code: '429' } });
  });

  it('counts all keys of an organization together: three keys do not triple the limit', async () => {
    const second = 'svc_live_sameOrganization2nd0000';
    const third = 'svc_test_sameOrganization3rd0000';
    await env.store.createApiKey(app.bootstrap.organizationId, describeApiKey(second));
    await env.store.createApiKey(app.bootstrap.organizationId, describeApiKey(third));
    expect((await get(app, '/v1/usage')).statusCode).toBe(200);
    expect((await get(app, '/v1/usage', second)).statusCode).toBe(200);
    expect((await get(app, '/v1/usage', third)).statusCode).toBe(200);
    for (const key of [API_KEY, second, third]) expect((await get(app, '/v1/usage', key)).statusCode).toBe(429);
    // Another organization has its own window.
    expect((await get(app, '/v1/usage', OTHER_KEY)).statusCode).toBe(200);
  });

  it('counts each organization on its own and starts a new window after a minute', async () => {
    for (let call = 0; call < 3; call++) expect((await get(app, '/v1/usage')).statusCode).toBe(200);
    expect((await get(app, '/v1/usage')).statusCode).toBe(429);
    expect((await get(app, '/v1/usage', OTHER_KEY)).statusCode).toBe(200);
    now += 60_000;
    expect((await get(app, '/v1/usage')).statusCode).toBe(200);
  });

  it('never limits public routes or requests without a valid key', async () => {
    for (let call = 0; call < 3; call++) await get(app, '/v1/usage');
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await get(app, '/v1/usage', 'svc_test_neverIssuedNeverIssued00')).statusCode).toBe(401);
  });

  it('is off with RATE_LIMIT_PER_MINUTE=0', async () => {
    const unlimited = await env.start({ RATE_LIMIT_PER_MINUTE: '0' });
    for (let call = 0; call < 20; call++) expect((await get(unlimited, '/v1/usage')).statusCode).toBe(200);
  });

  it('limits by the configured default when no limiter is injected', async () => {
    const configured = await env.start({ RATE_LIMIT_PER_MINUTE: '2' });
    expect((await get(configured, '/v1/usage')).statusCode).toBe(200);
    expect((await get(configured, '/v1/usage')).statusCode).toBe(200);
    const limited = await get(configured, '/v1/usage');
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(59);
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
  });

  it('lets requests through when the limiter fails (fail open), never a 500', async () => {
    const broken: RateLimiter = { consume: () => Promise.reject(new Error('redis down')) };
    const open = await env.start({ RATE_LIMIT_PER_MINUTE: '1' }, { rateLimiter: broken });
    for (let call = 0; call < 5; call++) expect((await get(open, '/v1/usage')).statusCode).toBe(200);
  });
});

describe('MemoryRateLimiter', () => {
  it('allows `limit` calls per window and says how long until the window resets', async () => {
    let now = 0;
    const limiter = new MemoryRateLimiter(2, 1_000, () => now);
    expect(await limiter.consume('k')).toEqual({ allowed: true, remaining: 1 });
    now = 400;
    expect(await limiter.consume('k')).toEqual({ allowed: true, remaining: 0 });
    expect(await limiter.consume('k')).toEqual({ allowed: false, retryAfterMs: 600 });
    now = 1_000;
    expect(await limiter.consume('k')).toEqual({ allowed: true, remaining: 1 });
  });

  it('sweeps expired windows once it tracks many keys', async () => {
    let now = 0;
    const limiter = new MemoryRateLimiter(1, 100, () => now, 3);
    for (const key of ['a', 'b', 'c']) await limiter.consume(key);
    now = 200;
    await limiter.consume('d');
    expect((limiter as unknown as { windows: Map<string, unknown> }).windows.size).toBe(1);
  });
});

describe('API key cache and revocation', () => {
  let env: StreamingEnvironment;
  beforeEach(async () => {
    env = await streamingEnvironment();
  });
  afterEach(async () => {
    await env.cleanup();
  });

  async function keyId(key: string): Promise<string> {
    const record = await env.store.findApiKeyByHash(describeApiKey(key).keyHash);
    if (!record) throw new Error('no such key');
    return record.id;
  }

  it('serves cached lookups, and a revocation through the API takes effect at once despite the cache', async () => {
    const app = await env.start({ AUTH_CACHE_TTL_MS: '300000' });
    expect((await get(app, '/v1/usage')).statusCode).toBe(200);
    // Revoked behind the API's back: the cached entry keeps working (the documented TTL caveat).
    await env.addOtherOrganization();
    expect((await get(app, '/v1/usage', OTHER_KEY)).statusCode).toBe(200);
    await env.store.revokeApiKey(await keyId(OTHER_KEY));
    expect((await get(app, '/v1/usage', OTHER_KEY)).statusCode).toBe(200);
    // Revoked through the API: gone at once.
    expect(await app.apiKeys.revoke(app.bootstrap.organizationId, await keyId(API_KEY))).toBe(true);
    const response = await get(app, '/v1/usage');
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual(INVALID_KEY_BODY);
    // Only the key's own organization can revoke it.
    expect(await app.apiKeys.revoke(OTHER_ORG, await keyId(API_KEY))).toBe(false);
  });

  it("drops the key from every replica's memory cache through the notifier", async () => {
    const notifier = createMemoryNotifier();
    try {
      const first = await env.start({ AUTH_CACHE_TTL_MS: '300000' }, { notifier });
      const second = await env.start({ AUTH_CACHE_TTL_MS: '300000' }, { notifier });
      expect((await get(first, '/v1/usage')).statusCode).toBe(200);
      expect((await get(second, '/v1/usage')).statusCode).toBe(200);
      await first.apiKeys.revoke(first.bootstrap.organizationId, await keyId(API_KEY));
      expect((await get(first, '/v1/usage')).statusCode).toBe(401);
      await eventually(async () => (await get(second, '/v1/usage')).statusCode === 401);
    } finally {
      await notifier.close();
    }
  });

  it('looks keys up in the store when the cache fails', async () => {
    const cache = new MemoryApiKeyCache(10, 60_000);
    const failing = {
      get: () => Promise.reject(new Error('cache down')),
      set: () => Promise.reject(new Error('cache down')),
      delete: (hash: string) => cache.delete(hash),
    };
    const app = await env.start({}, { authCache: failing });
    expect((await get(app, '/v1/usage')).statusCode).toBe(200);
    expect((await get(app, '/v1/usage', 'svc_test_neverIssuedNeverIssued00')).statusCode).toBe(401);
  });
});

describe('throttling failed authentication per client address', () => {
  let env: StreamingEnvironment;
  let now: number;
  let app: FastifyInstance;
  const UNKNOWN = 'svc_test_neverIssuedNeverIssued00';

  beforeEach(async () => {
    env = await streamingEnvironment();
    now = 1_000_000;
    app = await env.start({ AUTH_FAILURES_PER_MINUTE: '3' }, { authFailureThrottle: new FailedAuthThrottle(3, 60_000, () => now) });
  });
  afterEach(async () => {
    await env.cleanup();
  });

  it('answers 429 with Retry-After in the platform shape after the limit, without looking keys up', async () => {
    const lookups = vi.spyOn(env.store, 'findApiKeyByHash');
    expect((await get(app, '/v1/usage', UNKNOWN)).statusCode).toBe(401);
    expect((await get(app, '/v1/usage', 'svc_test_anotherUnknownKey0000')).statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/v1/usage' })).json()).toEqual(MISSING_KEY_BODY);
    const lookupsBefore = lookups.mock.calls.length;
    now += 20_000;
    for (const key of [UNKNOWN, 'svc_test_yetAnotherUnknownKey000']) {
      const response = await get(app, '/v1/machines', key);
      expect(response.statusCode).toBe(429);
      expect(response.headers['retry-after']).toBe('40');
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.json()).toEqual({
        error: {
          code: 'AuthenticationThrottled',
          message: 'Too many requests with a missing or invalid API key from this address. Retry after 40 seconds.',
        },
      });
    }
    expect((await app.inject({ method: 'GET', url: '/v1/usage' })).statusCode).toBe(429);
    expect(lookups.mock.calls.length).toBe(lookupsBefore);
  });

  it("answers with the vendor gateway's 429 shape on vendor paths", async () => {
    for (let call = 0; call < 3; call++) expect((await post(app, VENDOR_LAST, SERIES, UNKNOWN)).statusCode).toBe(401);
    now += 59_500;
    const response = await post(app, VENDOR_LAST, SERIES, UNKNOWN);
    expect(response.statusCode).toBe(429);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.json()).toEqual({
      error: {
        code: '429',
        message: 'Too many requests with a missing or invalid subscription key from this address. Please retry after 1 second.',
      },
    });
  });

  it('still serves a key the cache holds as valid, and lifts the throttle when the minute ends', async () => {
    expect((await get(app, '/v1/usage')).statusCode).toBe(200);
    for (let call = 0; call < 3; call++) expect((await get(app, '/v1/usage', UNKNOWN)).statusCode).toBe(401);
    expect((await get(app, '/v1/usage', UNKNOWN)).statusCode).toBe(429);
    expect((await get(app, '/v1/usage')).statusCode).toBe(200);
    now += 60_000;
    expect((await get(app, '/v1/usage', UNKNOWN)).statusCode).toBe(401);
  });

  it('is off with AUTH_FAILURES_PER_MINUTE=0', async () => {
    const open = await env.start({ AUTH_FAILURES_PER_MINUTE: '0' });
    for (let call = 0; call < 10; call++) expect((await get(open, '/v1/usage', UNKNOWN)).statusCode).toBe(401);
  });

  it('throttles by the configured default when no throttle is injected', async () => {
    const configured = await env.start({ AUTH_FAILURES_PER_MINUTE: '2' });
    for (let call = 0; call < 2; call++) expect((await get(configured, '/v1/usage', UNKNOWN)).statusCode).toBe(401);
    const throttled = await get(configured, '/v1/usage', UNKNOWN);
    expect(throttled.statusCode).toBe(429);
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(throttled.headers['retry-after'])).toBeLessThanOrEqual(60);
  });
});

describe('FailedAuthThrottle', () => {
  it('blocks an address after `limit` failures until its window ends', () => {
    let now = 0;
    const throttle = new FailedAuthThrottle(2, 1_000, () => now);
    throttle.recordFailure('a');
    expect(throttle.blockedForMs('a')).toBe(0);
    now = 300;
    throttle.recordFailure('a');
    expect(throttle.blockedForMs('a')).toBe(700);
    expect(throttle.blockedForMs('b')).toBe(0);
    now = 1_000;
    expect(throttle.blockedForMs('a')).toBe(0);
  });

  it('keeps at most `maxAddresses` windows, dropping the oldest', () => {
    const throttle = new FailedAuthThrottle(1, 1_000, () => 0, 2);
    for (const address of ['a', 'b', 'c']) throttle.recordFailure(address);
    expect(throttle.blockedForMs('a')).toBe(0);
    expect(throttle.blockedForMs('b')).toBe(1_000);
    expect(throttle.blockedForMs('c')).toBe(1_000);
  });
});

describe('negative key cache', () => {
  let env: StreamingEnvironment;
  beforeEach(async () => {
    env = await streamingEnvironment();
  });
  afterEach(async () => {
    await env.cleanup();
  });

  it('looks an unknown key up once per AUTH_NEGATIVE_CACHE_TTL_MS', async () => {
    const app = await env.start({ AUTH_NEGATIVE_CACHE_TTL_MS: '60000', AUTH_FAILURES_PER_MINUTE: '0' });
    const lookups = vi.spyOn(env.store, 'findApiKeyByHash');
    for (let call = 0; call < 5; call++) expect((await get(app, '/v1/usage', 'svc_test_neverIssuedNeverIssued00')).statusCode).toBe(401);
    expect(lookups).toHaveBeenCalledTimes(1);
  });

  it('lets a key created after a failed try work once the TTL passes, or at once when created through this process', async () => {
    const app = await env.start({ AUTH_NEGATIVE_CACHE_TTL_MS: '200', AUTH_FAILURES_PER_MINUTE: '0' });
    await env.addOtherOrganization();
    const late = 'svc_live_createdAfterAFailedTry0';
    expect((await get(app, '/v1/usage', late)).statusCode).toBe(401);
    await env.store.createApiKey(OTHER_ORG, describeApiKey(late));
    // Created behind this process's back: refused for at most the negative TTL.
    await eventually(async () => (await get(app, '/v1/usage', late)).statusCode === 200, 5_000);

    const announced = 'svc_live_createdAndAnnounced000';
    const fresh = await env.start({ AUTH_NEGATIVE_CACHE_TTL_MS: '60000', AUTH_FAILURES_PER_MINUTE: '0' });
    expect((await get(fresh, '/v1/usage', announced)).statusCode).toBe(401);
    const { keyHash } = describeApiKey(announced);
    await env.store.createApiKey(OTHER_ORG, describeApiKey(announced));
    expect((await get(fresh, '/v1/usage', announced)).statusCode).toBe(401);
    fresh.apiKeys.keyCreated(keyHash);
    expect((await get(fresh, '/v1/usage', announced)).statusCode).toBe(200);
  });
});
