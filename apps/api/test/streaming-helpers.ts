// Shared set-up for the streaming, rate-limit and invalidation tests: apps built with injected
// streaming pieces (bus, result store, notifier), replicas sharing one store, a second
// organization's key, and a fake learned model whose energies are known.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { openEmbeddedStore, type Store } from '@adp/store';
import { buildApp, type BuildAppOptions } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { NativeModelFactory } from '../src/machines/model.js';
import { describeApiKey } from '../src/tenancy/keys.js';
import { sharedStoreView } from './store-view.js';

export const API_KEY = 'svc_test_streaming0123456789ab';
export const OTHER_KEY = 'svc_test_secondOrganization000000';
export const OTHER_ORG = 'org_second';

export interface StreamingEnvironment {
  readonly dataDir: string;
  /** The store every replica shares (one DuckDB file allows one writer: replicas share the object). */
  readonly store: Store;
  /** Builds a replica on the shared store; closed by `cleanup`. */
  start(env?: Record<string, string>, options?: Omit<BuildAppOptions, 'store'>): Promise<FastifyInstance>;
  /** Creates the second organization and its key. */
  addOtherOrganization(): Promise<void>;
  cleanup(): Promise<void>;
}

export async function streamingEnvironment(): Promise<StreamingEnvironment> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-streaming-'));
  const store = await openEmbeddedStore({ dataDir });
  const apps: FastifyInstance[] = [];
  return {
    dataDir,
    store,
    async start(env = {}, options = {}) {
      const config = loadConfig({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY: API_KEY, LOG_LEVEL: 'silent', ...env });
      const app = await buildApp(config, { ...options, store: sharedStoreView(store) });
      apps.push(app);
      return app;
    },
    async addOtherOrganization() {
      await store.createOrganization(OTHER_ORG, 'Second organization');
      await store.createApiKey(OTHER_ORG, describeApiKey(OTHER_KEY));
    },
    async cleanup() {
      await Promise.all(apps.splice(0).map((app) => app.close()));
      await store.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export function post(app: FastifyInstance, url: string, body: unknown, key = API_KEY): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url,
    headers: { 'x-service-key': key, 'content-type': 'application/json' },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export function get(app: FastifyInstance, url: string, key = API_KEY): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'GET', url, headers: { 'x-service-key': key } });
}

/**
 * A learned model whose every energy is `energy` (no ONNX): detection with a baseline then gives
 * z = (energy - baseline mean) / baseline std, so a test can tell which baseline a replica used.
 */
export function constantEnergyModel(energy = 1): NativeModelFactory {
  return () =>
    Promise.resolve({
      modelVersion: 'fake-constant',
      energies: (values: ArrayLike<number>) =>
        Promise.resolve({
          energies: new Float64Array(values.length).fill(energy),
          embeddings: null,
          normalisation: { center: 0, scale: 1 },
        }),
      fineTune: () => Promise.reject(new Error('the fake model does not fine-tune')),
      close: () => Promise.resolve(),
    });
}

/** Polls until `condition` holds; `timeoutMs` only guards against a hang, it is no speed bound. */
export async function eventually(condition: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
