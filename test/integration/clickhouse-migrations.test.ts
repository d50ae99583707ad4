// The ClickHouse migrations in schemas/clickhouse/ against the real server (18.16 here, a current
// release in docker-compose): applied into a database of the test's own, idempotent on a second
// run, and the results table keeping each point once under FINAL when a batch is replayed.
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REGIMES, StreamingError, type DetectionResult } from '@adp/streaming';
import { DEFAULT_CLICKHOUSE_MIGRATIONS_DIR, runClickHouseMigrations, sqlIdentifier } from '@adp/store';
import { gateTitle, isolatedName, serverGate } from './servers.js';

const gate = await serverGate('clickhouse');

const MIGRATIONS = ['0000_schema_migrations', '0001_results', '0002_store', '0003_tenancy', '0004_store_baseline_channels', '0005_audit', '0006_metering', '0007_accounts', '0008_marketplace_customers', '0009_baseline_activity', '0010_store_baseline_shape', '0011_store_baseline_machine_model', '0012_jobs', '0013_alerting'];
const MACHINES = ['pump-1', 'pump-2', 'fan-9'] as const;
const POINTS_PER_MACHINE = 40;
// 23:59:59.000 UTC on 31 May 2024: the points cross into June, so into a second partition.
const START_MS = Date.UTC(2024, 4, 31, 23, 59, 59);
const STEP_MS = 50;

function result(machineId: string, i: number): DetectionResult {
  const anomaly = i === 7;
  return {
    organization: 'org_it',
    machine_id: machineId,
    timestamp: START_MS + i * STEP_MS,
    value: anomaly ? 99 : i / 8,
    expected_value: i / 8,
    upper_margin: 1,
    lower_margin: 1,
    is_anomaly: anomaly,
    is_positive_anomaly: anomaly,
    is_negative_anomaly: false,
    severity: anomaly ? 0.9 : 0,
    energy: i % 2 === 0 ? i / 4 : null,
    z_score: i % 2 === 0 ? i / 10 : null,
    regime: REGIMES[i % REGIMES.length] ?? 'UNKNOWN',
    model_version: 'engine-test',
  };
}

/** A results row as a worker writes it (the table's column names; flags as 0/1). */
function resultRow(r: DetectionResult, writtenAtMs: number) {
  return {
    org_id: r.organization,
    machine_id: r.machine_id,
    ts_ms: r.timestamp,
    value: r.value,
    expected_value: r.expected_value,
    upper_margin: r.upper_margin,
    lower_margin: r.lower_margin,
    is_anomaly: r.is_anomaly ? 1 : 0,
    is_positive_anomaly: r.is_positive_anomaly ? 1 : 0,
    is_negative_anomaly: r.is_negative_anomaly ? 1 : 0,
    severity: r.severity,
    energy: r.energy,
    z_score: r.z_score,
    regime: r.regime,
    model_version: r.model_version,
    written_at_ms: writtenAtMs,
  };
}

async function rows<T>(client: ClickHouseClient, query: string): Promise<T[]> {
  const answer = await client.query({
    query,
    format: 'JSONEachRow',
    clickhouse_settings: { output_format_json_quote_64bit_integers: 0 },
  });
  return answer.json<T>();
}

async function rejection(promise: Promise<unknown>): Promise<StreamingError> {
  const error: unknown = await promise.then(
    () => undefined,
    (rejected: unknown) => rejected,
  );
  expect(error).toBeInstanceOf(StreamingError);
  return error as StreamingError;
}

describe.skipIf(!gate.run)(gateTitle('clickhouse migrations', gate), () => {
  let client: ClickHouseClient;
  let database: string;
  const tempDirs: string[] = [];

  beforeEach(() => {
    // Logging off: two tests expect failed requests, which the client would log at ERROR.
    client = createClient({ url: gate.address.value, request_timeout: 30_000, log: { level: ClickHouseLogLevel.OFF } });
    database = sqlIdentifier(isolatedName('it_mig'));
  });

  afterEach(async () => {
    await client.command({ query: `DROP DATABASE IF EXISTS ${database}` });
    await client.close();
    for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  function migrationsDirWith(file: string, sql: string): string {
    const dir = mkdtempSync(join(tmpdir(), 'adp-ch-'));
    tempDirs.push(dir);
    cpSync(DEFAULT_CLICKHOUSE_MIGRATIONS_DIR, dir, { recursive: true });
    writeFileSync(join(dir, file), sql);
    return dir;
  }

  it('applies every migration once, and a second run applies nothing', async () => {
    const first = await runClickHouseMigrations(client, { database });
    expect(first).toEqual({ database, applied: MIGRATIONS, alreadyApplied: [] });
    const second = await runClickHouseMigrations(client, { database });
    expect(second).toEqual({ database, applied: [], alreadyApplied: MIGRATIONS });

    const recorded = await rows<{ version: number; name: string }>(
      client,
      `SELECT version, name FROM ${database}.schema_migrations FINAL ORDER BY version`,
    );
    expect(recorded).toEqual(MIGRATIONS.map((name, version) => ({ version, name })));

    const columns = await rows<{ name: string; type: string; default_kind: string }>(
      client,
      `SELECT name, type, default_kind FROM system.columns WHERE database = '${database}' AND table = 'results'`,
    );
    // The row a worker writes names every column except the server-computed day.
    expect(columns.filter((column) => column.default_kind !== 'MATERIALIZED').map((column) => column.name)).toEqual(
      Object.keys(resultRow(result('m', 0), 0)),
    );
    expect(columns.find((column) => column.name === 'regime')?.type).toContain("'UNKNOWN' = 5");
  });

  it('a replayed batch reads back exactly once per point with FINAL, the later write winning', async () => {
    await runClickHouseMigrations(client, { database });
    const table = `${database}.results`;
    const batch = MACHINES.flatMap((machineId) =>
      Array.from({ length: POINTS_PER_MACHINE }, (_, i) => resultRow(result(machineId, i), 1_000)),
    );
    await client.insert({ table, values: batch, format: 'JSONEachRow' });
    // The worker crashed before committing offsets: the whole batch is judged and written again,
    // one point judged differently this time.
    const replay = batch.map((row) =>
      row.machine_id === 'pump-2' && row.ts_ms === START_MS + 3 * STEP_MS
        ? { ...row, is_anomaly: 1, is_negative_anomaly: 1, regime: 'SHOCK', written_at_ms: 2_000 }
        : { ...row, written_at_ms: 2_000 },
    );
    await client.insert({ table, values: replay, format: 'JSONEachRow' });

    const raw = await rows<{ n: number }>(client, `SELECT count() AS n FROM ${table}`);
    expect(raw).toEqual([{ n: 2 * batch.length }]); // not merged yet: FINAL does the work

    const stored = await rows<{
      machine_id: string;
      ts_ms: number;
      is_anomaly: number;
      regime: string;
      energy: number | null;
      day: string;
      written_at_ms: number;
    }>(
      client,
      `SELECT machine_id, ts_ms, is_anomaly, regime, energy, toString(day) AS day, written_at_ms
       FROM ${table} FINAL WHERE org_id = 'org_it' ORDER BY machine_id, ts_ms`,
    );
    expect(stored).toHaveLength(batch.length);
    expect(new Set(stored.map((row) => `${row.machine_id}@${row.ts_ms}`)).size).toBe(batch.length);
    expect(new Set(stored.map((row) => row.written_at_ms))).toEqual(new Set([2_000]));
    expect(stored.filter((row) => row.is_anomaly === 1).map((row) => `${row.machine_id}@${(row.ts_ms - START_MS) / STEP_MS}`)).toEqual([
      'fan-9@7',
      'pump-1@7',
      'pump-2@3',
      'pump-2@7',
    ]);
    expect(stored.find((row) => row.machine_id === 'pump-2' && row.ts_ms === START_MS + 3 * STEP_MS)?.regime).toBe('SHOCK');
    expect(stored[1]?.energy).toBeNull();
    // UTC days from the materialised column: 31 May for the first 20 points (one second), then June.
    expect(stored.filter((row) => row.machine_id === 'fan-9').map((row) => row.day)).toEqual([
      ...Array<string>(20).fill('2024-05-31'),
      ...Array<string>(20).fill('2024-06-01'),
    ]);
    const partitions = await rows<{ partition: string }>(
      client,
      `SELECT DISTINCT partition FROM system.parts WHERE database = '${database}' AND table = 'results' AND active ORDER BY partition`,
    );
    expect(partitions.map((row) => row.partition)).toEqual(['202405', '202406']);
  });

  it('a statement the server refuses fails with the migration name and the server code, and nothing is recorded', async () => {
    const dir = migrationsDirWith('0099_broken.sql', 'CREATE TABLE IF NOT EXISTS {database}.broken (x NoSuchType) ENGINE = Memory;\n');
    const error = await rejection(runClickHouseMigrations(client, { database, migrationsDir: dir }));
    expect(error.code).toBe('MIGRATION_FAILED');
    expect(error.retriable).toBe(false);
    expect(error.context).toMatchObject({ migration: '0099_broken', database, serverCode: '50' }); // UNKNOWN_TYPE

    const recorded = await rows<{ name: string }>(client, `SELECT name FROM ${database}.schema_migrations FINAL ORDER BY version`);
    expect(recorded.map((row) => row.name)).toEqual(MIGRATIONS);
  });

  it('refuses to go on when an applied migration was edited', async () => {
    await runClickHouseMigrations(client, { database });
    const edited = migrationsDirWith('0001_results.sql', 'CREATE TABLE IF NOT EXISTS {database}.results (x UInt8) ENGINE = Memory;\n');
    const error = await rejection(runClickHouseMigrations(client, { database, migrationsDir: edited }));
    expect(error.code).toBe('MIGRATION_INVALID');
    expect(error.context.migration).toBe('0001_results');
  });

  it('an ADD COLUMN whose column already exists is skipped on a re-run', async () => {
    const dir = migrationsDirWith('0099_add_note.sql', "ALTER TABLE {database}.results ADD COLUMN note String DEFAULT '';\n");
    await runClickHouseMigrations(client, { database, migrationsDir: dir });
    // As if the runner had died after the ALTER and before recording it.
    await client.command({ query: `ALTER TABLE ${database}.schema_migrations DELETE WHERE version = 99` });
    await expect
      .poll(async () => rows<{ n: number }>(client, `SELECT count() AS n FROM ${database}.schema_migrations WHERE version = 99`))
      .toEqual([{ n: 0 }]);
    const again = await runClickHouseMigrations(client, { database, migrationsDir: dir });
    expect(again.applied).toEqual(['0099_add_note']);
  });

  it('runners racing on one database all succeed, each ADD COLUMN applied once', async () => {
    const dir = migrationsDirWith('0099_add_note.sql', "ALTER TABLE {database}.results ADD COLUMN note String DEFAULT '';\n");
    await Promise.all(Array.from({ length: 4 }, () => runClickHouseMigrations(client, { database, migrationsDir: dir })));
    const notes = await rows<{ n: number }>(
      client,
      `SELECT count() AS n FROM system.columns WHERE database = '${database}' AND table = 'results' AND name = 'note'`,
    );
    expect(notes.map((row) => Number(row.n))).toEqual([1]);
  });

  it('an unreachable server is a retriable CLICKHOUSE_UNAVAILABLE', async () => {
    const nowhere = createClient({ url: 'http://127.0.0.1:1', request_timeout: 5_000, log: { level: ClickHouseLogLevel.OFF } });
    try {
      const error = await rejection(runClickHouseMigrations(nowhere, { database }));
      expect(error.code).toBe('CLICKHOUSE_UNAVAILABLE');
      expect(error.retriable).toBe(true);
    } finally {
      await nowhere.close();
    }
  });
});
