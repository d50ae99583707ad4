// Dashboard sessions: a random 256-bit token in an HttpOnly, SameSite=Lax cookie (Secure except on
// plain http to a loopback host, SESSION_COOKIE_SECURE), stored server-side only as its SHA-256, so
// sign-out ends it on every replica and a copy of the store holds no usable session.
//
// The cookie authenticates /v1/ and the vendor paths (the dashboard's detect page calls the
// vendor's entire and changepoint routes), never /admin/. A state-changing call (anything but
// GET, HEAD, OPTIONS) with the cookie must also carry the session's CSRF token in X-CSRF-Token and,
// when the browser sends them, an Origin of this server and no `Sec-Fetch-Site: cross-site`. The
// CSRF token is a hash of the session token: the page reads it from GET /dashboard/api/session,
// which another origin cannot read (no CORS), and it says nothing about the token itself.
//
// A session stops working when it expires (SESSION_TTL_MS after sign-in), when it is signed out,
// and while its organization is disabled: each request reads the session and the organization.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type {} from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AccountStore, DashboardSession, SessionMethod, Store } from '@adp/store';
import type { DashboardAuthConfig } from '../config.js';
import { ERRORS } from '../errors.js';

export const SESSION_COOKIE = 'adp_session';
export const CSRF_HEADER = 'x-csrf-token';
const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

export function tokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** The CSRF token of the session whose cookie holds `token`. */
export function csrfTokenFor(token: string): string {
  return createHash('sha256').update(`csrf\0${token}`, 'utf8').digest('base64url');
}

export type SessionVerdict =
  | { readonly ok: true; readonly session: DashboardSession }
  | { readonly ok: false; readonly status: 401 | 403; readonly code: string; readonly message: string };

/** Opens, finds and ends dashboard sessions. One per app. */
export class DashboardSessions {
  constructor(
    readonly accounts: AccountStore,
    private readonly store: Pick<Store, 'getOrganization'>,
    readonly config: DashboardAuthConfig,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** A new session; the token goes in the cookie and nowhere else. */
  async open(orgId: string, subject: string, displayName: string, method: SessionMethod): Promise<{ token: string; session: DashboardSession }> {
    const token = randomBytes(32).toString('base64url');
    const now = this.nowMs();
    const session: DashboardSession = {
      tokenHash: tokenHash(token),
      orgId,
      subject,
      displayName: displayName.slice(0, 256),
      method,
      createdAt: new Date(now),
      expiresAt: new Date(now + this.config.sessionTtlMs),
    };
    await this.accounts.createSession(session);
    return { token, session };
  }

  /** The live session of this cookie value, or null (unknown, signed out, expired, organization disabled). */
  async find(token: string): Promise<DashboardSession | null> {
    if (!TOKEN.test(token)) return null;
    const session = await this.accounts.findSession(tokenHash(token));
    if (session === null) return null;
    if (session.expiresAt.getTime() <= this.nowMs()) {
      await this.accounts.deleteSession(session.tokenHash);
      return null;
    }
    const organization = await this.store.getOrganization(session.orgId);
    return organization !== null && organization.disabledAt === null ? session : null;
  }

  async close(token: string): Promise<void> {
    if (TOKEN.test(token)) await this.accounts.deleteSession(tokenHash(token));
  }

  /** Checks the cookie's session and, for a state-changing call, its CSRF token and origin. */
  async authenticate(request: FastifyRequest, token: string): Promise<SessionVerdict> {
    const session = await this.find(token);
    if (session === null) {
      return { ok: false, status: 401, code: ERRORS.InvalidSession.code, message: 'The dashboard session has expired or was signed out. Sign in again.' };
    }
    const csrf = checkCsrf(request, token);
    if (csrf !== null) return { ok: false, status: 403, code: ERRORS.CsrfRejected.code, message: csrf };
    return { ok: true, session };
  }

  setCookie(request: FastifyRequest, reply: FastifyReply, token: string): void {
    reply.setCookie(SESSION_COOKIE, token, {
      path: '/',
      httpOnly: true,
      sameSite: 'lax',
      secure: this.secure(request),
      maxAge: Math.floor(this.config.sessionTtlMs / 1000),
    });
  }

  clearCookie(request: FastifyRequest, reply: FastifyReply): void {
    reply.clearCookie(SESSION_COOKIE, { path: '/', httpOnly: true, sameSite: 'lax', secure: this.secure(request) });
  }

  /** Whether cookies set on this request get the Secure attribute. */
  secure(request: FastifyRequest): boolean {
    const mode = this.config.sessionCookieSecure;
    if (mode !== 'auto') return mode === 'true';
    return !(request.protocol === 'http' && LOOPBACK_HOSTS.has(request.hostname));
  }
}

/** The session cookie's value, if the request has one. */
export function sessionCookie(request: FastifyRequest): string | undefined {
  const value = request.cookies[SESSION_COOKIE];
  return value === undefined || value === '' ? undefined : value;
}

/** Whether the session cookie may authenticate this path: /v1/ and the vendor's, never /admin/. */
export function sessionPath(url: string): boolean {
  return url.startsWith('/v1/') || /^\/anomalydetector\//i.test(url);
}

/** This server's origin as the browser names it. */
export function ownOrigin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

/** Why a cookie-authenticated request is refused as cross-site, or null when it may proceed. */
export function checkOrigin(request: FastifyRequest): string | null {
  const fetchSite = request.headers['sec-fetch-site'];
  if (fetchSite === 'cross-site') return 'Cross-site requests may not use the dashboard session.';
  const origin = request.headers.origin;
  if (origin === undefined) return null;
  // The host only: behind a TLS-terminating proxy the browser's origin is https while the request
  // reaches us as http.
  let host: string | null;
  try {
    host = new URL(origin).host;
  } catch {
    host = null;
  }
  return host === request.host ? null : `Requests from ${origin.slice(0, 200)} may not use the dashboard session.`;
}

function checkCsrf(request: FastifyRequest, token: string): string | null {
  if (SAFE_METHODS.has(request.method)) return null;
  const origin = checkOrigin(request);
  if (origin !== null) return origin;
  const header = request.headers[CSRF_HEADER];
  const presented = Buffer.from(typeof header === 'string' ? header : '', 'utf8');
  const expected = Buffer.from(csrfTokenFor(token), 'utf8');
  if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
    return `A state-changing call with the dashboard session needs the session's ${CSRF_HEADER} header.`;
  }
  return null;
}
