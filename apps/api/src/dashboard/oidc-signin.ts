// Dashboard sign-in through the identity provider: the authorization code flow with PKCE (S256),
// a state and a nonce, through openid-client. The verifier, state and nonce wait in a short-lived
// HttpOnly cookie scoped to the callback's path; the callback exchanges the code, has the library
// verify the id_token (issuer, audience = OIDC_CLIENT_ID, signature, nonce), and resolves the
// organization from OIDC_ORG_CLAIM exactly as a bearer token's claim is (../tenancy/organizations.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import * as oidc from 'openid-client';
import type { Store } from '@adp/store';
import type { OidcConfig, OidcSignInConfig } from '../config.js';
import { AppError, ERRORS } from '../errors.js';
import { resolveOrganization } from '../tenancy/organizations.js';
import { ownOrigin } from './sessions.js';

export const OIDC_FLOW_COOKIE = 'adp_oidc_flow';
export const OIDC_CALLBACK_PATH = '/dashboard/api/oidc/callback';
/** How long the user may take at the provider, seconds. */
const FLOW_MAX_AGE_S = 600;
const FETCH_TIMEOUT_S = 5;

interface FlowState {
  readonly verifier: string;
  readonly state: string;
  readonly nonce: string;
}

/** Who signed in: the organization the claim names, the subject and a name to show. */
export interface OidcIdentity {
  readonly orgId: string;
  readonly subject: string;
  readonly displayName: string;
}

export class OidcSignIn {
  private configuration: Promise<oidc.Configuration> | undefined;

  constructor(
    private readonly provider: OidcConfig,
    private readonly client: OidcSignInConfig,
    private readonly store: Pick<Store, 'getOrganization' | 'findOrganizationByExternalId'>,
  ) {}

  /** Discovery, once; a failure is forgotten so the next sign-in tries again. */
  private discover(): Promise<oidc.Configuration> {
    const issuer = new URL(this.provider.issuer);
    const auth = this.client.clientSecret === undefined ? oidc.None() : oidc.ClientSecretBasic(this.client.clientSecret);
    // http is accepted for loopback issuers only (config.ts checks), as for the bearer tokens.
    const execute = issuer.protocol === 'http:' ? [oidc.allowInsecureRequests] : [];
    this.configuration ??= oidc.discovery(issuer, this.client.clientId, undefined, auth, { execute, timeout: FETCH_TIMEOUT_S }).catch((err: unknown) => {
      this.configuration = undefined;
      throw err;
    });
    return this.configuration;
  }

  private redirectUri(request: FastifyRequest): string {
    // Normalised as a URL (default port dropped): the token request repeats it from the callback's URL.
    return new URL(this.client.redirectUrl ?? `${ownOrigin(request)}${OIDC_CALLBACK_PATH}`).href;
  }

  /** Sends the browser to the provider's authorize endpoint. */
  async start(request: FastifyRequest, reply: FastifyReply, secure: boolean): Promise<FastifyReply> {
    let configuration: oidc.Configuration;
    try {
      configuration = await this.discover();
    } catch (cause) {
      request.log.warn({ err: cause }, 'OIDC discovery failed');
      throw new AppError(ERRORS.ServiceUnavailable, "The identity provider's configuration cannot be fetched right now. Retry shortly.", { cause });
    }
    const flow: FlowState = { verifier: oidc.randomPKCECodeVerifier(), state: oidc.randomState(), nonce: oidc.randomNonce() };
    const url = oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: this.redirectUri(request),
      scope: this.client.scopes,
      code_challenge: await oidc.calculatePKCECodeChallenge(flow.verifier),
      code_challenge_method: 'S256',
      state: flow.state,
      nonce: flow.nonce,
    });
    reply.setCookie(OIDC_FLOW_COOKIE, Buffer.from(JSON.stringify(flow), 'utf8').toString('base64url'), {
      path: OIDC_CALLBACK_PATH,
      httpOnly: true,
      // Lax: the provider's redirect back is a top-level GET navigation from another site.
      sameSite: 'lax',
      secure,
      maxAge: FLOW_MAX_AGE_S,
    });
    return reply.redirect(url.href, 302);
  }

  /** Completes the flow: the identity, or an OidcSignInFailed error saying why. */
  async finish(request: FastifyRequest, reply: FastifyReply, secure: boolean): Promise<OidcIdentity> {
    const flow = readFlow(request.cookies[OIDC_FLOW_COOKIE]);
    reply.clearCookie(OIDC_FLOW_COOKIE, { path: OIDC_CALLBACK_PATH, httpOnly: true, sameSite: 'lax', secure });
    if (flow === null) throw new AppError(ERRORS.OidcSignInFailed, 'The sign-in was not started here or took too long. Start again.');
    let configuration: oidc.Configuration;
    try {
      configuration = await this.discover();
    } catch (cause) {
      throw new AppError(ERRORS.ServiceUnavailable, "The identity provider's configuration cannot be fetched right now. Retry shortly.", { cause });
    }
    const callback = new URL(this.redirectUri(request));
    callback.search = new URL(request.url, ownOrigin(request)).search;
    let claims: oidc.IDToken | undefined;
    try {
      const tokens = await oidc.authorizationCodeGrant(configuration, callback, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      });
      claims = tokens.claims();
    } catch (cause) {
      request.log.info({ err: cause }, 'OIDC sign-in refused');
      throw new AppError(ERRORS.OidcSignInFailed, `The identity provider's answer was refused: ${describe(cause)}`, { cause });
    }
    if (claims === undefined) throw new AppError(ERRORS.OidcSignInFailed, 'The identity provider sent no id_token.');
    const orgClaim = claims[this.provider.orgClaim];
    if (typeof orgClaim !== 'string' || orgClaim.length === 0 || orgClaim.length > 256) {
      throw new AppError(ERRORS.OidcSignInFailed, `The id_token has no ${this.provider.orgClaim} claim naming an organization.`);
    }
    const organization = await resolveOrganization(this.store, orgClaim);
    if (organization === null) throw new AppError(ERRORS.OidcSignInFailed, `The id_token's ${this.provider.orgClaim} claim names no organization of this service.`);
    const email = typeof claims['email'] === 'string' ? claims['email'] : undefined;
    return { orgId: organization.id, subject: claims.sub, displayName: email ?? claims.sub };
  }
}

function readFlow(cookie: string | undefined): FlowState | null {
  if (cookie === undefined || cookie.length > 2048) return null;
  try {
    const parsed = JSON.parse(Buffer.from(cookie, 'base64url').toString('utf8')) as Record<string, unknown>;
    const { verifier, state, nonce } = parsed;
    if (typeof verifier !== 'string' || typeof state !== 'string' || typeof nonce !== 'string') return null;
    return { verifier, state, nonce };
  } catch {
    return null;
  }
}

/** The library's reason, for the user: its error codes and messages name the check that failed. */
function describe(error: unknown): string {
  if (error instanceof Error) {
    // A provider's error response carries its OAuth error code (invalid_grant, ...) apart from the message.
    const { code, error: oauthError } = error as { code?: unknown; error?: unknown };
    const prefix = typeof oauthError === 'string' ? `${oauthError}: ` : typeof code === 'string' ? `${code}: ` : '';
    return `${prefix}${error.message}`.slice(0, 300);
  }
  return 'unknown error';
}
