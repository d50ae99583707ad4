// Dashboard sign-in through an identity provider (authorization code + PKCE, openid-client)
// against a loopback provider (./oidc-login-provider.ts): the redirect carries a S256 challenge,
// state and nonce; the callback exchanges the code with the verifier and opens a session in the
// organization the configured claim names. Refusals: no flow cookie, a tampered state, a refused
// code, an organization the claim does not name.
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startLoginProvider, type LoginProvider } from './oidc-login-provider.js';
import { tenancyEnvironment, type TenancyEnvironment } from './tenancy-helpers.js';

describe('dashboard OIDC sign-in', () => {
  let env: TenancyEnvironment;
  let app: FastifyInstance;
  let provider: LoginProvider;

  beforeEach(async () => {
    provider = await startLoginProvider();
    env = await tenancyEnvironment();
    app = await env.start({ OIDC_ISSUER: provider.issuer, OIDC_AUDIENCE: 'adp-api', OIDC_CLIENT_ID: provider.clientId, OIDC_ORG_CLAIM: 'tenant' });
    provider.claims = { tenant: app.bootstrap.organizationId, email: 'sso-user@example.com' };
  });
  afterEach(async () => {
    await env.cleanup();
    await provider.close();
  });

  /** Starts the flow; returns the flow cookie and where the provider sends the browser back. */
  async function authorize(): Promise<{ flowCookie: string; callback: URL; start: LightMyRequestResponse }> {
    const start = await app.inject({ method: 'GET', url: '/dashboard/api/oidc/start' });
    expect(start.statusCode, start.body).toBe(302);
    const flow = start.cookies.find((c) => c.name === 'adp_oidc_flow');
    expect(flow).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/dashboard/api/oidc/callback' });
    const atProvider = await fetch(String(start.headers.location), { redirect: 'manual' });
    expect(atProvider.status).toBe(302);
    return { flowCookie: `adp_oidc_flow=${flow?.value ?? ''}`, callback: new URL(atProvider.headers.get('location') ?? ''), start };
  }

  function callback(url: URL, cookie: string | undefined): Promise<LightMyRequestResponse> {
    return app.inject({ method: 'GET', url: `${url.pathname}${url.search}`, headers: cookie === undefined ? {} : { cookie } });
  }

  it('signs in with code + PKCE and opens a session in the organization the claim names', async () => {
    expect((await app.inject({ method: 'GET', url: '/dashboard/api/session' })).json()).toEqual({ signed_in: false, oidc: true });
    const { flowCookie, callback: back } = await authorize();
    const asked = provider.authorizeRequests[0];
    expect(asked?.get('code_challenge_method')).toBe('S256');
    expect(asked?.get('scope')).toBe('openid email profile');
    expect(asked?.get('redirect_uri')).toBe('http://localhost/dashboard/api/oidc/callback');
    expect(asked?.get('state')).toBeTruthy();
    expect(asked?.get('nonce')).toBeTruthy();

    const done = await callback(back, flowCookie);
    expect(done.statusCode, done.body).toBe(302);
    expect(done.headers.location).toBe('/dashboard/');
    // The verifier went to the token endpoint, not the browser.
    expect(provider.tokenRequests[0]?.get('code_verifier')).toMatch(/^[A-Za-z0-9_-]{43,128}$/);
    expect(done.cookies.find((c) => c.name === 'adp_oidc_flow')?.value).toBe('');
    const session = done.cookies.find((c) => c.name === 'adp_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax' });
    const cookie = `adp_session=${session?.value ?? ''}`;
    const view = await app.inject({ method: 'GET', url: '/dashboard/api/session', headers: { cookie } });
    expect(view.json()).toMatchObject({ signed_in: true, method: 'oidc', name: 'sso-user@example.com', org_id: app.bootstrap.organizationId });
    expect((await app.inject({ method: 'GET', url: '/v1/usage', headers: { cookie } })).statusCode).toBe(200);
  });

  it('refuses a callback without the flow cookie, with a tampered state, or with a refused code', async () => {
    const first = await authorize();
    const noCookie = await callback(first.callback, undefined);
    expect(noCookie.statusCode).toBe(400);
    expect(noCookie.json().error.code).toBe('OidcSignInFailed');

    const second = await authorize();
    second.callback.searchParams.set('state', 'forged-state');
    const forged = await callback(second.callback, second.flowCookie);
    expect(forged.statusCode).toBe(400);
    expect(forged.json().error.code).toBe('OidcSignInFailed');
    expect(forged.cookies.find((c) => c.name === 'adp_session')).toBeUndefined();

    const third = await authorize();
    provider.tokenError = 'invalid_grant';
    const refused = await callback(third.callback, third.flowCookie);
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error.message).toContain('invalid_grant');
  });

  it('refuses an id_token whose claim names no organization of this service', async () => {
    provider.claims = { tenant: 'org_nowhere' };
    const { flowCookie, callback: back } = await authorize();
    const done = await callback(back, flowCookie);
    expect(done.statusCode).toBe(400);
    expect(done.json().error.message).toBe("The id_token's tenant claim names no organization of this service.");
  });

  it('answers a coded error when OIDC sign-in is not configured', async () => {
    const plain = await env.start();
    const response = await plain.inject({ method: 'GET', url: '/dashboard/api/oidc/start' });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('OidcSignInFailed');
  });
});
