import { readFile, readdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DuckDBInstance } from '@duckdb/node-api';
import { EMBEDDED_STORE_FILE_NAME } from '@adp/store';
import { buildApp } from '../src/app.js';
import { BOOTSTRAP_KEYS_FILE_NAME } from '../src/tenancy/bootstrap.js';
import { apiKeyKind, describeApiKey, generateApiKey, hashApiKey } from '../src/tenancy/keys.js';
import { testEnvironment, type TestEnvironment } from './platform-helpers.js';

const GENERATED_KEY = /^svc_(test|live)_[A-Za-z0-9_-]{32}$/;
const CONFIGURED_KEY = 'svc_live_fromTheEnvironment_0123456789';

describe('first-start bootstrap', () => {
  let env: TestEnvironment;
  const status = async (app: Awaited<ReturnType<TestEnvironment['start']>>, key: string) =>
    (await app.inject({ method: 'GET', url: '/v1/usage', headers: { 'x-service-key': key } })).statusCode;

  beforeEach(async () => {
    env = await testEnvironment();
  });
  afterEach(async () => {
    await env.cleanup();
  });

  it('creates one test and one live key and saves them in a 0600 file', async () => {
    const app = await env.start();
    const { createdKeys, keysFile } = app.bootstrap;
    expect(createdKeys.map((issued) => issued.kind)).toEqual(['test', 'live']);
    for (const issued of createdKeys) {
      expect(issued.key).toMatch(GENERATED_KEY);
      expect(issued.key.startsWith(`svc_${issued.kind}_`)).toBe(true);
      expect(issued.prefix).toBe(issued.key.slice(0, 13));
      expect(await status(app, issued.key)).toBe(200);
    }
    expect(keysFile).toBe(path.join(env.dataDir, BOOTSTRAP_KEYS_FILE_NAME));
    expect((await stat(keysFile ?? '')).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(await readFile(keysFile ?? '', 'utf8')) as { organizationId: string; keys: { kind: string; key: string }[] };
    expect(saved.organizationId).toBe(app.bootstrap.organizationId);
    expect(saved.keys).toEqual(createdKeys.map((issued) => ({ kind: issued.kind, key: issued.key })));
  });

  it('creates nothing on a restart, and the first keys keep working', async () => {
    const first = await env.start();
    const keys = first.bootstrap.createdKeys.map((issued) => issued.key);
    const fileBefore = await readFile(path.join(env.dataDir, BOOTSTRAP_KEYS_FILE_NAME), 'utf8');
    await first.close();

    const second = await env.start();
    expect(second.bootstrap.createdKeys).toEqual([]);
    expect(second.bootstrap.keysFile).toBeNull();
    // The file is still there, so this start names it (server.ts prints it).
    expect(second.bootstrap.earlierKeysFile).toBe(path.join(env.dataDir, BOOTSTRAP_KEYS_FILE_NAME));
    for (const key of keys) expect(await status(second, key)).toBe(200);
    expect(await second.store.listApiKeys(second.bootstrap.organizationId)).toHaveLength(2);
    expect(await readFile(path.join(env.dataDir, BOOTSTRAP_KEYS_FILE_NAME), 'utf8')).toBe(fileBefore);
  });

  it('creates the directory when DATA_DIR does not exist yet', async () => {
    const nested = path.join(env.dataDir, 'deeper', 'still');
    const app = await buildApp(env.config({ DATA_DIR: nested }));
    try {
      expect(app.bootstrap.keysFile).toBe(path.join(nested, BOOTSTRAP_KEYS_FILE_NAME));
      expect(await readdir(nested)).toEqual(expect.arrayContaining([EMBEDDED_STORE_FILE_NAME, BOOTSTRAP_KEYS_FILE_NAME]));
    } finally {
      await app.close();
    }
  });

  it('names no keys file once it is deleted, and before the first start wrote one', async () => {
    const first = await env.start();
    expect(first.bootstrap.earlierKeysFile).toBeNull();
    await first.close();
    const { rm } = await import('node:fs/promises');
    await rm(path.join(env.dataDir, BOOTSTRAP_KEYS_FILE_NAME));
    const second = await env.start();
    expect(second.bootstrap.earlierKeysFile).toBeNull();
  });

  it('creates BOOTSTRAP_API_KEY once, with the kind of its prefix, instead of a generated pair on the first start', async () => {
    const first = await env.start({ BOOTSTRAP_API_KEY: CONFIGURED_KEY });
    expect(first.bootstrap.configuredKey).toMatchObject({ kind: 'live', created: true, revoked: false });
    expect(first.bootstrap.createdKeys).toEqual([]);
    expect(first.bootstrap.keysFile).toBeNull();
    expect(await readdir(env.dataDir)).not.toContain(BOOTSTRAP_KEYS_FILE_NAME);
    expect(await first.store.listApiKeys(first.bootstrap.organizationId)).toHaveLength(1);
    expect(await status(first, CONFIGURED_KEY)).toBe(200);
    const keyId = first.bootstrap.configuredKey?.keyId;
    await first.close();

    const second = await env.start({ BOOTSTRAP_API_KEY: CONFIGURED_KEY });
    expect(second.bootstrap.configuredKey).toEqual({ keyId, kind: 'live', created: false, revoked: false });
    expect(second.bootstrap.createdKeys).toEqual([]);
    expect(await status(second, CONFIGURED_KEY)).toBe(200);
    const keys = await second.store.listApiKeys(second.bootstrap.organizationId);
    expect(keys).toHaveLength(1);
    expect(keys.filter((key) => key.keyHash === hashApiKey(CONFIGURED_KEY))).toHaveLength(1);
    await second.close();

    // The organization counts as bootstrapped: a start without the variable generates nothing either.
    const third = await env.start();
    expect(third.bootstrap.createdKeys).toEqual([]);
    expect(await third.store.listApiKeys(third.bootstrap.organizationId)).toHaveLength(1);
  });

  it('adds BOOTSTRAP_API_KEY on a later start and leaves a revoked one revoked', async () => {
    const first = await env.start();
    await first.close();
    const second = await env.start({ BOOTSTRAP_API_KEY: 'svc_test_addedLater_000000' });
    expect(second.bootstrap.configuredKey).toMatchObject({ kind: 'test', created: true });
    await second.store.revokeApiKey(second.bootstrap.configuredKey?.keyId ?? '');
    await second.close();

    const third = await env.start({ BOOTSTRAP_API_KEY: 'svc_test_addedLater_000000' });
    expect(third.bootstrap.configuredKey).toMatchObject({ created: false, revoked: true });
    expect(await status(third, 'svc_test_addedLater_000000')).toBe(401);
  });

  it('stores keys only as hashes', async () => {
    const app = await env.start({ BOOTSTRAP_API_KEY: CONFIGURED_KEY });
    const plaintexts = [...app.bootstrap.createdKeys.map((issued) => issued.key), CONFIGURED_KEY];
    const rows = await app.store.listApiKeys(app.bootstrap.organizationId);
    expect(rows.map((row) => row.keyHash).sort()).toEqual(plaintexts.map(hashApiKey).sort());
    await app.close();

    // No column of any row holds a key, and no byte sequence of the database files does either.
    const instance = await DuckDBInstance.create(path.join(env.dataDir, EMBEDDED_STORE_FILE_NAME));
    const connection = await instance.connect();
    const reader = await connection.runAndReadAll('SELECT * FROM api_keys');
    const cells = reader.getRows().flat().map(String);
    connection.closeSync();
    instance.closeSync();
    for (const plaintext of plaintexts) {
      const secret = plaintext.slice(13);
      expect(cells.some((cell) => cell.includes(secret))).toBe(false);
      for (const name of await readdir(env.dataDir)) {
        if (name === BOOTSTRAP_KEYS_FILE_NAME) continue;
        const bytes = await readFile(path.join(env.dataDir, name));
        expect(bytes.includes(Buffer.from(secret)), name).toBe(false);
      }
    }
    // Control: the scan does see stored strings, such as the hashes.
    const database = await readFile(path.join(env.dataDir, EMBEDDED_STORE_FILE_NAME));
    expect(database.includes(Buffer.from(hashApiKey(CONFIGURED_KEY)))).toBe(true);
  });

  it('fails with BootstrapFailed when the keys file cannot be written', async () => {
    // DATA_DIR/bootstrap-keys.json is a directory, so the rename onto it fails.
    const { mkdir } = await import('node:fs/promises');
    await mkdir(path.join(env.dataDir, BOOTSTRAP_KEYS_FILE_NAME, 'occupied'), { recursive: true });
    await writeFile(path.join(env.dataDir, BOOTSTRAP_KEYS_FILE_NAME, 'occupied', 'x'), '');
    await expect(buildApp(env.config())).rejects.toMatchObject({ code: 'BootstrapFailed', statusCode: 500 });
    // Nothing was marked bootstrapped, and the store was released: a fixed start issues keys.
    const { rm } = await import('node:fs/promises');
    await rm(path.join(env.dataDir, BOOTSTRAP_KEYS_FILE_NAME), { recursive: true });
    const app = await env.start();
    expect(app.bootstrap.createdKeys).toHaveLength(2);
  });
});

describe('API keys', () => {
  it('generates url-safe keys with 32 random characters', () => {
    const keys = new Set(Array.from({ length: 200 }, () => generateApiKey('test')));
    expect(keys.size).toBe(200);
    for (const key of keys) expect(key).toMatch(/^svc_test_[A-Za-z0-9_-]{32}$/);
    expect(generateApiKey('live')).toMatch(/^svc_live_[A-Za-z0-9_-]{32}$/);
  });

  it('hashes with SHA-256 hex and keeps a short display prefix', () => {
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(describeApiKey('svc_live_ABCDEFGHIJKLMNOPQRST')).toEqual({
      kind: 'live',
      keyHash: hashApiKey('svc_live_ABCDEFGHIJKLMNOPQRST'),
      prefix: 'svc_live_ABCD',
    });
    expect(apiKeyKind('svc_test_ABCDEFGHIJKLMNOPQRST')).toBe('test');
    expect(apiKeyKind('svc_prod_ABCDEFGHIJKLMNOPQRST')).toBeNull();
    expect(() => describeApiKey('nope')).toThrow(TypeError);
  });
});
