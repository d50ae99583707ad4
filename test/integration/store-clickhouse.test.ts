// The ClickHouse Store against the real server (18.16 here, a current release in docker-compose):
// the same port contracts the embedded store passes (packages/store/test/contract/), then what only a
// shared, scale-out store has to prove: a second replica on the same database sees the first one's
// keys, revocations, usage and baselines; hostile strings stay values; real numbers and weights read
// back exactly; an unreachable server is a retriable StoreError. Every test gets its own database,
// dropped afterwards.
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_ORGANIZATION_ID,
  StoreError,
  openClickHouseStore,
  openStores,
  type ClickHouseStoreOptions,
  type Store,
} from '@adp/store';
import { baselineFor, describeStoreContracts, newKey, regimes, sha256 } from '../../packages/store/test/contract/index.js';
import { sqlString } from '../../packages/store/src/clickhouse/sql.js';
import { gateTitle, isolatedName, serverGate } from './servers.js';

const gate = await serverGate('clickhouse');
const url = gate.address.value;

const SCHEMAS_DIR = fileURLToPath(new URL('../../schemas/clickhouse/', import.meta.url));

const STORE_TABLES = [
  'store_api_keys',
  'store_audit_events',
  'store_baselines',
  'store_bootstrap_claims',
  'store_machine_detections',
  'store_machines',
  'store_organizations',
  'store_usage_daily',
];

let admin: ClickHouseClient | undefined;
function adminClient(): ClickHouseClient {
  admin ??= createClient({
    url,
    clickhouse_settings: { output_format_json_quote_64bit_integers: 0 },
    log: { level: ClickHouseLogLevel.OFF },
  });
  return admin;
}

async function rows<T>(query: string): Promise<T[]> {
  return (await adminClient().query({ query, format: 'JSONEachRow' })).json<T>();
}

async function dropDatabase(database: string): Promise<void> {
  if (database) await adminClient().command({ query: `DROP DATABASE IF EXISTS ${database}` });
}

afterAll(async () => {
  await admin?.close();
});

let contractDatabase = '';

describe.skipIf(!gate.run)(gateTitle('ClickHouse store', gate), () => {
  // Through openStores with ClickHouse configured: the embedded folder is never touched.
  describeStoreContracts('ClickHouse', {
    async setUp() {
      contractDatabase = isolatedName('store_it');
    },
    open: (options = {}) =>
      openStores({ dataDir: '/nonexistent/adp-store-unused', clickhouse: { url, database: contractDatabase }, ...options }),
    async tearDown() {
      await dropDatabase(contractDatabase);
    },
  });
});

describe.skipIf(!gate.run)(gateTitle('ClickHouse store: scale-out specifics', gate), () => {
  let database = '';
  const opened: Store[] = [];
  const open = async (options: Partial<ClickHouseStoreOptions> = {}): Promise<Store> => {
    const store = await openClickHouseStore({ url, database, ...options });
    opened.push(store);
    return store;
  };

  beforeEach(() => {
    database = isolatedName('store_it');
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((store) => store.close()));
    await dropDatabase(database);
  });

  it('migrates the database at open, once, next to the results table', async () => {
    await open();
    await open();
    const tables = await rows<{ name: string }>(`SELECT name FROM system.tables WHERE database = '${database}' ORDER BY name`);
    expect(tables.map((table) => table.name)).toEqual(expect.arrayContaining([...STORE_TABLES, 'results', 'schema_migrations']));
    const recorded = await rows<{ name: string }>(`SELECT name FROM ${database}.schema_migrations FINAL ORDER BY version`);
    expect(recorded.map((row) => row.name)).toContain('0002_store');
  });

  /** Applies the migrations numbered below `version` only, as a database of an older release has them. */
  async function migrateBefore(version: number): Promise<void> {
    const before = mkdtempSync(join(tmpdir(), `adp-ch-before-${version}-`));
    try {
      for (const file of readdirSync(SCHEMAS_DIR).filter((name) => Number(name.slice(0, 4)) < version)) copyFileSync(join(SCHEMAS_DIR, file), join(before, file));
      await (await open({ migrationsDir: before })).close();
    } finally {
      rmSync(before, { recursive: true, force: true });
    }
  }

  it('migrates baselines from before the activity history: each live one is active since it was created', async () => {
    // The schema before 0009, with a live baseline and a deleted one written as that schema had them.
    await migrateBefore(9);
    await adminClient().insert({
      table: `${database}.store_baselines`,
      values: [
        { org_id: 'org_old', machine_id: 'pump-live', baseline_id: 'bl_a', created_at_ms: 1_700_000_000_000, updated_at_ms: 1_700_000_900_000, deleted: 0, version: 1 },
        { org_id: 'org_old', machine_id: 'pump-gone', baseline_id: 'bl_b', created_at_ms: 1_700_000_000_000, updated_at_ms: 1_700_000_000_000, deleted: 0, version: 1 },
        { org_id: 'org_old', machine_id: 'pump-gone', baseline_id: '', created_at_ms: 0, updated_at_ms: 0, deleted: 1, version: 2 },
      ],
      format: 'JSONEachRow',
    });
    const store = await open();
    expect(await store.baselineActivity.activeIntervals('org_old', 0, 1_800_000_000_000)).toEqual([
      { machineId: 'pump-live', activeFromMs: 1_700_000_000_000, activeUntilMs: null },
    ]);
  });

  it('migrates baselines from before shape references: they read as having none', async () => {
    await migrateBefore(10);
    // A baseline as the schema before 0010 had it.
    await adminClient().insert({
      table: `${database}.store_baselines`,
      values: [
        { org_id: 'org_old', machine_id: 'pump-old', baseline_id: 'bl_old', energy_mean: '0.5', energy_std: '0.25', energy_p99: '1.5', finetune_status: 'skipped', finetune_duration_seconds: '0', created_at_ms: 1_700_000_000_000, updated_at_ms: 1_700_000_000_000, deleted: 0, version: 1 },
      ],
      format: 'JSONEachRow',
    });
    const columns = await rows<{ name: string }>(
      `SELECT name FROM system.columns WHERE database = ${sqlString(database)} AND table = 'store_baselines' AND name LIKE 'shape%'`,
    );
    expect(columns).toEqual([]);
    const store = await open();
    expect(await store.getBaseline('org_old', 'pump-old')).toMatchObject({ baselineId: 'bl_old', stats: { energyMean: 0.5 }, shapeReference: null });
    const shapeReference = { length: 2, values: [0.1 + 0.2, -0, 1e300, 4, 5, 6], center: 0, spread: 1 };
    await store.upsertBaseline('org_old', baselineFor('pump-old', { shapeReference }));
    expect((await store.getBaseline('org_old', 'pump-old'))?.shapeReference).toEqual(shapeReference);
  });

  it('a second replica sees the keys, revocations, usage and baselines of the first', async () => {
    const first = await open();
    const second = await open();
    const org = await first.ensureDefaultOrganization();
    expect(await second.ensureDefaultOrganization()).toEqual(org);

    const { key } = await first.createApiKey(org.id, newKey('svc_live_replicated000000', 'live'));
    expect(await second.findApiKeyByHash(key.keyHash)).toEqual(key);
    expect(await second.revokeApiKey(key.id)).toBe(true);
    expect((await first.findApiKeyByHash(key.keyHash))?.revokedAt).toBeInstanceOf(Date);
    expect(await first.revokeApiKey(key.id)).toBe(false);
    // A touch after the revocation (a request already past authentication) never un-revokes.
    await first.touchApiKey(key.id, new Date());
    expect((await second.findApiKeyByHash(key.keyHash))?.revokedAt).toBeInstanceOf(Date);

    await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 ? first : second).recordUsage(org.id, 'entire/detect', i)),
    );
    for (const store of [first, second]) {
      expect(await store.usageFor(org.id)).toMatchObject({ calls: 40, points: (39 * 40) / 2 });
    }

    const weights = new Uint8Array(randomBytes(300_000));
    weights.set(Array.from({ length: 256 }, (_, i) => i), 0);
    await first.upsertBaseline(org.id, baselineFor('pump-7', { predictorWeights: weights }));
    const read = await second.getBaseline(org.id, 'pump-7');
    expect(read?.predictorWeights?.byteLength).toBe(weights.byteLength);
    expect(Buffer.compare(Buffer.from(read?.predictorWeights ?? []), Buffer.from(weights))).toBe(0);

    expect(await second.deleteMachine(org.id, 'pump-7')).toEqual({ deleted: true, baselineDeleted: true });
    expect(await first.getBaseline(org.id, 'pump-7')).toBeNull();
    expect(await first.machineStatus(org.id, 'pump-7')).toBeNull();
    expect(await first.listMachines(org.id)).toEqual([]);
  });

  it('stores hostile machine ids, labels, organizations and endpoints verbatim and harmlessly', async () => {
    const store = await open();
    let everyByte = '';
    for (let code = 1; code < 256; code++) everyByte += String.fromCharCode(code);
    const hostile = [
      "m'); DROP TABLE store_baselines; --",
      "' OR 1=1 --",
      "\\' OR '1'='1",
      "\\\\'; DROP DATABASE default; --",
      'x\0y\nz\r\t\b\f',
      `${database}.store_machines`,
      '{database} {name:String} $1 ?',
      'é 😀 \u2028 \uFEFF',
      everyByte,
    ];
    await store.createOrganization('org_control', 'Control');
    await store.upsertBaseline('org_control', baselineFor('control'));
    for (const [index, value] of hostile.entries()) {
      await store.upsertBaseline('org_a', baselineFor(value, { baselineId: value, label: value, granularity: value }));
      await store.recordDetection(value, value, { points: index, withBaseline: false, regimeCounts: regimes({ UNKNOWN: index }) });
      await store.recordUsage(value, value, index);
      expect(await store.getBaseline('org_a', value)).toMatchObject({ machineId: value, baselineId: value, label: value, granularity: value });
      expect(await store.machineStatus(value, value)).toMatchObject({ machineId: value, detectionsSince: 1, pointsSince: index });
      expect((await store.usageFor(value)).byEndpoint).toEqual([{ endpoint: value, points: index, calls: 1 }]);
      expect(await store.listMachines(value)).toEqual([expect.objectContaining({ machineId: value })]);
      expect(await store.findApiKeyByHash(value)).toBeNull();
      expect(await store.revokeApiKey(value)).toBe(false);
    }
    const machines = await store.listMachines('org_a');
    expect(new Set(machines.map((machine) => machine.machineId))).toEqual(new Set(hostile));
    expect(machines.map((machine) => machine.label).sort()).toEqual([...hostile].sort());
    for (const value of hostile) {
      expect(await store.deleteMachine('org_a', value)).toEqual({ deleted: true, baselineDeleted: true });
    }
    expect(await store.listMachines('org_a')).toEqual([]);
    // Nothing was dropped or touched beside the hostile rows themselves.
    const tables = await rows<{ name: string }>(`SELECT name FROM system.tables WHERE database = '${database}'`);
    expect(tables.map((table) => table.name)).toEqual(expect.arrayContaining(STORE_TABLES));
    expect(await store.getBaseline('org_control', 'control')).not.toBeNull();
  });

  it('quotes every character so that the server reads back exactly the string sent', async () => {
    let text = '';
    for (let code = 0; code < 0xd800; code++) text += String.fromCharCode(code);
    for (let code = 0xe000; code <= 0xffff; code++) text += String.fromCharCode(code);
    text += '😀𝄞\u{10FFFF}';
    const answer = await adminClient().query({
      query: `SELECT ${sqlString(text)} AS s, s = ${sqlString(text)} AS same`,
      format: 'JSONEachRow',
      clickhouse_settings: { max_query_size: String(4 * 1024 * 1024) },
    });
    const [row] = await answer.json<{ s: string; same: number }>();
    expect(row?.same).toBe(1);
    expect(row?.s === text).toBe(true);
  });

  it('takes ids longer than the default max_query_size of the server', async () => {
    const store = await open();
    const long = `m'${'\\x'.repeat(150_000)}`;
    await store.upsertBaseline('org_a', baselineFor(long));
    expect((await store.getBaseline('org_a', long))?.machineId).toBe(long);
    expect(await store.deleteMachine('org_a', long)).toEqual({ deleted: true, baselineDeleted: true });
  });

  it('reads back real numbers exactly, though 18.16 parses Float64 input inexactly', async () => {
    const store = await open();
    // Each of these comes back an ulp off through a Float64 column on 18.16.
    const awkward = {
      energyMean: -3.289004050569999e-10,
      energyStd: 1.0282366185198385e-190,
      energyP99: 4.234995861380178e97,
      numWindows: Number.MAX_SAFE_INTEGER,
      seriesLength: 0,
    };
    const written = await store.upsertBaseline(
      'org_a',
      baselineFor('floats', {
        sensitivity: 0.1 + 0.2,
        stats: awkward,
        normalisation: { center: -0, scale: Number.MIN_VALUE },
        fineTuneStats: { ...baselineFor('x').fineTuneStats, finalLoss: Number.MAX_VALUE, durationSeconds: 1 / 3 },
      }),
    );
    const second = await open();
    const read = await second.getBaseline('org_a', 'floats');
    expect(read).toEqual(written);
    expect(Object.is(read?.normalisation?.center, -0)).toBe(true);
    expect(read?.stats).toEqual(awkward);
  });

  it('refuses numbers that cannot be stored', async () => {
    const store = await open();
    const cases = [
      baselineFor('m', { sensitivity: Number.NaN }),
      baselineFor('m', { normalisation: { center: Number.POSITIVE_INFINITY, scale: 1 } }),
      baselineFor('m', { fineTuneStats: { ...baselineFor('m').fineTuneStats, finalLoss: Number.NaN } }),
      baselineFor('m', { stats: { ...baselineFor('m').stats, numWindows: -1 } }),
    ];
    for (const baseline of cases) {
      await expect(store.upsertBaseline('org_a', baseline)).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
    }
    await expect(store.touchApiKey('key_x', new Date(Number.NaN))).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
    expect(await store.listMachines('org_a')).toEqual([]);
  });

  it('three replicas bootstrapping at once: exactly one issues its keys, the others stand down', async () => {
    const replicas = await Promise.all([open(), open(), open()]);
    for (let round = 0; round < 4; round++) {
      const orgId = `org_race_${round}`;
      // Created unbootstrapped, as the default organization is on a first start.
      await replicas[0]?.ensureDefaultOrganization();
      const org = round === 0 ? DEFAULT_ORGANIZATION_ID : orgId;
      if (round > 0) await createUnbootstrapped(org);
      const results = await Promise.all(
        replicas.map((replica, index) =>
          replica.completeBootstrap(org, [newKey(`svc_test_race${round}replica${index}000000`)]),
        ),
      );
      const winners = results.filter((records) => records !== null);
      expect(winners).toHaveLength(1);
      const keys = await replicas[1]?.listApiKeys(org);
      expect(keys?.map((key) => key.id)).toEqual(winners[0]?.map((key) => key.id));
      expect(await replicas[2]?.completeBootstrap(org, [newKey(`svc_test_latecomer${round}0000000`)])).toBeNull();
    }
    expect((await replicas[0]?.ensureDefaultOrganization())?.bootstrappedAt).toBeInstanceOf(Date);

    /** An organization as ensureDefaultOrganization makes it (bootstrapped_at NULL), under another id. */
    async function createUnbootstrapped(id: string): Promise<void> {
      await adminClient().insert({
        table: `${database}.store_organizations`,
        values: [{ id, name: id, created_at_ms: Date.now(), bootstrapped_at_ms: null, version: 1 }],
        format: 'JSONEachRow',
      });
    }
  });

  it('two replicas creating the same key at once write one key, which one revocation revokes', async () => {
    const first = await open();
    const second = await open();
    const org = await first.ensureDefaultOrganization();
    const [a, b] = await Promise.all([
      first.createApiKey(org.id, newKey('svc_live_racedkey000000000', 'live')),
      second.createApiKey(org.id, newKey('svc_live_racedkey000000000', 'live')),
    ]);
    expect(a.key.id).toBe(b.key.id);
    expect(await first.listApiKeys(org.id)).toHaveLength(1);
    expect(await second.revokeApiKey(b.key.id)).toBe(true);
    expect((await first.findApiKeyByHash(sha256('svc_live_racedkey000000000')))?.revokedAt).toBeInstanceOf(Date);
  });

  it('a deleted machine that is seen again starts afresh, and its old weights leave the disk on merge', async () => {
    const store = await open();
    await store.upsertBaseline('org_a', baselineFor('m1'));
    for (let i = 0; i < 3; i++) {
      await store.recordDetection('org_a', 'm1', { points: 10, withBaseline: true, regimeCounts: regimes({ HEALTHY: 10 }) });
    }
    expect(await store.deleteMachine('org_a', 'm1')).toEqual({ deleted: true, baselineDeleted: true });
    await store.recordDetection('org_a', 'm1', { points: 7, withBaseline: false, regimeCounts: regimes({ UNKNOWN: 7 }) });
    const status = await store.machineStatus('org_a', 'm1');
    expect(status).toMatchObject({ detectionsSince: 1, pointsSince: 7, baseline: null });
    expect(status?.recentDetections).toHaveLength(1);

    await adminClient().command({ query: `OPTIMIZE TABLE ${database}.store_baselines FINAL` });
    const kept = await rows<{ n: number }>(
      `SELECT count() AS n FROM ${database}.store_baselines WHERE predictor_weights_base64 IS NOT NULL`,
    );
    expect(kept).toEqual([{ n: 0 }]);
  });

  it('answers a server-side failure with STORE_QUERY_FAILED and the server code', async () => {
    const store = await open();
    await adminClient().command({ query: `DROP TABLE ${database}.store_api_keys` });
    const error = await store.findApiKeyByHash(sha256('x')).then(
      () => undefined,
      (cause: unknown) => cause,
    );
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ code: 'STORE_QUERY_FAILED', retriable: true, operation: 'findApiKeyByHash' });
    expect((error as StoreError).message).toMatch(/ClickHouse error 60\b/); // UNKNOWN_TABLE
  });

  it('refuses a database name that is not a plain identifier, and bad options, before any SQL', async () => {
    for (const name of ['x; DROP DATABASE default', 'store-it', '', '1abc', "a'b"]) {
      await expect(openClickHouseStore({ url, database: name })).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
    }
    for (const options of [{ url: 'not a url' }, { requestTimeoutMs: 0 }, { pingTimeoutMs: Number.NaN }, { minInsertIntervalMs: -1 }]) {
      await expect(openClickHouseStore({ url, database, ...options })).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
    }
    const databases = await rows<{ name: string }>(`SELECT name FROM system.databases WHERE name = '${database}'`);
    expect(databases).toEqual([]);
  });

  it('a touch racing a revocation on another replica never undoes it', async () => {
    const first = await open();
    const second = await open();
    const org = await first.ensureDefaultOrganization();
    for (let round = 0; round < 10; round++) {
      const { key } = await first.createApiKey(org.id, newKey(`svc_live_touchrace${round}0000000`, 'live'));
      const [, revoked] = await Promise.all([first.touchApiKey(key.id, new Date()), second.revokeApiKey(key.id)]);
      expect(revoked).toBe(true);
      const found = await first.findApiKeyByHash(key.keyHash);
      expect(found?.revokedAt).toBeInstanceOf(Date);
      expect(found?.lastUsedAt).toBeInstanceOf(Date);
    }
  });

  it('an unreachable server is a retriable STORE_UNAVAILABLE, at open and once it goes away', async () => {
    await expect(openClickHouseStore({ url: 'http://127.0.0.1:1', database, requestTimeoutMs: 5_000 })).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
      retriable: true,
    });

    const proxy = await startProxy(gate.address.host, gate.address.port);
    try {
      const store = await open({ url: `http://127.0.0.1:${proxy.port}`, pingTimeoutMs: 1_000 });
      await store.ping();
      await store.ensureDefaultOrganization();
      await proxy.stop();
      await expect(store.ping()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE', retriable: true, operation: 'ping' });
      await expect(store.findApiKeyByHash(sha256('x'))).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE', retriable: true });
      await expect(store.recordUsage(DEFAULT_ORGANIZATION_ID, 'entire/detect', 1)).rejects.toMatchObject({
        code: 'STORE_UNAVAILABLE',
      });
    } finally {
      await proxy.stop();
    }
  });
});

/** A TCP proxy to the server that can be cut, as if ClickHouse went away under an open store. */
async function startProxy(host: string, port: number): Promise<{ port: number; stop(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((downstream) => {
    const upstream = connect({ host, port });
    sockets.add(downstream);
    sockets.add(upstream);
    const drop = () => {
      downstream.destroy();
      upstream.destroy();
      sockets.delete(downstream);
      sockets.delete(upstream);
    };
    downstream.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    downstream.pipe(upstream).pipe(downstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  let stopped: Promise<void> | undefined;
  return {
    port: (server.address() as AddressInfo).port,
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      });
      return stopped;
    },
  };
}
