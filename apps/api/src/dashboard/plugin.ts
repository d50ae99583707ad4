// Serves the web dashboard at /dashboard/: public static files, built in memory by esbuild
// (@adp/web-bundle) from the DASHBOARD_DIR sources on the first request (no build step before
// `npm start`), kept for the process's life. The pages call the JSON API with the user's key; these routes need none and stay out of
// the OpenAPI document.
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { buildWebBundle, type WebBundle } from '@adp/web-bundle';
import { AppError, ERRORS } from '../errors.js';

export interface DashboardRoutesOptions {
  /** The dashboard's sources (DASHBOARD_DIR). */
  readonly webDir: string;
  /** Builds the bundle; tests pass a stand-in. Default: esbuild over `webDir`. */
  readonly build?: () => Promise<WebBundle>;
}

// The pages load only their own script and styles and talk only to this origin. uPlot sizes its
// elements through style attributes, hence 'unsafe-inline' for styles (never for scripts).
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
} as const;

const FILES = ['app.js', 'app.css'] as const;

export const dashboardRoutes: FastifyPluginAsync<DashboardRoutesOptions> = async (app, options) => {
  const build = options.build ?? (() => buildWebBundle(options.webDir));
  let bundle: Promise<WebBundle> | null = null;

  async function send(reply: FastifyReply, name: string): Promise<FastifyReply> {
    bundle ??= build();
    let assets: WebBundle;
    try {
      assets = await bundle;
    } catch (error) {
      // The next request tries again (a fixed checkout needs no restart).
      bundle = null;
      throw new AppError(ERRORS.DashboardUnavailable, 'The dashboard could not be built on this server; see its log.', { cause: error });
    }
    const asset = assets.get(name);
    if (!asset) throw new AppError(ERRORS.NotFound, `Route GET /dashboard/${name} not found`);
    return reply.headers(SECURITY_HEADERS).type(asset.contentType).send(asset.body);
  }

  const route = { config: { public: true }, schema: { hide: true } } as const;
  app.get('/dashboard', route, async (_request, reply) => reply.redirect('/dashboard/', 302));
  app.get('/dashboard/', route, async (_request, reply) => send(reply, 'index.html'));
  for (const name of FILES) app.get(`/dashboard/${name}`, route, async (_request, reply) => send(reply, name));
  // Browsers ask for it on every page: no icon, and no 401 in their consoles.
  app.get('/favicon.ico', route, async (_request, reply) => reply.code(204).send());
};
