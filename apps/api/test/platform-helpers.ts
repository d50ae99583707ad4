// Shared set-up for the platform and tenancy tests: a fresh DATA_DIR per test and apps built on it.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Store } from '@adp/store';
import { buildApp } from '../src/app.js';
import { loadConfig, type ApiConfig } from '../src/config.js';

export interface TestEnvironment {
  readonly dataDir: string;
  config(env?: Record<string, string>): ApiConfig;
  /** Builds an app on this DATA_DIR; closed automatically by `cleanup`. */
  start(env?: Record<string, string>, options?: { store?: Store }): Promise<FastifyInstance>;
  cleanup(): Promise<void>;
}

export async function testEnvironment(): Promise<TestEnvironment> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-api-'));
  const apps: FastifyInstance[] = [];
  const config = (env: Record<string, string> = {}): ApiConfig => loadConfig({ DATA_DIR: dataDir, ...env });
  return {
    dataDir,
    config,
    async start(env = {}, options = {}) {
      const app = await buildApp(config(env), options.store ? { store: options.store } : {});
      apps.push(app);
      return app;
    },
    async cleanup() {
      await Promise.all(apps.splice(0).map((app) => app.close()));
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The plaintext test key created on this app's first start. */
export function firstKey(app: FastifyInstance, kind: 'test' | 'live' = 'test'): string {
  const issued = app.bootstrap.createdKeys.find((key) => key.kind === kind);
  if (!issued) throw new Error(`no ${kind} key was created on this start`);
  return issued.key;
}

/** Polls `condition` until it holds; `timeoutMs` only guards against a hang, it is no speed bound. */
export async function waitFor(condition: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
