// Per-key rate limiting (in memory: one replica) and the key-lookup cache's revocation. The Redis
// implementations run the same checks against a real Redis in test/integration/api-redis.test.ts.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createMemoryNotifier } from '@adp/streaming';
import { INVALID_KEY_BODY } from '../src/tenancy/authentication.js';
import { MemoryRateLimiter, type RateLimiter } from '../src/tenancy/rate-limit.js';
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
        message: 'This API key has made more than 3 requests this minute. Retry after 45 seconds.',
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
        message: 'Requests to the Anomaly Detector API have exceeded the rate limit of your key (3 calls per minute). Please retry after 1 second.',
      },
    });
    // The vendor's path casing variants are vendor paths too.
    expect((await post(app, '/AnomalyDetector/v1.1/timeseries/entire/detect', SERIES)).json()).toMatchObject({ error: { code: '429' } });
  });

  it('counts each key on its own and starts a new window after a minute', async () => {
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
