import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EMBEDDED_STORE_FILE_NAME, STORE_ERROR_CODES, openEmbeddedStore, type Store } from '@adp/store';
import { describeAuditContract } from './audit-contract.js';
import { describeStoreContract, newKey, sha256 } from './contract.js';

let dataDir = '';

describeStoreContract('embedded DuckDB', {
  async setUp() {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-store-'));
  },
  open: (options = {}) => openEmbeddedStore({ dataDir, ...options }),
  async tearDown() {
    await rm(dataDir, { recursive: true, force: true });
  },
});

describeAuditContract('embedded DuckDB', {
  async setUp() {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-store-'));
  },
  open: (options = {}) => openEmbeddedStore({ dataDir, ...options }),
  async tearDown() {
    await rm(dataDir, { recursive: true, force: true });
  },
});

describe('embedded DuckDB store specifics', () => {
  const opened: Store[] = [];
  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-store-'));
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((store) => store.close()));
    await rm(dataDir, { recursive: true, force: true });
  });

  it('keeps its data in <dataDir>/platform.duckdb, creating the directory', async () => {
    const nested = path.join(dataDir, 'a', 'b');
    opened.push(await openEmbeddedStore({ dataDir: nested }));
    expect(await readdir(nested)).toContain(EMBEDDED_STORE_FILE_NAME);
  });

  it('refuses to open the same file twice in one process', async () => {
    opened.push(await openEmbeddedStore({ dataDir }));
    await expect(openEmbeddedStore({ dataDir })).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE', retriable: true });
  });

  it('reports an unusable directory as STORE_UNAVAILABLE', async () => {
    await expect(openEmbeddedStore({ dataDir: '/dev/null/data' })).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
  });

  it('stores only hashes, never the plaintext key', async () => {
    const plaintext = 'svc_live_ThisIsTheSecretPartOfTheKey_0123';
    const store = await openEmbeddedStore({ dataDir });
    const org = await store.ensureDefaultOrganization();
    await store.createApiKey(org.id, newKey(plaintext, 'live'));
    await store.close();
    for (const name of await readdir(dataDir)) {
      const bytes = await readFile(path.join(dataDir, name));
      expect(bytes.includes(Buffer.from(plaintext)), name).toBe(false);
      expect(bytes.includes(Buffer.from(plaintext.slice(13))), name).toBe(false);
    }
    // Control: stored strings are visible to this scan.
    const database = await readFile(path.join(dataDir, EMBEDDED_STORE_FILE_NAME));
    expect(database.includes(Buffer.from(sha256(plaintext)))).toBe(true);
  });
});

describe('store error registry', () => {
  it('has unique, upper-snake codes', () => {
    const codes = Object.keys(STORE_ERROR_CODES);
    expect(new Set(codes).size).toBe(codes.length);
    for (const code of codes) expect(code).toMatch(/^STORE_[A-Z_]+$/);
  });
});
