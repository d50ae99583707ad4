// The API's Redis pieces against the real Redis from infra/redis.sh: the per-organization rate
// limit counted atomically across replicas and across restarts, the shared key-lookup cache and its revocation, baseline
// invalidation between replicas over Redis pub/sub, and failing open when Redis is unreachable.
// Each test uses its own key prefix (REDIS_KEY_PREFIX) and channel prefix.
import { createClient } from 'redis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closeRedis, createRedisNotifier } from '@adp/streaming';
import { RedisRateLimiter } from '../../apps/api/src/tenancy/rate-limit.js';
import { openRedis } from '../../apps/api/src/tenancy/redis-client.js';
import { describeApiKey } from '../../apps/api/src/tenancy/keys.js';
import {
  API_KEY,
  OTHER_KEY,
  constantEnergyModel,
  eventually,
  get,
  post,
  streamingEnvironment,
  type StreamingEnvironment,
} from '../../apps/api/test/streaming-helpers.js';
import { gateTitle, isolatedName, serverGate } from './servers.js';

const gate = await serverGate('redis');
const SILENT = { warn: () => undefined, info: () => undefined };

describe.skipIf(!gate.run)(gateTitle('API on redis', gate), () => {
  let prefix: string;
  let admin: ReturnType<typeof createClient>;
  let env: StreamingEnvironment;

  beforeEach(async () => {
    prefix = `${isolatedName('it_api')}:`;
    admin = createClient({ url: gate.address.value, socket: { connectTimeout: 5_000, reconnectStrategy: false } });
    admin.on('error', () => undefined);
    await admin.connect();
    env = await streamingEnvironment();
  });
  afterEach(async () => {
    await env.cleanup();
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length > 0) await admin.del(keys);
    await admin.close();
  });

  const redisEnv = (extra: Record<string, string> = {}) => ({
    REDIS_URL: gate.address.value,
    REDIS_KEY_PREFIX: prefix,
    ...extra,
  });

  it('counts a key atomically across replicas: exactly the limit passes, the counter expires with its window', async () => {
    const replicas = await Promise.all([0, 1, 2].map(() => openRedis({ url: gate.address.value, log: SILENT })));
    try {
      const limiters = replicas.map((redis) => new RedisRateLimiter(redis, prefix, 50));
      const decisions = await Promise.all(
        Array.from({ length: 150 }, (_, index) => limiters[index % limiters.length]!.consume('key_shared')),
      );
      expect(decisions.filter((decision) => decision.allowed)).toHaveLength(50);
      const refused = decisions.filter((decision) => !decision.allowed);
      expect(refused).toHaveLength(100);
      for (const decision of refused) {
        expect(decision.allowed ? 0 : decision.retryAfterMs).toBeGreaterThan(0);
        expect(decision.allowed ? 0 : decision.retryAfterMs).toBeLessThanOrEqual(60_000);
      }
      expect(await admin.get(`${prefix}ratelimit:key_shared`)).toBe('150');
      const ttlMs = await admin.pTTL(`${prefix}ratelimit:key_shared`);
      expect(ttlMs).toBeGreaterThan(0);
      expect(ttlMs).toBeLessThanOrEqual(60_000);
      // Another key has its own counter.
      expect(await limiters[0]!.consume('key_other')).toEqual({ allowed: true, remaining: 49 });
    } finally {
      await Promise.all(replicas.map((redis) => closeRedis(redis)));
    }
  });

  it('starts a new window when the counter expires', async () => {
    const redis = await openRedis({ url: gate.address.value, log: SILENT });
    try {
      const limiter = new RedisRateLimiter(redis, prefix, 1, 200);
      expect((await limiter.consume('k')).allowed).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(false);
      await eventually(async () => (await admin.exists(`${prefix}ratelimit:k`)) === 0);
      expect((await limiter.consume('k')).allowed).toBe(true);
    } finally {
      await closeRedis(redis);
    }
  });

  it('answers 429 with Retry-After on whichever replica the request after the limit reaches', async () => {
    const first = await env.start(redisEnv({ RATE_LIMIT_PER_MINUTE: '3' }));
    const second = await env.start(redisEnv({ RATE_LIMIT_PER_MINUTE: '3' }));
    expect((await get(first, '/v1/usage')).statusCode).toBe(200);
    expect((await get(second, '/v1/usage')).statusCode).toBe(200);
    expect((await get(first, '/v1/usage')).statusCode).toBe(200);

    const native = await get(second, '/v1/machines');
    expect(native.statusCode).toBe(429);
    const retryAfterS = Number(native.headers['retry-after']);
    expect(retryAfterS).toBeGreaterThanOrEqual(1);
    expect(retryAfterS).toBeLessThanOrEqual(60);
    expect(native.headers['content-type']).toMatch(/^application\/json/);
    expect(native.json()).toEqual({
      error: {
        code: 'RateLimitExceeded',
        message: `This organization has made more than 3 requests this minute. Retry after ${retryAfterS} second${retryAfterS === 1 ? '' : 's'}.`,
      },
    });

    const vendor = await post(first, '/anomalydetector/v1.1/timeseries/last/detect', { series: [] });
    expect(vendor.statusCode).toBe(429);
    expect(vendor.headers['retry-after']).toMatch(/^\d+$/);
    expect(vendor.json()).toMatchObject({ error: { code: '429' } });
    expect((vendor.json() as { error: { message: string } }).error.message).toMatch(
      /^Requests to the Anomaly Detector API have exceeded the rate limit of your subscription \(3 calls per minute\)\. Please retry after \d+ seconds?\.$/,
    );

    // Another key of another organization is not affected.
    await env.addOtherOrganization();
    expect((await get(second, '/v1/usage', OTHER_KEY)).statusCode).toBe(200);
  });

  it('keeps counting across a restart: a limiter built again on the same prefix goes on with the same window', async () => {
    const before = await openRedis({ url: gate.address.value, log: SILENT });
    try {
      const limiter = new RedisRateLimiter(before, prefix, 3);
      for (let call = 0; call < 3; call++) expect((await limiter.consume('org_restarted')).allowed).toBe(true);
    } finally {
      await closeRedis(before);
    }
    const after = await openRedis({ url: gate.address.value, log: SILENT });
    try {
      const decision = await new RedisRateLimiter(after, prefix, 3).consume('org_restarted');
      expect(decision.allowed).toBe(false);
      expect(decision.allowed ? 0 : decision.retryAfterMs).toBeGreaterThan(0);
      expect(decision.allowed ? 0 : decision.retryAfterMs).toBeLessThanOrEqual(60_000);
    } finally {
      await closeRedis(after);
    }
  });

  it('refuses the organization after the limit on an API restarted on the same Redis prefix', async () => {
    const first = await env.start(redisEnv({ RATE_LIMIT_PER_MINUTE: '2' }));
    expect((await get(first, '/v1/usage')).statusCode).toBe(200);
    expect((await get(first, '/v1/usage')).statusCode).toBe(200);
    await first.close();
    const restarted = await env.start(redisEnv({ RATE_LIMIT_PER_MINUTE: '2' }));
    const response = await get(restarted, '/v1/usage');
    expect(response.statusCode).toBe(429);
    expect(response.json()).toMatchObject({ error: { code: 'RateLimitExceeded' } });
    expect(await admin.exists(`${prefix}ratelimit:${restarted.bootstrap.organizationId}`)).toBe(1);
  });

  it('shares the key-lookup cache in Redis, and a revocation on one replica takes effect on every replica at once', async () => {
    const first = await env.start(redisEnv({ AUTH_CACHE_TTL_MS: '300000' }));
    const second = await env.start(redisEnv({ AUTH_CACHE_TTL_MS: '300000' }));
    const { keyHash } = describeApiKey(API_KEY);
    const cacheKey = `${prefix}apikey:${keyHash}`;

    expect((await get(first, '/v1/usage')).statusCode).toBe(200);
    const cached = JSON.parse((await admin.get(cacheKey)) ?? 'null') as unknown;
    expect(cached).toEqual({ id: expect.any(String), orgId: first.bootstrap.organizationId, kind: 'test' });
    const ttlMs = await admin.pTTL(cacheKey);
    expect(ttlMs).toBeGreaterThan(290_000);
    expect(ttlMs).toBeLessThanOrEqual(300_000);
    expect((await get(second, '/v1/usage')).statusCode).toBe(200);

    const record = await env.store.findApiKeyByHash(keyHash);
    expect(await first.apiKeys.revoke(first.bootstrap.organizationId, record?.id ?? '')).toBe(true);
    expect(await admin.exists(cacheKey)).toBe(0);
    expect((await get(second, '/v1/usage')).statusCode).toBe(401);
    expect((await get(first, '/v1/usage')).statusCode).toBe(401);
  });

  it('ignores a cache entry that is not one of ours', async () => {
    const app = await env.start(redisEnv());
    const { keyHash } = describeApiKey('svc_test_neverIssuedNeverIssued00');
    await admin.set(`${prefix}apikey:${keyHash}`, JSON.stringify({ id: 'key_x', orgId: 7 }), { PX: 60_000 });
    expect((await get(app, '/v1/usage', 'svc_test_neverIssuedNeverIssued00')).statusCode).toBe(401);
  });

  it('fails open when Redis is unreachable: requests are served, never a 500', async () => {
    const app = await env.start({ REDIS_URL: 'redis://127.0.0.1:1', REDIS_KEY_PREFIX: prefix, RATE_LIMIT_PER_MINUTE: '1' });
    for (let call = 0; call < 3; call++) {
      const response = await get(app, '/v1/usage');
      expect(response.statusCode).toBe(200);
    }
    expect((await get(app, '/v1/usage', 'svc_test_neverIssuedNeverIssued00')).statusCode).toBe(401);
  });

  it("drops the other replica's cached predictor over Redis pub/sub", async () => {
    const channelPrefix = prefix;
    const notifiers = await Promise.all([0, 1].map(() => createRedisNotifier(gate.address.value, { channelPrefix })));
    try {
      const first = await env.start(redisEnv(), { notifier: notifiers[0]!, model: constantEnergyModel(1) });
      const second = await env.start(redisEnv(), { notifier: notifiers[1]!, model: constantEnergyModel(1) });
      const series = Array.from({ length: 40 }, (_, index) => ({ value: 10 + (index % 5) }));
      const energies = (mean: number) => Array.from({ length: 100 }, (_, index) => mean + (index % 2 === 0 ? 0.5 : -0.5));
      const zOn = async (app: typeof first) =>
        ((await post(app, '/v1/detect', { machine_id: 'pump-1', series })).json() as { z_scores: number[] }).z_scores[0] ?? Number.NaN;

      expect((await post(first, '/v1/baseline', { machine_id: 'pump-1', energies: energies(3) })).statusCode).toBe(200);
      expect(await zOn(second)).toBeCloseTo(-4, 6);
      // The predictor cache has no expiry: only the pub/sub message makes the second replica see the change.
      expect((await post(first, '/v1/baseline', { machine_id: 'pump-1', energies: energies(2) })).statusCode).toBe(200);
      await eventually(async () => Math.abs((await zOn(second)) + 2) < 1e-6);
    } finally {
      await env.cleanup();
      await Promise.all(notifiers.map((notifier) => notifier.close()));
    }
  });
});
