// Identity-provider tokens: `Authorization: Bearer <JWT>` on the `/v1/` routes, verified against
// the provider's published keys (JWKS) with `jose`. Only asymmetric signatures are accepted: an
// HMAC token would be signed with a secret the provider shares with its clients, and `alg: none`
// is not signed at all. A token names its organization in OIDC_ORG_CLAIM; `resolveOrganization`
// decides which organization that is (./organizations.ts).
//
// Keys: fetched on the first token (after discovery when OIDC_JWKS_URL is unset), kept for 10
// minutes, and fetched again when a token names a key id the set does not hold (a rotation), at
// most once per OIDC_JWKS_REFRESH_MIN_MS, so a flood of tokens with made-up key ids costs the
// provider one request per interval. A provider that cannot be reached makes the answer a 503,
// never a 401 that would tell a client its valid token is wrong.
import {
  createRemoteJWKSet,
  decodeProtectedHeader,
  errors,
  jwtVerify,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import type { Store } from '@adp/store';
import type { OidcConfig } from '../config.js';
import { resolveOrganization } from './organizations.js';

/** Signature algorithms a token may use: public-key ones only. */
export const ACCEPTED_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'] as const;

/** Longest token looked at; larger ones are refused unread. */
const MAX_TOKEN_LENGTH = 16 * 1024;
/** Three base64url parts; an API key (`svc_...`) never has a dot. */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
/** Longest `sub` and organization claim accepted (they are stored in the audit log). */
const MAX_CLAIM_LENGTH = 256;
/** How long a fetch of the discovery document or the key set may take, ms. */
const FETCH_TIMEOUT_MS = 5_000;
/** Age at which the key set is fetched again even without an unknown key id, ms. */
const JWKS_MAX_AGE_MS = 10 * 60_000;

/** Whether `credential` has a JWT's shape (and is not an API key). */
export function looksLikeJwt(credential: string): boolean {
  return credential.length <= MAX_TOKEN_LENGTH && JWT_SHAPE.test(credential);
}

/** A verified token: who signed in and the raw organization claim. */
export interface VerifiedToken {
  readonly subject: string;
  readonly orgClaim: string;
}

/**
 * A refused token (`status: 401`, `reason` safe to show the client) or a provider that could not
 * be reached (`status: 503`).
 */
export interface TokenRefusal {
  readonly status: 401 | 503;
  readonly reason: string;
}

export type TokenVerdict = { readonly ok: true; readonly token: VerifiedToken } | ({ readonly ok: false } & TokenRefusal);

const refuse = (reason: string): TokenVerdict => ({ ok: false, status: 401, reason });
const unavailable = (reason: string): TokenVerdict => ({ ok: false, status: 503, reason });

/** Verifies identity-provider tokens against one issuer's keys. One per app. */
export class IdentityTokenVerifier {
  private keys: JWTVerifyGetKey | undefined;
  private discovery: Promise<JWTVerifyGetKey> | undefined;
  /** When discovery last failed (epoch ms): retried only after jwksRefreshMinMs. */
  private discoveryFailedAtMs = Number.NEGATIVE_INFINITY;
  /** Told why the provider could not be reached (for the log; never sent to the client). */
  onProviderError: (err: unknown) => void = () => undefined;

  constructor(private readonly config: OidcConfig) {}

  async verify(token: string): Promise<TokenVerdict> {
    if (!looksLikeJwt(token)) return refuse('The bearer token is not a well-formed JWT.');
    let algorithm: unknown;
    try {
      algorithm = decodeProtectedHeader(token).alg;
    } catch {
      return refuse('The bearer token is not a well-formed JWT.');
    }
    // Named here rather than left to jose so the client learns why, not just that it failed.
    if (typeof algorithm !== 'string' || algorithm.toLowerCase() === 'none') {
      return refuse('Unsigned tokens (alg "none") are not accepted.');
    }
    if (/^HS\d+$/i.test(algorithm)) {
      return refuse('Tokens signed with a shared secret (HMAC) are not accepted; the provider must sign with a private key.');
    }
    if (!(ACCEPTED_ALGORITHMS as readonly string[]).includes(algorithm)) {
      return refuse(`Tokens signed with this algorithm are not accepted (accepted: ${ACCEPTED_ALGORITHMS.join(', ')}).`);
    }
    let keys: JWTVerifyGetKey;
    try {
      keys = await this.keySet();
    } catch (err) {
      this.onProviderError(err);
      return unavailable("The identity provider's configuration cannot be fetched right now. Retry shortly.");
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys, {
        issuer: this.config.issuer,
        audience: this.config.audience,
        algorithms: [...ACCEPTED_ALGORITHMS],
        clockTolerance: this.config.clockToleranceS,
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (err) {
      return this.explain(err);
    }
    const subject = payload.sub;
    if (typeof subject !== 'string' || subject.length === 0 || subject.length > MAX_CLAIM_LENGTH) {
      return refuse(`The token's subject (sub) must be a string of 1 to ${MAX_CLAIM_LENGTH} characters.`);
    }
    const orgClaim = payload[this.config.orgClaim];
    if (typeof orgClaim !== 'string' || orgClaim.length === 0 || orgClaim.length > MAX_CLAIM_LENGTH) {
      return refuse(`The token has no ${this.config.orgClaim} claim naming an organization.`);
    }
    return { ok: true, token: { subject, orgClaim } };
  }

  /** The refusal for a failed verification; a provider that could not be reached is a 503. */
  private explain(err: unknown): TokenVerdict {
    if (err instanceof errors.JWTExpired) return refuse('The token has expired.');
    if (err instanceof errors.JWTClaimValidationFailed) {
      if (err.claim === 'nbf') return refuse('The token is not valid yet (nbf is in the future).');
      if (err.claim === 'iat') return refuse('The token was issued in the future (iat).');
      if (err.claim === 'iss') return refuse('The token was issued by another issuer than this service trusts.');
      if (err.claim === 'aud') return refuse('The token is meant for another audience than this service.');
      if (err.reason === 'missing') return refuse(`The token has no ${err.claim} claim.`);
      return refuse(`The token's ${err.claim} claim is invalid.`);
    }
    if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) {
      return refuse("The token's signing key (kid) is not one of the identity provider's keys.");
    }
    if (err instanceof errors.JWSSignatureVerificationFailed) return refuse("The token's signature does not verify.");
    if (err instanceof errors.JOSEAlgNotAllowed) return refuse("The token's signing algorithm is not accepted.");
    if (
      err instanceof errors.JWSInvalid ||
      err instanceof errors.JWTInvalid ||
      err instanceof errors.JOSENotSupported ||
      err instanceof errors.JWKInvalid
    ) {
      return refuse('The bearer token is not a valid JWT.');
    }
    // A fetch that failed, timed out or brought back no key set.
    this.onProviderError(err);
    return unavailable("The identity provider's keys cannot be fetched right now. Retry shortly.");
  }

  /** The remote key set, discovering its URL first when OIDC_JWKS_URL is unset. */
  private keySet(): Promise<JWTVerifyGetKey> {
    if (this.keys) return Promise.resolve(this.keys);
    if (this.config.jwksUrl !== undefined) {
      this.keys = this.remote(new URL(this.config.jwksUrl));
      return Promise.resolve(this.keys);
    }
    if (this.discovery) return this.discovery;
    if (Date.now() - this.discoveryFailedAtMs < this.config.jwksRefreshMinMs) {
      return Promise.reject(new Error('OIDC discovery failed moments ago; not asking again yet'));
    }
    const discovery = this.discover().then(
      (url) => {
        this.keys = this.remote(url);
        return this.keys;
      },
      (err: unknown) => {
        this.discoveryFailedAtMs = Date.now();
        this.discovery = undefined;
        throw err;
      },
    );
    this.discovery = discovery;
    return discovery;
  }

  /** `jwks_uri` of `<issuer>/.well-known/openid-configuration`, whose `issuer` must be ours. */
  private async discover(): Promise<URL> {
    const base = this.config.issuer.endsWith('/') ? this.config.issuer : `${this.config.issuer}/`;
    const response = await fetch(new URL('.well-known/openid-configuration', base), {
      redirect: 'manual',
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    });
    if (response.status !== 200) throw new Error(`OIDC discovery answered HTTP ${response.status}`);
    const document = (await response.json()) as { issuer?: unknown; jwks_uri?: unknown };
    if (document.issuer !== this.config.issuer) throw new Error('OIDC discovery names another issuer');
    if (typeof document.jwks_uri !== 'string') throw new Error('OIDC discovery has no jwks_uri');
    const url = new URL(document.jwks_uri);
    const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
      throw new Error('OIDC discovery jwks_uri is not an https URL');
    }
    return url;
  }

  private remote(url: URL): JWTVerifyGetKey {
    return createRemoteJWKSet(url, {
      timeoutDuration: FETCH_TIMEOUT_MS,
      cooldownDuration: this.config.jwksRefreshMinMs,
      cacheMaxAge: JWKS_MAX_AGE_MS,
    });
  }
}

/** A caller signed in with a token: their organization and subject, or why not. */
export type TokenSignIn =
  | { readonly ok: true; readonly orgId: string; readonly subject: string }
  | ({ readonly ok: false } & TokenRefusal);

/** Verifies `token` and finds the organization it names (`resolveOrganization`). */
export async function signInWithToken(
  verifier: IdentityTokenVerifier,
  store: Pick<Store, 'getOrganization' | 'findOrganizationByExternalId'>,
  orgClaimName: string,
  token: string,
): Promise<TokenSignIn> {
  const verdict = await verifier.verify(token);
  if (!verdict.ok) return verdict;
  let organization;
  try {
    organization = await resolveOrganization(store, verdict.token.orgClaim);
  } catch (err) {
    verifier.onProviderError(err);
    return { ok: false, status: 503, reason: 'The service cannot check organizations right now. Retry shortly.' };
  }
  if (!organization) {
    return { ok: false, status: 401, reason: `The token's ${orgClaimName} claim names no organization of this service.` };
  }
  return { ok: true, orgId: organization.id, subject: verdict.token.subject };
}
