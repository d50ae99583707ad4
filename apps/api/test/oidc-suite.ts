// Identity-provider tokens on the /v1/ routes, against a JWKS server this test runs on loopback:
// what is accepted (RS256, ES256, within the clock tolerance, after a key rotation) and every
// refusal (alg none, HMAC, expired, not yet valid, wrong issuer or audience, unknown key id, no
// subject, no or unknown organization), the routes a token never opens (vendor paths, /admin/),
// and a provider that cannot be reached. One suite for every configuration: tenancy-oidc.test.ts
// runs it embedded, test/integration/api-oidc-scale-out.test.ts on ClickHouse and Redis.
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AUDIENCE, hmacToken, signingKey, signToken, startProvider, unsignedToken, type FakeProvider, type SigningKey } from './oidc-helpers.js';
import { firstKey, type TestEnvironment } from './platform-helpers.js';

/** Runs the identity-provider suite on apps that `environment` builds (a fresh one per test). */
export function describeOidcSuite(name: string, environment: () => Promise<TestEnvironment>): void {
  let rsa: SigningKey;
  let ec: SigningKey;
  let rotated: SigningKey;

  beforeAll(async () => {
    [rsa, ec, rotated] = await Promise.all([signingKey('rsa-1', 'RS256'), signingKey('ec-1', 'ES256'), signingKey('rsa-2', 'RS256')]);
  });

  describe(`identity-provider tokens (${name})`, () => {
    let env: TestEnvironment;
    let provider: FakeProvider;

    beforeEach(async () => {
      env = await environment();
      provider = await startProvider([rsa, ec]);
    });
    afterEach(async () => {
      await env.cleanup();
      await provider.close();
    });

    const oidcEnv = (extra: Record<string, string> = {}): Record<string, string> => ({
      OIDC_ISSUER: provider.issuer,
      OIDC_AUDIENCE: AUDIENCE,
      OIDC_JWKS_REFRESH_MIN_MS: '0',
      LOG_LEVEL: 'silent',
      ...extra,
    });

    const summary = (app: FastifyInstance, token: string, url = '/v1/usage/summary') =>
      app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });

    async function refusal(app: FastifyInstance, token: string): Promise<string> {
      const response = await summary(app, token);
      expect(response.statusCode).toBe(401);
      expect(response.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
      const body = response.json<{ error: { code: string; message: string } }>();
      expect(body.error.code).toBe('InvalidIdentityToken');
      return body.error.message;
    }

    it('accepts RS256 and ES256 tokens: the caller is the subject in the claimed organization, with live usage and no key', async () => {
      const app = await env.start(oidcEnv());
      for (const key of [rsa, ec]) {
        const response = await summary(app, await signToken(key, { issuer: provider.issuer, subject: `user-${key.alg}` }));
        expect(response.statusCode).toBe(200);
        expect(response.json()).toMatchObject({ org_id: 'org_default', key_id: null, key_kind: 'live', subject: `user-${key.alg}` });
      }
      // Discovery once, the key set once: both are kept.
      expect(provider.fetches).toEqual({ discovery: 1, jwks: 1 });
    });

    it('API keys keep working beside tokens, and say so without a subject', async () => {
      const app = await env.start(oidcEnv());
      const response = await app.inject({ method: 'GET', url: '/v1/usage/summary', headers: { authorization: `Bearer ${firstKey(app)}` } });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ key_kind: 'test' });
      expect(response.json()).not.toHaveProperty('subject');
    });

    it('takes the organization from OIDC_ORG_CLAIM', async () => {
      const app = await env.start(oidcEnv({ OIDC_ORG_CLAIM: 'https://example.com/org' }));
      await app.store.createOrganization('org_acme', 'Acme');
      const token = await signToken(rsa, { issuer: provider.issuer, claims: { 'https://example.com/org': 'org_acme', org_id: 'org_default' } });
      const response = await summary(app, token);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ org_id: 'org_acme' });
    });

    it('refuses unsigned (alg none) and HMAC tokens', async () => {
      const app = await env.start(oidcEnv());
      const nowS = Math.floor(Date.now() / 1000);
      const none = unsignedToken({ iss: provider.issuer, aud: AUDIENCE, sub: 'user-1', org_id: 'org_default', exp: nowS + 300 });
      expect(await refusal(app, none)).toMatch(/alg "none"/);
      expect(await refusal(app, await hmacToken({ issuer: provider.issuer }))).toMatch(/HMAC/);
    });

    it('refuses expired and not-yet-valid tokens beyond the clock tolerance, and accepts them within it', async () => {
      const app = await env.start(oidcEnv());
      expect(await refusal(app, await signToken(rsa, { issuer: provider.issuer, expiresInS: -120 }))).toMatch(/expired/);
      expect(await refusal(app, await signToken(rsa, { issuer: provider.issuer, notBeforeInS: 120 }))).toMatch(/not valid yet/);
      // 30 s of tolerance by default.
      expect((await summary(app, await signToken(rsa, { issuer: provider.issuer, expiresInS: -5 }))).statusCode).toBe(200);
      expect((await summary(app, await signToken(rsa, { issuer: provider.issuer, notBeforeInS: 5 }))).statusCode).toBe(200);
    });

    it('honours OIDC_CLOCK_TOLERANCE_S', async () => {
      const app = await env.start(oidcEnv({ OIDC_CLOCK_TOLERANCE_S: '0' }));
      expect(await refusal(app, await signToken(rsa, { issuer: provider.issuer, expiresInS: -5 }))).toMatch(/expired/);
    });

    it('refuses a wrong issuer or audience, and tokens without exp or sub', async () => {
      const app = await env.start(oidcEnv());
      expect(await refusal(app, await signToken(rsa, { issuer: 'https://evil.example.com' }))).toMatch(/another issuer/);
      expect(await refusal(app, await signToken(rsa, { issuer: provider.issuer, audience: 'another-api' }))).toMatch(/another audience/);
      expect(await refusal(app, await signToken(rsa, { issuer: provider.issuer, subject: null }))).toMatch(/no sub claim/);
    });

    it("names an organization by the external id an operator gave it, and refuses a disabled one", async () => {
      const app = await env.start(oidcEnv());
      await app.store.createOrganization('org_acme', 'Acme', { externalId: 'tenant-7f3a' });
      const byExternal = await summary(app, await signToken(rsa, { issuer: provider.issuer, claims: { org_id: 'tenant-7f3a' } }));
      expect(byExternal.statusCode).toBe(200);
      expect(byExternal.json()).toMatchObject({ org_id: 'org_acme' });
      await app.store.disableOrganization('org_acme');
      for (const claim of ['org_acme', 'tenant-7f3a']) {
        expect(await refusal(app, await signToken(rsa, { issuer: provider.issuer, claims: { org_id: claim } }))).toMatch(/names no organization/);
      }
    });

    it('refuses a token whose organization claim is missing or names no organization', async () => {
      const app = await env.start(oidcEnv());
      expect(await refusal(app, await signToken(rsa, { issuer: provider.issuer, claims: { org_id: undefined } }))).toMatch(/no org_id claim/);
      expect(await refusal(app, await signToken(rsa, { issuer: provider.issuer, claims: { org_id: 42 } }))).toMatch(/no org_id claim/);
      expect(await refusal(app, await signToken(rsa, { issuer: provider.issuer, claims: { org_id: 'org_nobody' } }))).toMatch(
        /names no organization/,
      );
    });

    it('refuses a signature that does not verify', async () => {
      const app = await env.start(oidcEnv());
      // Signed by the rotated key but naming the served key's id.
      expect(await refusal(app, await signToken(rotated, { issuer: provider.issuer, kid: rsa.kid }))).toMatch(/signature/);
    });

    it('refetches the key set for an unknown key id: a rotated key works once the provider serves it', async () => {
      const app = await env.start(oidcEnv());
      expect((await summary(app, await signToken(rsa, { issuer: provider.issuer }))).statusCode).toBe(200);
      expect(provider.fetches.jwks).toBe(1);
      const next = await signToken(rotated, { issuer: provider.issuer });
      expect(await refusal(app, next)).toMatch(/signing key \(kid\)/);
      expect(provider.fetches.jwks).toBe(2);
      provider.keys = [rotated];
      expect((await summary(app, next)).statusCode).toBe(200);
      expect(provider.fetches.jwks).toBe(3);
    });

    it('refetches at most once per OIDC_JWKS_REFRESH_MIN_MS, however many unknown key ids arrive', async () => {
      const app = await env.start(oidcEnv({ OIDC_JWKS_REFRESH_MIN_MS: '600000' }));
      expect((await summary(app, await signToken(rsa, { issuer: provider.issuer }))).statusCode).toBe(200);
      provider.keys = [rsa, rotated];
      for (let i = 0; i < 5; i++) {
        expect(await refusal(app, await signToken(rotated, { issuer: provider.issuer, kid: `made-up-${i}` }))).toMatch(/kid/);
      }
      expect(provider.fetches.jwks).toBe(1);
    });

    it('never opens the vendor paths or the admin API with a token', async () => {
      const app = await env.start(oidcEnv({ ADMIN_TOKEN: 'admin-token-for-the-oidc-tests-0123456789' }));
      const token = await signToken(rsa, { issuer: provider.issuer });
      for (const [url, code] of [
        ['/admin/v1/organizations', 'AdminUnauthorized'],
        ['/anomalydetector/v1.1/timeseries/last/detect', '401'],
      ] as const) {
        const response = await app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${token}` }, payload: {} });
        expect(response.statusCode, url).toBe(401);
        expect(response.json(), url).toMatchObject({ error: { code } });
      }
      // Neither path asked the provider anything.
      expect(provider.fetches).toEqual({ discovery: 0, jwks: 0 });
    });

    it('uses a token only from Authorization: Bearer; another key header present first wins', async () => {
      const app = await env.start(oidcEnv());
      const token = await signToken(rsa, { issuer: provider.issuer });
      const inHeader = await app.inject({ method: 'GET', url: '/v1/usage', headers: { 'x-service-key': token } });
      expect(inHeader.statusCode).toBe(401);
      expect(inHeader.json()).toMatchObject({ error: { code: '401' } });
    });

    it('without OIDC configuration a token is just an invalid key', async () => {
      const app = await env.start({ LOG_LEVEL: 'silent' });
      const response = await summary(app, await signToken(rsa, { issuer: provider.issuer }));
      expect(response.statusCode).toBe(401);
      expect(response.json()).toMatchObject({ error: { code: '401' } });
      expect(provider.fetches).toEqual({ discovery: 0, jwks: 0 });
    });

    it('reads OIDC_JWKS_URL instead of discovering it', async () => {
      const app = await env.start(oidcEnv({ OIDC_JWKS_URL: provider.jwksUrl }));
      expect((await summary(app, await signToken(ec, { issuer: provider.issuer }))).statusCode).toBe(200);
      expect(provider.fetches).toEqual({ discovery: 0, jwks: 1 });
    });

    it('answers 503 when the provider cannot be reached', async () => {
      const app = await env.start(oidcEnv({ OIDC_JWKS_URL: 'http://127.0.0.1:9/jwks' }));
      const down = await summary(app, await signToken(rsa, { issuer: provider.issuer }));
      expect(down.statusCode).toBe(503);
      expect(down.headers['retry-after']).toBeDefined();
      expect(down.json()).toMatchObject({ error: { code: 'ServiceUnavailable' } });
    });

    it('answers 503 while discovery names another issuer, and recovers', async () => {
      const token = await signToken(rsa, { issuer: provider.issuer });
      const lying = await env.start(oidcEnv());
      provider.discoveryIssuer = 'https://elsewhere.example.com';
      expect((await summary(lying, token)).statusCode).toBe(503);
      provider.discoveryIssuer = undefined;
      // Discovery is tried again (the refresh interval is 0 here) once the provider is right.
      expect((await summary(lying, token)).statusCode).toBe(200);
    });

    it('applies the per-organization rate limit to token callers', async () => {
      const app = await env.start(oidcEnv({ RATE_LIMIT_PER_MINUTE: '2' }));
      const token = await signToken(rsa, { issuer: provider.issuer });
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await summary(app, token, '/v1/usage')).statusCode);
      expect(statuses).toEqual([200, 200, 429]);
    });

    it('counts refused tokens as failed authentications of the address', async () => {
      const app = await env.start(oidcEnv({ AUTH_FAILURES_PER_MINUTE: '2' }));
      const bad = await signToken(rsa, { issuer: provider.issuer, audience: 'another-api' });
      expect((await summary(app, bad)).statusCode).toBe(401);
      expect((await summary(app, bad)).statusCode).toBe(401);
      const good = await signToken(rsa, { issuer: provider.issuer });
      expect((await summary(app, good)).statusCode).toBe(429);
    });

    it('works over a real socket', async () => {
      const app = await env.start(oidcEnv());
      const address = await app.listen({ port: 0, host: '127.0.0.1' });
      const response = await fetch(`${address}/v1/usage/summary`, {
        headers: { authorization: `Bearer ${await signToken(ec, { issuer: provider.issuer, subject: 'socket-user' })}` },
      });
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ org_id: 'org_default', subject: 'socket-user' });
      const refused = await fetch(`${address}/v1/usage`, {
        headers: { authorization: `Bearer ${await signToken(ec, { issuer: provider.issuer, expiresInS: -300 })}` },
      });
      expect(refused.status).toBe(401);
      expect(await refused.json()).toMatchObject({ error: { code: 'InvalidIdentityToken', message: 'The token has expired.' } });
    });
  });
}
