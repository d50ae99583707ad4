import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EMBEDDED_STORE_FILE_NAME, STORE_ERROR_CODES, openEmbeddedStore, openStores, type Store } from '@adp/store';
import { DuckDBInstance } from '@duckdb/node-api';
import { MIGRATIONS } from '../src/embedded/migrations.js';
import { baselineFor, describeStoreContracts, newKey, sha256 } from './contract/index.js';

let dataDir = '';

// Through openStores with no ClickHouse configured: the embedded backend is what it picks.
describeStoreContracts('embedded DuckDB', {
  async setUp() {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-store-'));
  },
  open: (options = {}) => openStores({ dataDir, ...options }),
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

  it('migrates a database from before plans and key kinds: its organizations are paid, its usage live', async () => {
    const instance = await DuckDBInstance.create(path.join(dataDir, EMBEDDED_STORE_FILE_NAME));
    const connection = await instance.connect();
    await connection.run('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMP NOT NULL)');
    for (const migration of MIGRATIONS.filter((candidate) => candidate.version <= 2)) {
      for (const statement of migration.statements) await connection.run(statement);
      await connection.run('INSERT INTO schema_migrations VALUES ($1, current_localtimestamp())', [migration.version]);
    }
    await connection.run("INSERT INTO organizations VALUES ('org_old', 'Old', TIMESTAMP '2025-01-01', TIMESTAMP '2025-01-01')");
    await connection.run(
      "INSERT INTO api_keys VALUES ('key_old', 'org_old', 'live', 'svc_live_Abcd', $1, TIMESTAMP '2025-01-01', NULL, NULL)",
      [sha256('old')],
    );
    await connection.run("INSERT INTO usage_daily VALUES ('org_old', 'entire/detect', DATE '2025-01-02', 40, 2)");
    connection.closeSync();
    instance.closeSync();

    const store = await openEmbeddedStore({ dataDir });
    opened.push(store);
    expect(await store.getOrganization('org_old')).toMatchObject({ plan: 'paid', externalId: null, disabledAt: null });
    expect(await store.findApiKeyByHash(sha256('old'))).toMatchObject({ id: 'key_old', name: '', expiresAt: null });
    expect(await store.usageFor('org_old', { keyKind: 'live' })).toMatchObject({ points: 40, calls: 2 });
    expect(await store.usageFor('org_old', { keyKind: 'test' })).toMatchObject({ points: 0, calls: 0 });
  });

  /** Takes the closed store's file back to before migration `version`: its statement, and the migration forgotten. */
  async function undoMigration(version: number, statement: string): Promise<void> {
    const instance = await DuckDBInstance.create(path.join(dataDir, EMBEDDED_STORE_FILE_NAME));
    const connection = await instance.connect();
    await connection.run(statement);
    await connection.run(`DELETE FROM schema_migrations WHERE version = ${version}`);
    connection.closeSync();
    instance.closeSync();
  }

  it('migrates baselines from before the activity history: each is active since it was created', async () => {
    let nowMs = Date.parse('2026-03-15T10:20:00.000Z');
    const store = await openEmbeddedStore({ dataDir, now: () => new Date(nowMs) });
    await store.upsertBaseline('org_old', baselineFor('pump-1'));
    nowMs += 3_600_000;
    await store.upsertBaseline('org_old', baselineFor('pump-1', { label: 'replaced' }));
    await store.upsertBaseline('org_old', baselineFor('pump-2'));
    await store.close();
    // Back to the schema before migration 9, the baselines kept.
    await undoMigration(9, 'DROP TABLE baseline_activity');

    const migrated = await openEmbeddedStore({ dataDir });
    opened.push(migrated);
    expect(await migrated.baselineActivity.activeIntervals('org_old', 0, nowMs + 1)).toEqual([
      { machineId: 'pump-1', activeFromMs: Date.parse('2026-03-15T10:20:00.000Z'), activeUntilMs: null },
      { machineId: 'pump-2', activeFromMs: nowMs, activeUntilMs: null },
    ]);
  });

  it('migrates baselines from before shape references: they read as having none', async () => {
    const store = await openEmbeddedStore({ dataDir });
    const old = await store.upsertBaseline('org_old', baselineFor('pump-1'));
    await store.close();
    // Back to the schema before migration 10, the baseline kept (and before 11, which follows it).
    await undoMigration(11, 'ALTER TABLE baselines DROP COLUMN machine_model');
    await undoMigration(10, 'ALTER TABLE baselines DROP COLUMN shape_reference');

    const migrated = await openEmbeddedStore({ dataDir });
    opened.push(migrated);
    expect(await migrated.getBaseline('org_old', 'pump-1')).toEqual({ ...old, shapeReference: null, machineModel: null });
    const shapeReference = { length: 2, values: [0.1 + 0.2, 1e300, 3, 4, 5, 6], center: 0, spread: 1 };
    expect((await migrated.upsertBaseline('org_old', baselineFor('pump-1', { shapeReference }))).shapeReference).toEqual(shapeReference);
    expect((await migrated.getBaseline('org_old', 'pump-1'))?.shapeReference).toEqual(shapeReference);
  });

  it('migrates baselines from before machine models: they read as having none', async () => {
    const store = await openEmbeddedStore({ dataDir });
    const old = await store.upsertBaseline('org_old', baselineFor('rig', { channels: ['a', 'b'] }));
    await store.close();
    await undoMigration(11, 'ALTER TABLE baselines DROP COLUMN machine_model');

    const migrated = await openEmbeddedStore({ dataDir });
    opened.push(migrated);
    expect(await migrated.getBaseline('org_old', 'rig')).toEqual({ ...old, machineModel: null });
    const machineModel = JSON.stringify({ kind: 'gaussian-drift' });
    expect((await migrated.upsertBaseline('org_old', baselineFor('rig', { channels: ['a', 'b'], machineModel }))).machineModel).toBe(machineModel);
  });

  it("writes a delivery's body once: its attempts rewrite only its state; a delivery stored whole before that reads as it was", async () => {
    const store = await openEmbeddedStore({ dataDir });
    const payload = '{"type":"episode.opened","data":{"machine_id":"pump-7"}}';
    const delivery = {
      deliveryId: 'msg_1',
      orgId: 'org_a',
      webhookId: 'wh_1',
      eventId: 'evt_1',
      event: 'episode.opened',
      payload,
      status: 'pending' as const,
      attempts: [] as { at: Date; statusCode: number | null; latencyMs: number; error: string | null }[],
      createdAt: new Date(1_000),
      updatedAt: new Date(1_000),
    };
    await store.alerting!.putDeliveries([delivery, { ...delivery, deliveryId: 'msg_2', webhookId: 'wh_2' }]);
    for (let attempt = 1; attempt <= 3; attempt++) {
      delivery.attempts.push({ at: new Date(1_000 + attempt), statusCode: 503, latencyMs: 20, error: 'HTTP 503' });
      await store.alerting!.putDelivery({ ...delivery, attempts: [...delivery.attempts], updatedAt: new Date(1_000 + attempt) });
    }
    await store.close();

    const instance = await DuckDBInstance.create(path.join(dataDir, EMBEDDED_STORE_FILE_NAME));
    const connection = await instance.connect();
    const rows = (await connection.runAndReadAll("SELECT kind, id, doc FROM alerting WHERE kind IN ('delivery', 'body') ORDER BY kind, id")).getRowObjects();
    // One body for the two targets' deliveries of the alert; the states do not hold it.
    expect(rows.map((row) => [row['kind'], row['kind'] === 'body' ? row['doc'] : row['id']])).toEqual([
      ['body', payload],
      ['delivery', 'msg_1'],
      ['delivery', 'msg_2'],
    ]);
    expect(rows.filter((row) => row['kind'] === 'delivery').every((row) => !String(row['doc']).includes('machine_id'))).toBe(true);
    // A delivery as stored before bodies were apart: its payload in its own document.
    const whole = {
      delivery_id: 'msg_old',
      org_id: 'org_a',
      webhook_id: 'wh_1',
      event_id: 'evt_0',
      event: 'episode.closed',
      payload: '{"type":"episode.closed"}',
      status: 'pending',
      attempts: [{ at_ms: 500, status_code: null, latency_ms: 5000, error: 'timed out' }],
      created_ms: 400,
      updated_ms: 500,
    };
    await connection.run("INSERT INTO alerting VALUES ('delivery', 'org_a', 'msg_old', 'wh_1', 'pending', 400, $1)", [JSON.stringify(whole)]);
    connection.closeSync();
    instance.closeSync();

    const reopened = await openEmbeddedStore({ dataDir });
    opened.push(reopened);
    const old = {
      deliveryId: 'msg_old',
      orgId: 'org_a',
      webhookId: 'wh_1',
      eventId: 'evt_0',
      event: 'episode.closed',
      payload: '{"type":"episode.closed"}',
      status: 'pending',
      attempts: [{ at: new Date(500), statusCode: null, latencyMs: 5000, error: 'timed out' }],
      createdAt: new Date(400),
      updatedAt: new Date(500),
    };
    expect(await reopened.alerting!.getDelivery('org_a', 'msg_old')).toEqual(old);
    expect((await reopened.alerting!.pendingDeliveries(10)).map((d) => [d.deliveryId, d.payload, d.attempts.length])).toEqual([
      ['msg_old', old.payload, 1],
      ['msg_1', payload, 3],
      ['msg_2', payload, 0],
    ]);
    // Its next attempt stores it in the new form.
    await reopened.alerting!.putDelivery({ ...old, status: 'delivered', updatedAt: new Date(600) } as never);
    expect(await reopened.alerting!.getDelivery('org_a', 'msg_old')).toEqual({ ...old, status: 'delivered', updatedAt: new Date(600) });
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
