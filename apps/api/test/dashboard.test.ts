import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyError } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dashboardRoutes } from '../src/dashboard/plugin.js';
import { AppError } from '../src/errors.js';
import { firstKey, testEnvironment, type TestEnvironment } from './platform-helpers.js';

describe('the dashboard routes in the app', () => {
  let env: TestEnvironment;
  beforeEach(async () => {
    env = await testEnvironment();
  });
  afterEach(async () => {
    await env.cleanup();
  });

  it('serves the page, its script and its styles without a key, built on the first request', async () => {
    const app = await env.start();
    const redirect = await app.inject({ method: 'GET', url: '/dashboard' });
    expect(redirect.statusCode).toBe(302);
    expect(redirect.headers.location).toBe('/dashboard/');

    const page = await app.inject({ method: 'GET', url: '/dashboard/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.body).toContain('<script type="module" src="app.js"></script>');

    const script = await app.inject({ method: 'GET', url: '/dashboard/app.js' });
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    // The bundle holds the pages and uPlot, not a reference to them.
    expect(script.body).toContain('X-CSRF-Token');
    expect(script.body).not.toMatch(/^import /m);

    const styles = await app.inject({ method: 'GET', url: '/dashboard/app.css' });
    expect(styles.statusCode).toBe(200);
    expect(styles.body).toContain('.uplot');
  });

  it('keeps the dashboard out of the OpenAPI document, and answers other paths under it 404', async () => {
    const app = await env.start();
    const document = (await app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, unknown> }>();
    expect(Object.keys(document.paths).filter((path) => path.startsWith('/dashboard'))).toEqual([]);
    // Like any unknown path: 401 without a key, 404 with one.
    expect((await app.inject({ method: 'GET', url: '/dashboard/secrets.txt' })).statusCode).toBe(401);
    const missing = await app.inject({ method: 'GET', url: '/dashboard/secrets.txt', headers: { 'x-service-key': firstKey(app) } });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ error: { code: 'NotFound', message: 'Route GET /dashboard/secrets.txt not found' } });
  });

  it('bundles the sources DASHBOARD_DIR names (by default the checkout\'s apps/dashboard/web), and answers 503 where it holds none', async () => {
    expect(env.config().dashboardDir).toBe(path.resolve(fileURLToPath(new URL('../../dashboard/web/', import.meta.url))));
    const empty = await mkdtemp(path.join(os.tmpdir(), 'adp-dashboard-'));
    try {
      const app = await env.start({ DASHBOARD_DIR: empty });
      const page = await app.inject({ method: 'GET', url: '/dashboard/' });
      expect(page.statusCode).toBe(503);
      expect(page.json()).toEqual({ error: { code: 'DashboardUnavailable', message: 'The dashboard could not be built on this server; see its log.' } });
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });

  it('answers a browser asking for /favicon.ico with no content and no key', async () => {
    const app = await env.start();
    const icon = await app.inject({ method: 'GET', url: '/favicon.ico' });
    expect(icon.statusCode).toBe(204);
    expect(icon.body).toBe('');
  });
});

describe('the dashboard plugin when the bundle cannot be built', () => {
  it('answers a coded 503 and builds again on the next request', async () => {
    let builds = 0;
    const app = Fastify();
    app.setErrorHandler((error: FastifyError, _request, reply) =>
      reply.code(error.statusCode ?? 500).send({ code: error instanceof AppError ? error.code : 'unexpected' }),
    );
    await app.register(dashboardRoutes, {
      webDir: '/nonexistent',
      build: async () => {
        builds += 1;
        if (builds === 1) throw new Error('esbuild: could not resolve "uplot"');
        return new Map([['index.html', { contentType: 'text/html; charset=utf-8', body: Buffer.from('<p>ok</p>') }]]);
      },
    });
    const failed = await app.inject({ method: 'GET', url: '/dashboard/' });
    expect(failed.statusCode).toBe(503);
    expect(failed.json()).toEqual({ code: 'DashboardUnavailable' });
    const retried = await app.inject({ method: 'GET', url: '/dashboard/' });
    expect(retried.statusCode).toBe(200);
    expect(retried.body).toBe('<p>ok</p>');
    expect(builds).toBe(2);
    await app.close();
  });
});
