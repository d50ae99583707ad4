// An organization's own keys (/v1/keys): issue, list, revoke, rotate with a grace period; only live
// keys may call these routes; the last live key is protected; a revocation reaches every replica.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { INVALID_KEY_BODY } from '../src/tenancy/authentication.js';
import { call, eventually, tenancyEnvironment, type TenancyEnvironment } from './tenancy-helpers.js';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('/v1/keys', () => {
  let env: TenancyEnvironment;
  let app: FastifyInstance;
  let live: string;
  let test: string;

  beforeEach(async () => {
    env = await tenancyEnvironment();
    app = await env.start();
    const keys = app.bootstrap.createdKeys;
    live = keys.find((key) => key.kind === 'live')?.key ?? '';
    test = keys.find((key) => key.kind === 'test')?.key ?? '';
  });
  afterEach(async () => {
    await env.cleanup();
  });

  const usable = async (key: string, on: FastifyInstance = app): Promise<boolean> =>
    (await call(on, 'GET', '/v1/usage', key)).statusCode === 200;

  it('issues a key once, with its id, kind, name, prefix and last 4 characters; it works at once', async () => {
    const response = await call(app, 'POST', '/v1/keys', live, { kind: 'test', name: 'ci' });
    expect(response.statusCode).toBe(201);
    const body = response.json<Record<string, unknown>>();
    const key = body['key'] as string;
    expect(key).toMatch(/^svc_test_[A-Za-z0-9_-]{32}$/);
    expect(body).toEqual({
      key_id: expect.stringMatching(/^key_/),
      kind: 'test',
      name: 'ci',
      prefix: key.slice(0, 13),
      created_at: new Date(env.nowMs).toISOString(),
      last_used_at: null,
      revoked_at: null,
      expires_at: null,
      key,
      last4: key.slice(-4),
    });
    expect(await usable(key)).toBe(true);
  });

  it('a key tried before it existed works once created (the negative cache is cleared)', async () => {
    const created = await call(app, 'POST', '/v1/keys', live, { kind: 'live' });
    const key = created.json<{ key: string }>().key;
    expect(await usable(key)).toBe(true);
    expect(created.json<{ name: string }>().name).toBe('');
  });

  it('lists keys without secrets or hashes, with last use', async () => {
    expect(await usable(test)).toBe(true);
    await eventually(async () => {
      const listed = (await call(app, 'GET', '/v1/keys', live)).json<{ keys: { kind: string; last_used_at: string | null }[] }>();
      return listed.keys.find((key) => key.kind === 'test')?.last_used_at !== null;
    });
    const response = await call(app, 'GET', '/v1/keys', live);
    expect(response.statusCode).toBe(200);
    const { keys } = response.json<{ keys: Record<string, unknown>[] }>();
    expect(keys).toHaveLength(2);
    for (const key of keys) {
      expect(Object.keys(key).sort()).toEqual(['created_at', 'expires_at', 'key_id', 'kind', 'last_used_at', 'name', 'prefix', 'revoked_at']);
      expect(key['created_at']).toMatch(ISO);
    }
    expect(response.body).not.toContain(live.slice(13));
    expect(response.body).not.toContain(test.slice(13));
  });

  it('refuses test keys on every key route with 403 KeyManagementForbidden', async () => {
    const keyId = app.bootstrap.createdKeys[0]?.keyId ?? '';
    const forbidden = {
      error: { code: 'KeyManagementForbidden', message: 'Test keys cannot manage keys; call this route with a live key.' },
    };
    for (const [method, url, body] of [
      ['GET', '/v1/keys', undefined],
      ['POST', '/v1/keys', { kind: 'live' }],
      ['DELETE', `/v1/keys/${keyId}`, undefined],
      ['POST', `/v1/keys/${keyId}/rotate`, {}],
    ] as const) {
      const response = await call(app, method, url, test, body);
      expect(response.statusCode, `${method} ${url}`).toBe(403);
      expect(response.json(), `${method} ${url}`).toEqual(forbidden);
    }
  });

  it('refuses malformed bodies with 400 BadRequest and drops unknown fields', async () => {
    for (const body of [{ kind: 'gold' }, { name: 'x' }, { kind: 'live', name: 'x'.repeat(201) }, 'not json']) {
      const response = await call(app, 'POST', '/v1/keys', live, body);
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.json<{ error: { code: string } }>().error.code).toBe('BadRequest');
    }
    const extra = await call(app, 'POST', '/v1/keys', live, { kind: 'live', extra: 1 });
    expect(extra.statusCode).toBe(201);
    expect(extra.json()).not.toHaveProperty('extra');
  });

  it('revokes a key at once; an unknown or foreign key is 404 KeyNotFound', async () => {
    expect(await usable(test)).toBe(true);
    const testId = app.bootstrap.createdKeys.find((key) => key.kind === 'test')?.keyId ?? '';
    const response = await call(app, 'DELETE', `/v1/keys/${testId}`, live);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ key_id: testId, kind: 'test', revoked_at: new Date(env.nowMs).toISOString() });
    const refused = await call(app, 'GET', '/v1/usage', test);
    expect(refused.statusCode).toBe(401);
    expect(refused.json()).toEqual(INVALID_KEY_BODY);
    // Revoking again answers the revoked key unchanged.
    expect((await call(app, 'DELETE', `/v1/keys/${testId}`, live)).json()).toMatchObject({ revoked_at: new Date(env.nowMs).toISOString() });

    await env.store.createOrganization('org_other', 'Other');
    const { key: foreign } = await env.store.createApiKey('org_other', { kind: 'live', keyHash: 'a'.repeat(64), prefix: 'svc_live_aaaa' });
    for (const keyId of ['key_unknown', foreign.id]) {
      const missing = await call(app, 'DELETE', `/v1/keys/${keyId}`, live);
      expect(missing.statusCode).toBe(404);
      expect(missing.json()).toEqual({ error: { code: 'KeyNotFound', message: `This organization has no key "${keyId}".` } });
    }
    expect((await env.store.findApiKeyByHash('a'.repeat(64)))?.revokedAt).toBeNull();
  });

  it("refuses to revoke the organization's last live key, and allows it once another exists", async () => {
    const liveId = app.bootstrap.createdKeys.find((key) => key.kind === 'live')?.keyId ?? '';
    const refused = await call(app, 'DELETE', `/v1/keys/${liveId}`, live);
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toEqual({
      error: {
        code: 'LastLiveKey',
        message:
          "This is the organization's last live key that does not expire; create another live key (POST /v1/keys) before revoking it.",
      },
    });
    expect(await usable(live)).toBe(true);
    const other = (await call(app, 'POST', '/v1/keys', live, { kind: 'live', name: 'second' })).json<{ key: string }>().key;
    expect((await call(app, 'DELETE', `/v1/keys/${liveId}`, other)).statusCode).toBe(200);
    expect(await usable(live)).toBe(false);
  });

  it('rotates a key: the successor works at once, the old key until its grace period ends', async () => {
    expect(await usable(live)).toBe(true); // cached before the rotation
    const liveId = app.bootstrap.createdKeys.find((key) => key.kind === 'live')?.keyId ?? '';
    const rotatedAt = env.nowMs;
    const response = await call(app, 'POST', `/v1/keys/${liveId}/rotate`, live, { grace_seconds: 60 });
    expect(response.statusCode).toBe(201);
    const body = response.json<{ key: string; kind: string; previous: Record<string, unknown> }>();
    expect(body).toMatchObject({ kind: 'live', name: '', expires_at: null, revoked_at: null });
    expect(body.previous).toMatchObject({ key_id: liveId, expires_at: new Date(rotatedAt + 60_000).toISOString(), revoked_at: null });
    expect(await usable(body.key)).toBe(true);

    env.nowMs = rotatedAt + 59_999;
    expect(await usable(live)).toBe(true);
    env.nowMs = rotatedAt + 60_000;
    expect(await usable(live)).toBe(false);
    expect(await usable(body.key)).toBe(true);

    // A rotated (or revoked) key cannot be rotated again.
    const again = await call(app, 'POST', `/v1/keys/${liveId}/rotate`, body.key, {});
    expect(again.statusCode).toBe(409);
    expect(again.json<{ error: { code: string } }>().error.code).toBe('KeyNotActive');
    // The expiring key no longer counts as a lasting live key: the successor is the last one.
    const successorId = (await call(app, 'GET', '/v1/keys', body.key)).json<{ keys: { key_id: string; expires_at: string | null; kind: string }[] }>()
      .keys.find((key) => key.kind === 'live' && key.expires_at === null)?.key_id;
    expect((await call(app, 'DELETE', `/v1/keys/${successorId ?? ''}`, body.key)).statusCode).toBe(409);
  });

  it('rotates with grace_seconds 0 (the old key stops at once) and with the default hour', async () => {
    const testId = app.bootstrap.createdKeys.find((key) => key.kind === 'test')?.keyId ?? '';
    expect(await usable(test)).toBe(true);
    const now = await call(app, 'POST', `/v1/keys/${testId}/rotate`, live, { grace_seconds: 0 });
    expect(now.statusCode).toBe(201);
    expect(now.json<{ previous: { revoked_at: string | null } }>().previous.revoked_at).toBe(new Date(env.nowMs).toISOString());
    expect(await usable(test)).toBe(false);

    const liveId = app.bootstrap.createdKeys.find((key) => key.kind === 'live')?.keyId ?? '';
    // No body at all: the default hour too.
    const hour = await call(app, 'POST', `/v1/keys/${liveId}/rotate`, live);
    expect(hour.statusCode, hour.body).toBe(201);
    expect(hour.json<{ previous: { expires_at: string } }>().previous.expires_at).toBe(new Date(env.nowMs + 3_600_000).toISOString());
    for (const grace of [-1, 30 * 24 * 3600 + 1, 1.5]) {
      const bad = await call(app, 'POST', `/v1/keys/${liveId}/rotate`, live, { grace_seconds: grace });
      expect(bad.statusCode, String(grace)).toBe(400);
    }
    const unknown = await call(app, 'POST', '/v1/keys/key_nope/rotate', live, {});
    expect(unknown.statusCode).toBe(404);
  });

  it('a revocation on one replica is refused on another that had the key cached', async () => {
    const second = await env.start();
    expect(await usable(test, second)).toBe(true); // cached on the second replica (30 s TTL)
    const testId = app.bootstrap.createdKeys.find((key) => key.kind === 'test')?.keyId ?? '';
    expect((await call(app, 'DELETE', `/v1/keys/${testId}`, live)).statusCode).toBe(200);
    await eventually(async () => !(await usable(test, second)), 1_000);
  });

  it('a rotation on one replica ends the old key on another that had it cached', async () => {
    const second = await env.start();
    expect(await usable(live, second)).toBe(true);
    const liveId = app.bootstrap.createdKeys.find((key) => key.kind === 'live')?.keyId ?? '';
    const rotatedAt = env.nowMs;
    expect((await call(app, 'POST', `/v1/keys/${liveId}/rotate`, live, { grace_seconds: 10 })).statusCode).toBe(201);
    env.nowMs = rotatedAt + 10_000;
    await eventually(async () => !(await usable(live, second)), 1_000);
  });
});
