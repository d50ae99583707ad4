// The admin API: off (404 everywhere) without ADMIN_TOKEN; with it, only the token opens it (an
// API key never does); organizations are created with their first keys, listed, read and disabled
// (their keys stop working on every replica at once); their keys are issued, listed and revoked.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { INVALID_KEY_BODY } from '../src/tenancy/authentication.js';
import { ADMIN_TOKEN, call, eventually, tenancyEnvironment, type TenancyEnvironment } from './tenancy-helpers.js';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('admin API', () => {
  let env: TenancyEnvironment;
  let app: FastifyInstance;

  beforeEach(async () => {
    env = await tenancyEnvironment();
    app = await env.start();
  });
  afterEach(async () => {
    await env.cleanup();
  });

  const createOrganization = async (body: Record<string, unknown> = { name: 'Acme', plan: 'free' }) => {
    const response = await call(app, 'POST', '/admin/v1/organizations', ADMIN_TOKEN, body);
    expect(response.statusCode, response.body).toBe(201);
    return response.json<{ org_id: string; keys: { key: string; key_id: string; kind: string }[] }>();
  };

  it('answers 404 on every /admin path when ADMIN_TOKEN is unset, whatever the credentials', async () => {
    const off = await env.start({ ADMIN_TOKEN: '' });
    const live = app.bootstrap.createdKeys.find((key) => key.kind === 'live')?.key;
    for (const [method, url] of [
      ['GET', '/admin/v1/organizations'],
      ['POST', '/admin/v1/organizations'],
      ['POST', '/admin/v1/organizations/org_x/disable'],
      ['GET', '/admin/anything'],
    ] as const) {
      for (const credential of [undefined, ADMIN_TOKEN, live]) {
        const response = await call(off, method, url, credential);
        expect(response.statusCode, `${method} ${url}`).toBe(404);
        expect(response.json()).toEqual({ error: { code: 'NotFound', message: `Route ${method} ${url} not found` } });
      }
    }
  });

  it('documents the admin routes in the OpenAPI document only while the admin API is on', async () => {
    type Document = { paths: Record<string, Record<string, { security?: unknown[]; responses: Record<string, unknown> }>> };
    const on = (await app.inject({ method: 'GET', url: '/openapi.json' })).json<Document>();
    expect(on.paths['/admin/v1/organizations']?.['post']?.security).toEqual([{ adminToken: [] }]);
    expect(Object.keys(on.paths['/admin/v1/organizations']?.['post']?.responses ?? {}).sort()).toEqual(['201', '400', '401', '404', '409']);
    expect(Object.keys(on.paths).filter((route) => route.startsWith('/admin/*'))).toEqual([]);
    const off = await env.start({ ADMIN_TOKEN: '' });
    const document = (await off.inject({ method: 'GET', url: '/openapi.json' })).json<Document>();
    expect(Object.keys(document.paths).filter((route) => route.startsWith('/admin'))).toEqual([]);
  });

  it('refuses a missing or wrong token, an API key and other headers with 401 AdminUnauthorized', async () => {
    const missing = await call(app, 'GET', '/admin/v1/organizations', undefined);
    expect(missing.statusCode).toBe(401);
    expect(missing.json()).toEqual({ error: { code: 'AdminUnauthorized', message: 'The admin API needs Authorization: Bearer <ADMIN_TOKEN>.' } });
    const live = app.bootstrap.createdKeys.find((key) => key.kind === 'live')?.key ?? '';
    const jwt = 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.';
    for (const token of [`${ADMIN_TOKEN}x`, ADMIN_TOKEN.slice(1), live, jwt]) {
      const wrong = await call(app, 'GET', '/admin/v1/organizations', token);
      expect(wrong.statusCode).toBe(401);
      expect(wrong.json()).toEqual({ error: { code: 'AdminUnauthorized', message: 'The admin token is not valid.' } });
    }
    const otherHeader = await app.inject({ method: 'GET', url: '/admin/v1/organizations', headers: { 'x-service-key': ADMIN_TOKEN } });
    expect(otherHeader.statusCode).toBe(401);
    const basic = await app.inject({ method: 'GET', url: '/admin/v1/organizations', headers: { authorization: `Basic ${ADMIN_TOKEN}` } });
    expect(basic.statusCode).toBe(401);
    // An unknown admin path: 401 without the token, 404 with it.
    expect((await call(app, 'GET', '/admin/v2/nothing', undefined)).statusCode).toBe(401);
    const unknown = await call(app, 'GET', '/admin/v2/nothing', ADMIN_TOKEN);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: { code: 'NotFound', message: 'Route GET /admin/v2/nothing not found' } });
  });

  it('creates an organization with one live and one test key, shown once, that work at once', async () => {
    const response = await call(app, 'POST', '/admin/v1/organizations', ADMIN_TOKEN, { name: 'Acme', plan: 'free', external_id: 'acme-42' });
    expect(response.statusCode).toBe(201);
    const body = response.json<{ org_id: string; keys: Record<string, unknown>[] }>();
    expect(body).toEqual({
      org_id: expect.stringMatching(/^org_[0-9a-f]{32}$/),
      name: 'Acme',
      plan: 'free',
      external_id: 'acme-42',
      created_at: new Date(env.nowMs).toISOString(),
      disabled_at: null,
      keys: [
        expect.objectContaining({ kind: 'live', name: 'initial', key: expect.stringMatching(/^svc_live_/), last4: expect.any(String) }),
        expect.objectContaining({ kind: 'test', name: 'initial', key: expect.stringMatching(/^svc_test_/), last4: expect.any(String) }),
      ],
    });
    for (const key of body.keys) {
      const usage = await call(app, 'GET', '/v1/usage/summary', key['key'] as string);
      expect(usage.statusCode).toBe(200);
      expect(usage.body).toContain(body.org_id);
    }
    const listed = (await call(app, 'GET', `/admin/v1/organizations/${body.org_id}/keys`, ADMIN_TOKEN)).json<{ keys: unknown[] }>();
    expect(listed.keys).toHaveLength(2);
    expect(JSON.stringify(listed)).not.toContain((body.keys[0]?.['key'] as string).slice(13));
  });

  it('refuses malformed organizations (400) and a taken external id (409)', async () => {
    for (const body of [{ name: 'x', plan: 'gold' }, { plan: 'free' }, { name: '', plan: 'paid' }, { name: 'x', plan: 'paid', external_id: '' }]) {
      const response = await call(app, 'POST', '/admin/v1/organizations', ADMIN_TOKEN, body);
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.json<{ error: { code: string } }>().error.code).toBe('BadRequest');
    }
    await createOrganization({ name: 'One', plan: 'paid', external_id: 'idp-1' });
    const taken = await call(app, 'POST', '/admin/v1/organizations', ADMIN_TOKEN, { name: 'Two', plan: 'paid', external_id: 'idp-1' });
    expect(taken.statusCode).toBe(409);
    expect(taken.json()).toEqual({ error: { code: 'ExternalIdTaken', message: 'Another organization has the external id "idp-1".' } });
  });

  it('lists organizations oldest first (the default one is paid) and reads one; an unknown id is 404', async () => {
    env.nowMs += 1_000;
    const created = await createOrganization();
    const list = await call(app, 'GET', '/admin/v1/organizations', ADMIN_TOKEN);
    expect(list.statusCode).toBe(200);
    const { organizations } = list.json<{ organizations: Record<string, unknown>[] }>();
    expect(organizations).toEqual([
      expect.objectContaining({ org_id: app.bootstrap.organizationId, plan: 'paid', external_id: null, disabled_at: null }),
      expect.objectContaining({ org_id: created.org_id, name: 'Acme', plan: 'free' }),
    ]);
    for (const organization of organizations) expect(organization['created_at']).toMatch(ISO);
    const one = await call(app, 'GET', `/admin/v1/organizations/${created.org_id}`, ADMIN_TOKEN);
    expect(one.json()).toEqual(organizations[1]);
    const unknown = await call(app, 'GET', '/admin/v1/organizations/org_nope', ADMIN_TOKEN);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: { code: 'OrganizationNotFound', message: 'No organization "org_nope".' } });
  });

  it("disables an organization: its keys stop working at once on every replica, other organizations' keep working", async () => {
    const second = await env.start();
    const created = await createOrganization();
    const keys = created.keys.map((key) => key.key);
    for (const replica of [app, second]) for (const key of keys) expect((await call(replica, 'GET', '/v1/usage', key)).statusCode).toBe(200);

    const response = await call(app, 'POST', `/admin/v1/organizations/${created.org_id}/disable`, ADMIN_TOKEN);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ org_id: created.org_id, disabled_at: new Date(env.nowMs).toISOString() });
    for (const key of keys) {
      const refused = await call(app, 'GET', '/v1/usage', key);
      expect(refused.statusCode).toBe(401);
      expect(refused.json()).toEqual(INVALID_KEY_BODY);
      await eventually(async () => (await call(second, 'GET', '/v1/usage', key)).statusCode === 401, 1_000);
    }
    const defaultLive = app.bootstrap.createdKeys.find((key) => key.kind === 'live')?.key ?? '';
    expect((await call(second, 'GET', '/v1/usage', defaultLive)).statusCode).toBe(200);
    // Again: unchanged. Keys of a disabled organization cannot be issued.
    expect((await call(app, 'POST', `/admin/v1/organizations/${created.org_id}/disable`, ADMIN_TOKEN)).json()).toMatchObject({
      disabled_at: new Date(env.nowMs).toISOString(),
    });
    const issue = await call(app, 'POST', `/admin/v1/organizations/${created.org_id}/keys`, ADMIN_TOKEN, { kind: 'live' });
    expect(issue.statusCode).toBe(409);
    expect(issue.json<{ error: { code: string } }>().error.code).toBe('OrganizationDisabled');
    expect((await call(app, 'POST', '/admin/v1/organizations/org_nope/disable', ADMIN_TOKEN)).statusCode).toBe(404);
  });

  it("issues, lists and revokes an organization's keys, keeping its last live key", async () => {
    const created = await createOrganization();
    const issued = await call(app, 'POST', `/admin/v1/organizations/${created.org_id}/keys`, ADMIN_TOKEN, { kind: 'live', name: 'deploy' });
    expect(issued.statusCode).toBe(201);
    const key = issued.json<{ key: string; key_id: string }>();
    expect(issued.json()).toMatchObject({ kind: 'live', name: 'deploy', last4: key.key.slice(-4) });
    expect((await call(app, 'GET', '/v1/usage', key.key)).statusCode).toBe(200);

    const revoke = await call(app, 'DELETE', `/admin/v1/organizations/${created.org_id}/keys/${key.key_id}`, ADMIN_TOKEN);
    expect(revoke.statusCode).toBe(200);
    expect(revoke.json()).toMatchObject({ key_id: key.key_id, revoked_at: new Date(env.nowMs).toISOString() });
    expect((await call(app, 'GET', '/v1/usage', key.key)).statusCode).toBe(401);

    const firstLive = created.keys.find((candidate) => candidate.kind === 'live')?.key_id ?? '';
    const last = await call(app, 'DELETE', `/admin/v1/organizations/${created.org_id}/keys/${firstLive}`, ADMIN_TOKEN);
    expect(last.statusCode).toBe(409);
    expect(last.json<{ error: { code: string } }>().error.code).toBe('LastLiveKey');
    // Another organization's key through this organization's path: not found.
    const defaultLive = app.bootstrap.createdKeys.find((candidate) => candidate.kind === 'live')?.keyId ?? '';
    expect((await call(app, 'DELETE', `/admin/v1/organizations/${created.org_id}/keys/${defaultLive}`, ADMIN_TOKEN)).statusCode).toBe(404);
    expect((await call(app, 'GET', '/admin/v1/organizations/org_nope/keys', ADMIN_TOKEN)).statusCode).toBe(404);
  });
});
