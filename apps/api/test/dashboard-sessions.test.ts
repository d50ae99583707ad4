// Dashboard sign-in with local accounts and the session cookie: the first account from the first
// start, sign-in and its throttle, the cookie's attributes, CSRF and origin checks on state-changing
// calls, key management with the session, where the cookie is (not) accepted, sign-out, expiry, a disabled organization, and the
// admin API's account route.
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, tenancyEnvironment, type TenancyEnvironment } from './tenancy-helpers.js';

interface Signed {
  readonly cookie: string;
  readonly csrf: string;
  readonly response: LightMyRequestResponse;
}

const PASSWORD = 'correct horse battery staple';

describe('dashboard sessions', () => {
  let env: TenancyEnvironment;
  let app: FastifyInstance;

  beforeEach(async () => {
    env = await tenancyEnvironment();
    app = await env.start({ AUTH_FAILURES_PER_MINUTE: '3', SESSION_TTL_MS: '3600000' });
  });
  afterEach(async () => {
    await env.cleanup();
  });

  function login(email: string, password: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
    return app.inject({ method: 'POST', url: '/dashboard/api/login', headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify({ email, password }) });
  }

  async function signIn(email: string, password: string): Promise<Signed> {
    const response = await login(email, password);
    expect(response.statusCode, response.body).toBe(200);
    const cookie = response.cookies.find((c) => c.name === 'adp_session');
    if (!cookie) throw new Error('no session cookie');
    return { cookie: `adp_session=${cookie.value}`, csrf: (response.json() as { csrf_token: string }).csrf_token, response };
  }

  async function createUser(email: string, password = PASSWORD, orgId = app.bootstrap.organizationId): Promise<LightMyRequestResponse> {
    return app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${orgId}/users`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ email, password }),
    });
  }

  it('creates the first account at the first start, saved with mode 0600, and signs in with it', async () => {
    const account = app.bootstrapAccount;
    expect(account?.email).toBe('admin@localhost');
    const file = account?.file ?? '';
    expect(path.basename(file)).toBe('bootstrap-account.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(await readFile(file, 'utf8')) as { email: string; password: string };
    expect(saved.password).toBe(account?.password);

    const { response, csrf } = await signIn('Admin@Localhost', saved.password);
    expect(response.json()).toMatchObject({ signed_in: true, org_id: app.bootstrap.organizationId, name: 'admin@localhost', method: 'password', oidc: false });
    expect(csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const cookie = response.cookies.find((c) => c.name === 'adp_session');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/', maxAge: 3600 });
    // Plain http to a loopback host (inject's Host is localhost): a Secure cookie would never come back.
    expect(cookie?.secure).toBeUndefined();

    // A second replica on the same store creates no second account.
    const second = await env.start();
    expect(second.bootstrapAccount).toBeNull();
  });

  it('marks the cookie Secure on a non-loopback host, or always with SESSION_COOKIE_SECURE=true', async () => {
    const password = app.bootstrapAccount?.password ?? '';
    const remote = await login('admin@localhost', password, { host: 'anomaly.example.com' });
    expect(remote.cookies.find((c) => c.name === 'adp_session')?.secure).toBe(true);
    const strict = await env.start({ SESSION_COOKIE_SECURE: 'true' });
    const local = await strict.inject({ method: 'POST', url: '/dashboard/api/login', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ email: 'admin@localhost', password }) });
    expect(local.cookies.find((c) => c.name === 'adp_session')?.secure).toBe(true);
  });

  it('refuses a wrong password or an unknown email alike, and throttles the address after AUTH_FAILURES_PER_MINUTE failures', async () => {
    const wrong = await login('admin@localhost', 'not the password at all');
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json()).toEqual({ error: { code: 'InvalidCredentials', message: 'The email or the password is wrong.' } });
    expect(wrong.cookies).toHaveLength(0);
    const unknown = await login('nobody@example.com', 'whatever it is');
    expect(unknown.json()).toEqual(wrong.json());
    await login('admin@localhost', 'third wrong one');
    const throttled = await login('admin@localhost', app.bootstrapAccount?.password ?? '');
    expect(throttled.statusCode).toBe(429);
    expect(throttled.json().error.code).toBe('AuthenticationThrottled');
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('refuses a login posted from another origin', async () => {
    const response = await login('admin@localhost', app.bootstrapAccount?.password ?? '', { origin: 'https://evil.example' });
    expect(response.statusCode).toBe(403);
    expect(response.json().error.code).toBe('CsrfRejected');
  });

  it('authenticates /v1/ reads with the cookie, and state-changing calls only with the CSRF token from this origin', async () => {
    const { cookie, csrf } = await signIn('admin@localhost', app.bootstrapAccount?.password ?? '');
    const usage = await app.inject({ method: 'GET', url: '/v1/usage', headers: { cookie } });
    expect(usage.statusCode, usage.body).toBe(200);

    const body = JSON.stringify({ kind: 'test', name: 'from the dashboard' });
    const post = (headers: Record<string, string>) =>
      app.inject({ method: 'POST', url: '/v1/keys', headers: { cookie, 'content-type': 'application/json', ...headers }, payload: body });
    const without = await post({});
    expect(without.statusCode).toBe(403);
    expect(without.json().error.code).toBe('CsrfRejected');
    expect((await post({ 'x-csrf-token': 'A'.repeat(43) })).statusCode).toBe(403);
    expect((await post({ 'x-csrf-token': csrf, origin: 'https://evil.example' })).statusCode).toBe(403);
    expect((await post({ 'x-csrf-token': csrf, 'sec-fetch-site': 'cross-site' })).statusCode).toBe(403);
    expect((await post({ 'x-csrf-token': csrf, origin: 'null' })).statusCode).toBe(403);
    // Behind a TLS-terminating proxy the browser says https while the request arrives as http.
    const created = await post({ 'x-csrf-token': csrf, origin: 'https://localhost:80', 'sec-fetch-site': 'same-origin' });
    expect(created.statusCode, created.body).toBe(201);

    // The session reads its CSRF token again after a reload.
    const session = await app.inject({ method: 'GET', url: '/dashboard/api/session', headers: { cookie } });
    expect(session.json()).toMatchObject({ signed_in: true, csrf_token: csrf });
  });

  it("lets a session of the organization's account list, rotate and revoke its keys (the Keys page's calls)", async () => {
    const { cookie, csrf } = await signIn('admin@localhost', app.bootstrapAccount?.password ?? '');
    const call = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) =>
      app.inject({
        method,
        url,
        headers: { cookie, ...(method === 'GET' ? {} : { 'x-csrf-token': csrf }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      });
    const created = await call('POST', '/v1/keys', { kind: 'live', name: 'from the keys page' });
    expect(created.statusCode, created.body).toBe(201);
    const keyId = (created.json() as { key_id: string }).key_id;
    const listed = await call('GET', '/v1/keys');
    expect(listed.statusCode, listed.body).toBe(200);
    expect((listed.json() as { keys: { key_id: string }[] }).keys.map((key) => key.key_id)).toContain(keyId);
    const rotated = await call('POST', `/v1/keys/${keyId}/rotate`, { grace_seconds: 0 });
    expect(rotated.statusCode, rotated.body).toBe(201);
    const successor = (rotated.json() as { key_id: string }).key_id;
    // The first start's live key remains, so the successor is not the last live key.
    const revoked = await call('DELETE', `/v1/keys/${successor}`);
    expect(revoked.statusCode, revoked.body).toBe(200);
    expect((revoked.json() as { revoked_at: string | null }).revoked_at).not.toBeNull();
    // Without the CSRF token the session may read but not change keys.
    const forged = await app.inject({ method: 'DELETE', url: `/v1/keys/${keyId}`, headers: { cookie } });
    expect(forged.statusCode).toBe(403);
  });

  it('authenticates the vendor paths the detect page calls, with the same CSRF rule', async () => {
    const { cookie, csrf } = await signIn('admin@localhost', app.bootstrapAccount?.password ?? '');
    const series = Array.from({ length: 24 }, (_, i) => ({ timestamp: new Date(Date.UTC(2025, 0, 1, i)).toISOString(), value: 10 + (i % 3) }));
    const detect = (headers: Record<string, string>) =>
      app.inject({
        method: 'POST',
        url: '/anomalydetector/v1.1/timeseries/entire/detect',
        headers: { cookie, 'content-type': 'application/json', ...headers },
        payload: JSON.stringify({ series, granularity: 'hourly' }),
      });
    expect((await detect({})).statusCode).toBe(403);
    const answered = await detect({ 'x-csrf-token': csrf });
    expect(answered.statusCode, answered.body).toBe(200);
  });

  it('never accepts the cookie on the admin API', async () => {
    const { cookie } = await signIn('admin@localhost', app.bootstrapAccount?.password ?? '');
    const response = await app.inject({ method: 'GET', url: '/admin/v1/organizations', headers: { cookie } });
    expect(response.statusCode).toBe(401);
    expect(response.json().error.code).toBe('AdminUnauthorized');
  });

  it('signs out server-side: the same cookie stops working', async () => {
    const { cookie } = await signIn('admin@localhost', app.bootstrapAccount?.password ?? '');
    const out = await app.inject({ method: 'POST', url: '/dashboard/api/logout', headers: { cookie } });
    expect(out.statusCode).toBe(204);
    expect(out.cookies.find((c) => c.name === 'adp_session')?.value).toBe('');
    const after = await app.inject({ method: 'GET', url: '/v1/usage', headers: { cookie } });
    expect(after.statusCode).toBe(401);
    expect(after.json().error.code).toBe('InvalidSession');
    expect((await app.inject({ method: 'GET', url: '/dashboard/api/session', headers: { cookie } })).json()).toEqual({ signed_in: false, oidc: false });
  });

  it('expires sessions after SESSION_TTL_MS', async () => {
    const { cookie } = await signIn('admin@localhost', app.bootstrapAccount?.password ?? '');
    env.nowMs += 3_600_000 - 1;
    expect((await app.inject({ method: 'GET', url: '/v1/usage', headers: { cookie } })).statusCode).toBe(200);
    env.nowMs += 1;
    const expired = await app.inject({ method: 'GET', url: '/v1/usage', headers: { cookie } });
    expect(expired.statusCode).toBe(401);
    expect(expired.json().error.code).toBe('InvalidSession');
  });

  it("stops a disabled organization's sessions and sign-ins", async () => {
    const created = await app.inject({
      method: 'POST',
      url: '/admin/v1/organizations',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'Acme', plan: 'free' }),
    });
    const orgId = (created.json() as { org_id: string }).org_id;
    expect((await createUser('ops@acme.example', PASSWORD, orgId)).statusCode).toBe(201);
    const { cookie } = await signIn('ops@acme.example', PASSWORD);
    expect((await app.inject({ method: 'GET', url: '/v1/usage', headers: { cookie } })).statusCode).toBe(200);
    await app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/disable`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect((await app.inject({ method: 'GET', url: '/v1/usage', headers: { cookie } })).json().error.code).toBe('InvalidSession');
    const again = await login('ops@acme.example', PASSWORD);
    expect(again.statusCode).toBe(401);
    expect(again.json().error.message).toBe("This account's organization is disabled.");
  });

  it('creates accounts through the admin API: once per email, with a long enough password, in an existing organization', async () => {
    const created = await createUser('Ana@Example.com');
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({ org_id: app.bootstrap.organizationId, email: 'ana@example.com' });
    expect((await createUser('ana@example.com')).json().error.code).toBe('AccountExists');
    const short = await createUser('bo@example.com', 'short');
    expect(short.statusCode).toBe(400);
    expect(short.json().error.message).toContain('12 to 256 characters');
    expect((await createUser('not-an-email')).statusCode).toBe(400);
    expect((await createUser('cy@example.com', PASSWORD, 'org_missing')).json().error.code).toBe('OrganizationNotFound');
    const noToken = await app.inject({ method: 'POST', url: `/admin/v1/organizations/${app.bootstrap.organizationId}/users`, headers: { 'content-type': 'application/json' }, payload: '{}' });
    expect(noToken.statusCode).toBe(401);
    await signIn('ana@example.com', PASSWORD);
  });
});
