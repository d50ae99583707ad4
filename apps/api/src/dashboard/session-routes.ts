// The dashboard's sign-in routes under /dashboard/api/ (public: they authenticate themselves), and
// the admin API's account route. Sign-in failures count toward the same per-address throttle as
// bad API keys (AUTH_FAILURES_PER_MINUTE); a throttled address gets 429 with Retry-After.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { MAX_EMAIL_LENGTH, type DashboardSession, type Store } from '@adp/store';
import { AppError, ERRORS } from '../errors.js';
import { audit } from '../tenancy/audit.js';
import { ErrorBody } from '../tenancy/key-schemas.js';
import type { FailedAuthThrottle } from '../tenancy/rate-limit.js';
import { PASSWORD_MAX_LENGTH, checkPassword, createAccount } from './accounts.js';
import type { OidcSignIn } from './oidc-signin.js';
import { checkOrigin, csrfTokenFor, sessionCookie, type DashboardSessions } from './sessions.js';

export interface SessionRoutesOptions {
  readonly sessions: DashboardSessions;
  readonly oidc: OidcSignIn | null;
  readonly failures: FailedAuthThrottle | null;
}

const SessionView = Type.Object({
  signed_in: Type.Boolean(),
  /** Whether "Sign in with the identity provider" is offered. */
  oidc: Type.Boolean(),
  org_id: Type.Optional(Type.String()),
  name: Type.Optional(Type.String({ description: 'The email of a local account, or the provider\'s email or subject.' })),
  method: Type.Optional(Type.Union([Type.Literal('password'), Type.Literal('oidc')])),
  expires_at: Type.Optional(Type.String({ format: 'date-time' })),
  csrf_token: Type.Optional(Type.String({ description: 'Send as X-CSRF-Token on every state-changing call made with the session.' })),
});

const LoginBody = Type.Object(
  { email: Type.String({ minLength: 1, maxLength: MAX_EMAIL_LENGTH }), password: Type.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH }) },
  { additionalProperties: false },
);

function sendError(reply: FastifyReply, statusCode: number, code: string, message: string): FastifyReply {
  return reply.code(statusCode).type('application/json; charset=utf-8').send(JSON.stringify({ error: { code, message } }));
}

export const sessionRoutes: FastifyPluginAsyncTypebox<SessionRoutesOptions> = async (app, options) => {
  const { sessions, oidc, failures } = options;
  const config = { public: true } as const;
  const hide = true;

  function view(session: DashboardSession, token: string) {
    return {
      signed_in: true,
      oidc: oidc !== null,
      org_id: session.orgId,
      name: session.displayName,
      method: session.method,
      expires_at: session.expiresAt.toISOString(),
      csrf_token: csrfTokenFor(token),
    };
  }

  /** Refuses a throttled address; returns the reply sent, or null to go on. */
  function throttled(request: FastifyRequest, reply: FastifyReply): FastifyReply | null {
    const blockedMs = failures?.blockedForMs(request.ip) ?? 0;
    if (blockedMs === 0) return null;
    const retryAfterS = Math.max(1, Math.ceil(blockedMs / 1000));
    reply.header('retry-after', String(retryAfterS));
    return sendError(reply, 429, ERRORS.AuthenticationThrottled.code, `Too many failed sign-ins from this address. Retry after ${retryAfterS} s.`);
  }

  app.get('/dashboard/api/session', { config, schema: { hide, response: { 200: SessionView } } }, async (request) => {
    const token = sessionCookie(request);
    const session = token === undefined ? null : await sessions.find(token);
    if (token === undefined || session === null) return { signed_in: false, oidc: oidc !== null };
    return view(session, token);
  });

  app.post(
    '/dashboard/api/login',
    { config, schema: { hide, body: LoginBody, response: { 200: SessionView, 401: ErrorBody, 403: ErrorBody, 429: ErrorBody, 503: ErrorBody } } },
    async (request, reply) => {
      // A login form posted from another site would sign the victim into the attacker's account.
      const origin = checkOrigin(request);
      if (origin !== null) return sendError(reply, 403, ERRORS.CsrfRejected.code, origin);
      const refused = throttled(request, reply);
      if (refused) return refused;
      const user = await checkPassword(sessions.accounts, request.body.email, request.body.password);
      const organization = user === null ? null : await request.server.store.getOrganization(user.orgId);
      if (user === null || organization === null || organization.disabledAt !== null) {
        failures?.recordFailure(request.ip);
        request.log.info({ code: ERRORS.InvalidCredentials.code }, 'dashboard sign-in refused');
        const message = user === null ? 'The email or the password is wrong.' : "This account's organization is disabled.";
        return sendError(reply, 401, ERRORS.InvalidCredentials.code, message);
      }
      const { token, session } = await sessions.open(user.orgId, user.userId, user.email, 'password');
      sessions.setCookie(request, reply, token);
      await audit(request, 'session.created', `user:${user.userId}`, { orgId: user.orgId, actor: { kind: 'jwt', id: user.userId } });
      return view(session, token);
    },
  );

  app.post('/dashboard/api/logout', { config, schema: { hide, response: { 204: Type.Null(), 403: ErrorBody } } }, async (request, reply) => {
    const origin = checkOrigin(request);
    if (origin !== null) return sendError(reply, 403, ERRORS.CsrfRejected.code, origin);
    const token = sessionCookie(request);
    if (token !== undefined) await sessions.close(token);
    sessions.clearCookie(request, reply);
    return reply.code(204).send(null);
  });

  app.get('/dashboard/api/oidc/start', { config, schema: { hide } }, async (request, reply) => {
    if (oidc === null) throw new AppError(ERRORS.OidcSignInFailed, 'Sign-in through an identity provider is not configured (OIDC_CLIENT_ID).');
    return oidc.start(request, reply, sessions.secure(request));
  });

  app.get('/dashboard/api/oidc/callback', { config, schema: { hide } }, async (request, reply) => {
    if (oidc === null) throw new AppError(ERRORS.OidcSignInFailed, 'Sign-in through an identity provider is not configured (OIDC_CLIENT_ID).');
    const refused = throttled(request, reply);
    if (refused) return refused;
    let identity;
    try {
      identity = await oidc.finish(request, reply, sessions.secure(request));
    } catch (err) {
      if (err instanceof AppError && err.code === ERRORS.OidcSignInFailed.code) failures?.recordFailure(request.ip);
      throw err;
    }
    const { token } = await sessions.open(identity.orgId, identity.subject, identity.displayName, 'oidc');
    sessions.setCookie(request, reply, token);
    await audit(request, 'session.created', `subject:${identity.subject}`, { orgId: identity.orgId, actor: { kind: 'jwt', id: identity.subject } });
    return reply.redirect('/dashboard/', 302);
  });
};

const OrgParams = Type.Object({ org_id: Type.String({ maxLength: 128 }) });
const CreateUserBody = Type.Object(
  {
    email: Type.String({ minLength: 1, maxLength: MAX_EMAIL_LENGTH }),
    password: Type.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH, description: '12 to 256 characters.' }),
  },
  { additionalProperties: false },
);
const UserView = Type.Object({ user_id: Type.String(), org_id: Type.String(), email: Type.String(), created_at: Type.String({ format: 'date-time' }) });

/** `POST /admin/v1/organizations/{org_id}/users`: a dashboard account; registered behind the admin token. */
export function accountAdminRoutes(store: Store): FastifyPluginAsync {
  const plugin: FastifyPluginAsyncTypebox = async (app) => {
    app.post(
      '/admin/v1/organizations/:org_id/users',
      {
        config: { public: true },
        schema: {
          summary: 'Create a dashboard account (email and password) in an organization',
          tags: ['admin'],
          security: [{ adminToken: [] }],
          params: OrgParams,
          body: CreateUserBody,
          response: { 201: UserView, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody, 503: ErrorBody },
        },
      },
      async (request, reply) => {
        const orgId = request.params.org_id;
        const organization = await store.getOrganization(orgId);
        if (!organization) throw new AppError(ERRORS.OrganizationNotFound, `No organization ${JSON.stringify(orgId)}.`);
        if (organization.disabledAt !== null) throw new AppError(ERRORS.OrganizationDisabled, `Organization ${JSON.stringify(orgId)} is disabled.`);
        if (!store.accounts) throw new AppError(ERRORS.ServiceUnavailable, 'This store keeps no dashboard accounts.');
        const user = await createAccount(store.accounts, orgId, request.body.email, request.body.password);
        await audit(request, 'user.created', `user:${user.userId}`, { orgId, actor: { kind: 'admin', id: 'admin' } });
        return reply.code(201).send({ user_id: user.userId, org_id: user.orgId, email: user.email, created_at: user.createdAt.toISOString() });
      },
    );
  };
  return plugin as FastifyPluginAsync;
}
