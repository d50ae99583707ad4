// Shared set-up for the native API tests: apps on a temporary DATA_DIR with a known key, one
// learned-model runtime per test file (loading the ONNX sessions is the slow part), and seeded
// synthetic machine data.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { loadPackagedModel, type NativeModel, type NativeModelFactory } from '../src/machines/model.js';
import { seededRandom } from '@adp/detection';

export const API_KEY = `svc_test_native${'0123456789abcdef'}`;

export interface NativeEnvironment {
  readonly dataDir: string;
  /** Builds an app on this DATA_DIR (closed by `cleanup`). */
  start(env?: Record<string, string>, model?: NativeModelFactory): Promise<FastifyInstance>;
  /** Closes one app early (to restart on the same DATA_DIR). */
  stop(app: FastifyInstance): Promise<void>;
  cleanup(): Promise<void>;
}

export async function nativeEnvironment(model: NativeModelFactory): Promise<NativeEnvironment> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-native-'));
  const apps = new Set<FastifyInstance>();
  return {
    dataDir,
    async start(env = {}, factory = model) {
      const config = loadConfig({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY: API_KEY, LOG_LEVEL: 'silent', ...env });
      const app = await buildApp(config, { model: factory });
      apps.add(app);
      return app;
    },
    async stop(app) {
      apps.delete(app);
      await app.close();
    },
    async cleanup() {
      await Promise.all([...apps].map((app) => app.close()));
      apps.clear();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * One real model runtime shared by the apps of a test file: the factory hands out a view whose
 * close() does nothing; `close` releases the runtime at the end of the file.
 */
export function sharedRealModel(): { factory: NativeModelFactory; loads: () => number; close: () => Promise<void> } {
  let model: Promise<NativeModel> | undefined;
  let loads = 0;
  return {
    factory: async () => {
      if (!model) {
        loads += 1;
        model = loadPackagedModel();
      }
      const loaded = await model;
      return { ...loaded, close: async () => undefined };
    },
    loads: () => loads,
    close: async () => {
      await (await model)?.close();
    },
  };
}

/** A model factory that must never be called (validation happens before the model loads). */
export const NO_MODEL: NativeModelFactory = () => Promise.reject(new Error('the model must not load for this request'));

export function headers(key = API_KEY): Record<string, string> {
  return { 'x-service-key': key, 'content-type': 'application/json' };
}

export function post(app: FastifyInstance, url: string, body: unknown, key = API_KEY): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'POST', url, headers: headers(key), payload: JSON.stringify(body) });
}

export function get(app: FastifyInstance, url: string, key = API_KEY): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'GET', url, headers: { 'x-service-key': key } });
}

export function del(app: FastifyInstance, url: string, key = API_KEY): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'DELETE', url, headers: { 'x-service-key': key } });
}


function gaussian(random: () => number): number {
  const u = Math.max(random(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

/**
 * A machine's healthy signal: a 48-point cycle with a harmonic, around 50, with small noise.
 * `offset` continues the same process (held-out data starts where the training data ended).
 */
export function machineSignal(length: number, seed: number, offset = 0): number[] {
  const random = seededRandom(seed);
  return Array.from({ length }, (_, i) => {
    const t = i + offset;
    return 50 + 8 * Math.sin((2 * Math.PI * t) / 48) + 3 * Math.sin((4 * Math.PI * t) / 48 + 1) + 0.4 * gaussian(random);
  });
}

export function points(values: readonly number[]): { value: number }[] {
  return values.map((value) => ({ value }));
}

export function mean(values: readonly number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / Math.max(1, values.length);
}
