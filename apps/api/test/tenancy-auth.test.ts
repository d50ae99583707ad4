import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { openEmbeddedStore } from '@adp/store';
import {
  ApiKeyAuthenticator,
  INVALID_KEY_BODY,
  MISSING_KEY_BODY,
  presentedApiKey,
} from '../src/tenancy/authentication.js';
import { describeApiKey } from '../src/tenancy/keys.js';
import { TtlCache } from '../src/tenancy/ttl-cache.js';
import { firstKey, testEnvironment, waitFor, type TestEnvironment } from './platform-helpers.js';

const MISSING_MESSAGE =
  'Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API.';
const INVALID_MESSAGE =
  'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.';
const UNKNOWN_KEY = 'svc_test_wellFormedButNeverIssued000';

describe('authentication hook', () => {
  let env: TestEnvironment;
  let app: FastifyInstance;
  let key: string;
  const get = (headers: Record<string, string>) => app.inject({ method: 'GET', url: '/v1/usage', headers });

  beforeEach(async () => {
    env = await testEnvironment();
    app = await env.start({ AUTH_CACHE_TTL_MS: '0' });
    key = firstKey(app);
  });
  afterEach(async () => {
    await env.cleanup();
  });

  it('answers a missing key with the vendor 401 body', async () => {
    const response = await get({});
    expect(response.statusCode).toBe(401);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json()).toEqual({ error: { code: '401', message: MISSING_MESSAGE } });
    expect(response.json()).toEqual(MISSING_KEY_BODY);
  });

  it.each([UNKNOWN_KEY, 'not-a-key', 'svc_live_', `svc_test_${'x'.repeat(500)}`])(
    'answers the key %s with the invalid-key 401 body',
    async (presented) => {
      const response = await get({ 'ocp-apim-subscription-key': presented });
      expect(response.statusCode).toBe(401);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.json()).toEqual({ error: { code: '401', message: INVALID_MESSAGE } });
      expect(response.json()).toEqual(INVALID_KEY_BODY);
    },
  );

  it('accepts the key in each header', async () => {
    expect((await get({ 'Ocp-Apim-Subscription-Key': key })).statusCode).toBe(200);
    expect((await get({ 'X-Service-Key': key })).statusCode).toBe(200);
    expect((await get({ Authorization: `Bearer ${key}` })).statusCode).toBe(200);
    expect((await get({ authorization: `bearer ${key}` })).statusCode).toBe(200);
  });

  it('uses the first header present, even when a later one holds a valid key', async () => {
    // Ocp-Apim-Subscription-Key wins over X-Service-Key ...
    expect((await get({ 'ocp-apim-subscription-key': UNKNOWN_KEY, 'x-service-key': key })).statusCode).toBe(401);
    expect((await get({ 'ocp-apim-subscription-key': key, 'x-service-key': UNKNOWN_KEY })).statusCode).toBe(200);
    // ... and X-Service-Key over Authorization.
    expect((await get({ 'x-service-key': UNKNOWN_KEY, authorization: `Bearer ${key}` })).statusCode).toBe(401);
    expect((await get({ 'x-service-key': key, authorization: `Bearer ${UNKNOWN_KEY}` })).statusCode).toBe(200);
    expect((await get({ 'ocp-apim-subscription-key': UNKNOWN_KEY, authorization: `Bearer ${key}` })).statusCode).toBe(401);
  });

  it('treats an empty header and a non-Bearer Authorization as absent', async () => {
    expect((await get({ 'ocp-apim-subscription-key': '', 'x-service-key': key })).statusCode).toBe(200);
    const basic = await get({ authorization: `Basic ${Buffer.from(`user:${key}`).toString('base64')}` });
    expect(basic.statusCode).toBe(401);
    expect(basic.json()).toEqual(MISSING_KEY_BODY);
  });

  it('rejects an Azure AD token sent as Bearer', async () => {
    const response = await get({ authorization: 'Bearer eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJjb2duaXRpdmUifQ.c2ln' });
    expect(response.json()).toEqual(INVALID_KEY_BODY);
  });

  it('tells the route who is calling', async () => {
    const live = firstKey(app, 'live');
    const response = await app.inject({ method: 'GET', url: '/v1/usage/summary', headers: { 'x-service-key': live } });
    const body = response.json() as { org_id: string; key_id: string; key_kind: string };
    expect(body).toMatchObject({
      org_id: app.bootstrap.organizationId,
      key_id: app.bootstrap.createdKeys.find((issued) => issued.kind === 'live')?.keyId,
      key_kind: 'live',
    });
  });

  it('rejects a revoked key (cache disabled: at once)', async () => {
    expect((await get({ 'x-service-key': key })).statusCode).toBe(200);
    const { keyHash } = describeApiKey(key);
    const record = await app.store.findApiKeyByHash(keyHash);
    expect(await app.store.revokeApiKey(record?.id ?? '')).toBe(true);
    const response = await get({ 'x-service-key': key });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual(INVALID_KEY_BODY);
  });

  it('records when a key was last used', async () => {
    const { keyHash } = describeApiKey(key);
    expect((await app.store.findApiKeyByHash(keyHash))?.lastUsedAt).toBeNull();
    await get({ 'x-service-key': key });
    await waitFor(async () => (await app.store.findApiKeyByHash(keyHash))?.lastUsedAt instanceof Date);
  });

  it('answers 503 in JSON when the key store fails', async () => {
    await app.store.close();
    const response = await get({ 'x-service-key': key });
    expect(response.statusCode).toBe(503);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json()).toMatchObject({ error: { code: 'ServiceUnavailable' } });
  });
});

describe('presentedApiKey', () => {
  it('takes the first present header in the documented order', () => {
    expect(presentedApiKey({})).toBeUndefined();
    expect(presentedApiKey({ authorization: 'Bearer  k3 ' })).toBe('k3');
    expect(presentedApiKey({ 'x-service-key': 'k2', authorization: 'Bearer k3' })).toBe('k2');
    expect(presentedApiKey({ 'ocp-apim-subscription-key': ' k1 ', 'x-service-key': 'k2' })).toBe('k1');
    expect(presentedApiKey({ authorization: 'Bearer' })).toBeUndefined();
  });
});

describe('ApiKeyAuthenticator cache', () => {
  it('keeps accepting a revoked key until the TTL passes, then rejects it', async () => {
    const env = await testEnvironment();
    const store = await openEmbeddedStore({ dataDir: env.dataDir });
    try {
      const org = await store.ensureDefaultOrganization();
      const key = 'svc_test_cachedKey0000000000';
      const { key: record } = await store.createApiKey(org.id, describeApiKey(key));
      let now = 1_000_000;
      const authenticator = new ApiKeyAuthenticator({ store, cacheTtlMs: 30_000, nowMs: () => now });

      expect((await authenticator.authenticate(key))?.id).toBe(record.id);
      await store.revokeApiKey(record.id);
      now += 29_999;
      expect((await authenticator.authenticate(key))?.id).toBe(record.id);
      now += 1;
      expect(await authenticator.authenticate(key)).toBeNull();
    } finally {
      await store.close();
      await env.cleanup();
    }
  });

  it('remembers an unknown key as invalid for the negative TTL only, and forgets it when the key is created here', async () => {
    const env = await testEnvironment();
    const store = await openEmbeddedStore({ dataDir: env.dataDir });
    try {
      const org = await store.ensureDefaultOrganization();
      const late = 'svc_live_createdAfterTheNegativeTtl';
      const announced = 'svc_live_createdAndAnnouncedHere';
      let now = 1_000_000;
      const authenticator = new ApiKeyAuthenticator({ store, cacheTtlMs: 30_000, negativeCacheTtlMs: 5_000, nowMs: () => now });
      expect(await authenticator.authenticate(late)).toBeNull();
      expect(await authenticator.authenticate(announced)).toBeNull();
      await store.createApiKey(org.id, describeApiKey(late));
      await store.createApiKey(org.id, describeApiKey(announced));
      now += 4_999;
      expect(await authenticator.authenticate(late)).toBeNull();
      authenticator.keyCreated(describeApiKey(announced).keyHash);
      expect(await authenticator.authenticate(announced)).not.toBeNull();
      now += 1;
      expect(await authenticator.authenticate(late)).not.toBeNull();
    } finally {
      await store.close();
      await env.cleanup();
    }
  });

  it('does not cache unknown keys without a negative TTL, so a new key works at once', async () => {
    const env = await testEnvironment();
    const store = await openEmbeddedStore({ dataDir: env.dataDir });
    try {
      const org = await store.ensureDefaultOrganization();
      const key = 'svc_live_createdAfterAFailedTry';
      const authenticator = new ApiKeyAuthenticator({ store, cacheTtlMs: 30_000 });
      expect(await authenticator.authenticate(key)).toBeNull();
      await store.createApiKey(org.id, describeApiKey(key));
      expect(await authenticator.authenticate(key)).not.toBeNull();
    } finally {
      await store.close();
      await env.cleanup();
    }
  });
});

describe('TtlCache', () => {
  it('expires entries and evicts the least recently used', () => {
    let now = 0;
    const cache = new TtlCache<number>(2, 100, () => now);
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.get('a')).toBe(1); // a is now the most recently used
    cache.set('c', 3);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBe(1);
    now = 100;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(1);
  });

  it('stores nothing with a zero TTL', () => {
    const cache = new TtlCache<number>(10, 0);
    cache.set('a', 1);
    expect(cache.get('a')).toBeUndefined();
  });
});
