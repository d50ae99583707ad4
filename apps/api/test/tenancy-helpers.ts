// Set-up for the key-management, admin and quota tests: one embedded store (with a clock the test
// moves) shared by any number of apps (replicas), an in-process notifier between them, and the same
// clock for the apps' key expiry and quota months.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { openEmbeddedStore, type Store } from '@adp/store';
import { createMemoryNotifier, type Notifier } from '@adp/streaming';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { sharedStoreView } from './store-view.js';

export const ADMIN_TOKEN = 'admin-token-for-tests-0123456789abcdef';

export interface TenancyEnvironment {
  readonly store: Store;
  readonly notifier: Notifier;
  /** The clock of the store and the apps, epoch ms; tests move it. */
  nowMs: number;
  /** A replica on the shared store; closed by `cleanup`. The first one bootstraps the default organization. */
  start(env?: Record<string, string>): Promise<FastifyInstance>;
  cleanup(): Promise<void>;
}

export async function tenancyEnvironment(startMs = Date.parse('2026-03-15T12:00:00.000Z')): Promise<TenancyEnvironment> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-tenancy-'));
  const apps: FastifyInstance[] = [];
  const environment: TenancyEnvironment = {
    store: undefined as unknown as Store,
    notifier: createMemoryNotifier(),
    nowMs: startMs,
    async start(env = {}) {
      const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', ADMIN_TOKEN, ...env });
      const app = await buildApp(config, {
        store: sharedStoreView(environment.store),
        notifier: environment.notifier,
        nowMs: () => environment.nowMs,
      });
      apps.push(app);
      return app;
    },
    async cleanup() {
      await Promise.all(apps.splice(0).map((app) => app.close()));
      await environment.store.close();
      await environment.notifier.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  (environment as { store: Store }).store = await openEmbeddedStore({ dataDir, now: () => new Date(environment.nowMs) });
  return environment;
}

export function call(
  app: FastifyInstance,
  method: 'GET' | 'POST' | 'DELETE',
  url: string,
  key: string | undefined,
  body?: unknown,
): Promise<LightMyRequestResponse> {
  return app.inject({
    method,
    url,
    headers: {
      ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

/** Polls `condition` until it holds; fails after `timeoutMs`. */
export async function eventually(condition: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
