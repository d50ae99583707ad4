// A small identity provider on loopback for the dashboard's sign-in (authorization code + PKCE): a
// discovery document, an authorize endpoint that signs the user in at once and redirects back with
// a code, a token endpoint that checks the code, the redirect URI, the client and the PKCE verifier
// and issues an RS256 id_token, and the JWKS. What it was asked is kept for the test to inspect.
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, type JWTPayload } from 'jose';
import { signingKey, type SigningKey } from './oidc-helpers.js';

export interface LoginProvider {
  readonly issuer: string;
  readonly clientId: string;
  /** The claims the next id_token carries besides iss, aud, sub, nonce, iat and exp. */
  claims: JWTPayload;
  subject: string;
  /** When set, the token endpoint answers this error instead of tokens. */
  tokenError: string | null;
  /** The authorize requests' query parameters, in order. */
  readonly authorizeRequests: URLSearchParams[];
  /** The token requests' form bodies, in order. */
  readonly tokenRequests: URLSearchParams[];
  close(): Promise<void>;
}

interface Grant {
  readonly redirectUri: string;
  readonly challenge: string;
  readonly nonce: string | null;
}

async function body(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startLoginProvider(clientId = 'adp-dashboard'): Promise<LoginProvider> {
  const key: SigningKey = await signingKey('login-key', 'RS256');
  const grants = new Map<string, Grant>();
  const provider: LoginProvider = {
    issuer: '',
    clientId,
    claims: { org_id: 'org_default', email: 'sso-user@example.com' },
    subject: 'idp-user-1',
    tokenError: null,
    authorizeRequests: [],
    tokenRequests: [],
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const json = (response: ServerResponse, status: number, value: unknown): void => {
    response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    response.end(JSON.stringify(value));
  };
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', provider.issuer);
    if (url.pathname === '/.well-known/openid-configuration') {
      json(response, 200, {
        issuer: provider.issuer,
        authorization_endpoint: `${provider.issuer}/authorize`,
        token_endpoint: `${provider.issuer}/token`,
        jwks_uri: `${provider.issuer}/jwks`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['none'],
      });
      return;
    }
    if (url.pathname === '/jwks') {
      json(response, 200, { keys: [key.publicJwk] });
      return;
    }
    if (url.pathname === '/authorize') {
      const query = url.searchParams;
      provider.authorizeRequests.push(query);
      const redirectUri = query.get('redirect_uri') ?? '';
      const challenge = query.get('code_challenge');
      if (query.get('client_id') !== clientId || query.get('response_type') !== 'code' || challenge === null || query.get('code_challenge_method') !== 'S256') {
        json(response, 400, { error: 'invalid_request' });
        return;
      }
      const code = randomBytes(16).toString('hex');
      grants.set(code, { redirectUri, challenge, nonce: query.get('nonce') });
      const back = new URL(redirectUri);
      back.searchParams.set('code', code);
      const state = query.get('state');
      if (state !== null) back.searchParams.set('state', state);
      response.writeHead(302, { location: back.href });
      response.end();
      return;
    }
    if (url.pathname === '/token' && request.method === 'POST') {
      void body(request).then(async (text) => {
        const form = new URLSearchParams(text);
        provider.tokenRequests.push(form);
        const grant = grants.get(form.get('code') ?? '');
        grants.delete(form.get('code') ?? '');
        const verifier = form.get('code_verifier') ?? '';
        const challenge = createHash('sha256').update(verifier).digest('base64url');
        if (provider.tokenError !== null) {
          json(response, 400, { error: provider.tokenError });
          return;
        }
        if (!grant || grant.redirectUri !== form.get('redirect_uri') || form.get('client_id') !== clientId || grant.challenge !== challenge) {
          json(response, 400, { error: 'invalid_grant' });
          return;
        }
        const idToken = await new SignJWT({ ...provider.claims, ...(grant.nonce === null ? {} : { nonce: grant.nonce }) })
          .setProtectedHeader({ alg: key.alg, kid: key.kid })
          .setIssuer(provider.issuer)
          .setAudience(clientId)
          .setSubject(provider.subject)
          .setIssuedAt()
          .setExpirationTime('5m')
          .sign(key.privateKey);
        json(response, 200, { access_token: randomBytes(16).toString('hex'), token_type: 'Bearer', expires_in: 300, id_token: idToken });
      });
      return;
    }
    json(response, 404, { error: 'not_found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  Object.assign(provider, { issuer: `http://127.0.0.1:${port}` });
  return provider;
}
