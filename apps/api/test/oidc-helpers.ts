// A stand-in identity provider on loopback: an OIDC discovery document and a JWKS the test can
// rotate, with a count of fetches, plus tokens signed by its keys.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

export const AUDIENCE = 'adp-api-test';

export interface SigningKey {
  readonly kid: string;
  readonly alg: 'RS256' | 'ES256';
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
}

export async function signingKey(kid: string, alg: 'RS256' | 'ES256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg);
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

export interface FakeProvider {
  readonly issuer: string;
  readonly jwksUrl: string;
  /** Keys the JWKS serves now; replace to rotate. */
  keys: readonly SigningKey[];
  /** JWKS and discovery requests served so far. */
  readonly fetches: { jwks: number; discovery: number };
  /** The issuer the discovery document claims (default: the real one). */
  discoveryIssuer: string | undefined;
  close(): Promise<void>;
}

export async function startProvider(keys: readonly SigningKey[]): Promise<FakeProvider> {
  const fetches = { jwks: 0, discovery: 0 };
  const provider: FakeProvider = {
    issuer: '',
    jwksUrl: '',
    keys,
    fetches,
    discoveryIssuer: undefined,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((request, response) => {
    response.setHeader('content-type', 'application/json');
    if (request.url === '/.well-known/openid-configuration') {
      fetches.discovery++;
      response.end(JSON.stringify({ issuer: provider.discoveryIssuer ?? provider.issuer, jwks_uri: provider.jwksUrl }));
      return;
    }
    if (request.url === '/jwks') {
      fetches.jwks++;
      response.end(JSON.stringify({ keys: provider.keys.map((key) => key.publicJwk) }));
      return;
    }
    response.statusCode = 404;
    response.end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  Object.assign(provider, { issuer: `http://127.0.0.1:${port}`, jwksUrl: `http://127.0.0.1:${port}/jwks` });
  return provider;
}

export interface TokenOptions {
  readonly issuer: string;
  readonly audience?: string;
  /** The `sub`; null for none. Default `user-1`. */
  readonly subject?: string | null;
  readonly claims?: JWTPayload;
  /** Seconds from now; default 300. */
  readonly expiresInS?: number;
  /** Seconds from now. */
  readonly notBeforeInS?: number;
  /** Key id in the header instead of the key's own. */
  readonly kid?: string;
}

export async function signToken(key: SigningKey, options: TokenOptions): Promise<string> {
  const nowS = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({ org_id: 'org_default', ...options.claims })
    .setProtectedHeader({ alg: key.alg, kid: options.kid ?? key.kid, typ: 'JWT' })
    .setIssuer(options.issuer)
    .setAudience(options.audience ?? AUDIENCE)
    .setIssuedAt(nowS)
    .setExpirationTime(nowS + (options.expiresInS ?? 300));
  if (options.subject !== null) jwt.setSubject(options.subject ?? 'user-1');
  if (options.notBeforeInS !== undefined) jwt.setNotBefore(nowS + options.notBeforeInS);
  return jwt.sign(key.privateKey);
}

/** A token with `alg: none` and no signature, built by hand (jose will not make one). */
export function unsignedToken(payload: JWTPayload): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(payload)}.`;
}

/** A token signed with HMAC-SHA256 and a shared secret. */
export async function hmacToken(options: TokenOptions): Promise<string> {
  const nowS = Math.floor(Date.now() / 1000);
  return new SignJWT({ org_id: 'org_default' })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(options.issuer)
    .setAudience(AUDIENCE)
    .setSubject('user-1')
    .setExpirationTime(nowS + 300)
    .sign(new TextEncoder().encode('a shared secret of thirty-two bytes!'));
}
