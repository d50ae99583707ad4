// Wires dashboard sign-in into the app: the cookie parser (before the authentication hook, which
// reads the session cookie), the first account, the sessions and the sign-in routes. Without an
// account store (a stand-in store in tests) the dashboard has no sign-in and the cookie is ignored.
import cookie from '@fastify/cookie';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { Store } from '@adp/store';
import type { ApiConfig } from '../config.js';
import type { FailedAuthThrottle } from '../tenancy/rate-limit.js';
import { bootstrapAccount, type BootstrapAccount } from './accounts.js';
import { OidcSignIn } from './oidc-signin.js';
import { accountAdminRoutes, sessionRoutes } from './session-routes.js';
import { DashboardSessions } from './sessions.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The dashboard account created on THIS start (its password shown once), or null. */
    readonly bootstrapAccount: BootstrapAccount | null;
  }
}

export interface DashboardAuth {
  readonly sessions: DashboardSessions;
  /** The /dashboard/api/ routes. */
  readonly routes: FastifyPluginAsync;
  /** The admin API's account route, for the admin plugin's extensions. */
  readonly adminRoutes: FastifyPluginAsync;
}

export async function installDashboardAuth(
  app: FastifyInstance,
  config: ApiConfig,
  store: Store,
  failures: FailedAuthThrottle | null,
  nowMs: (() => number) | undefined,
): Promise<DashboardAuth | null> {
  await app.register(cookie);
  const accounts = store.accounts;
  if (!accounts) {
    app.decorate('bootstrapAccount', null);
    return null;
  }
  const defaultOrg = app.bootstrap.organizationId;
  app.decorate('bootstrapAccount', await bootstrapAccount(accounts, defaultOrg, config.dashboard.bootstrapAccountEmail, config.dataDir));
  const sessions = new DashboardSessions(accounts, store, config.dashboard, nowMs);
  const oidc = config.oidc && config.dashboard.oidcSignIn ? new OidcSignIn(config.oidc, config.dashboard.oidcSignIn, store) : null;
  const routes: FastifyPluginAsync = async (scope) => {
    await scope.register(sessionRoutes, { sessions, oidc, failures });
  };
  return { sessions, routes, adminRoutes: accountAdminRoutes(store) };
}
