// The migration runner without a server: identifier validation, statement splitting, and the
// migration files themselves held to what ClickHouse 18.16 and current releases both accept.
// test/integration/clickhouse-migrations.test.ts runs them against the real server.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClickHouseClient } from '@clickhouse/client';
import { describe, expect, it } from 'vitest';
import { REGIMES, StreamingError } from '@adp/streaming';
import { clickHouseServerCode, runClickHouseMigrations, sqlIdentifier } from '../src/index.js';
import { readClickHouseMigrations, splitStatements } from '../src/clickhouse/migrations.js';

describe('sqlIdentifier', () => {
  it.each(['adp', 'adp_prod', '_tmp', 'A1', 'x'.repeat(63)])('accepts %s', (name) => {
    expect(sqlIdentifier(name)).toBe(name);
  });

  it.each([
    '',
    '1adp',
    'adp; DROP DATABASE default',
    'adp.results',
    'adp`',
    "adp' OR '1'='1",
    'adp--',
    'adp /* x */',
    'adp\n',
    'adp-prod',
    'x'.repeat(64),
    'ädp',
    '{database}',
  ])('rejects %j', (name) => {
    try {
      sqlIdentifier(name, 'database');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(StreamingError);
      expect((error as StreamingError).code).toBe('INVALID_IDENTIFIER');
    }
  });

  it('the runner refuses a bad database name before it sends anything', async () => {
    const untouchable = new Proxy({} as ClickHouseClient, {
      get: () => {
        throw new Error('the client must not be used');
      },
    });
    await expect(runClickHouseMigrations(untouchable, { database: 'x; DROP TABLE y' })).rejects.toMatchObject({
      code: 'INVALID_IDENTIFIER',
    });
  });
});

describe('splitStatements', () => {
  it('drops comment lines and splits on a semicolon at line end', () => {
    const sql = '-- header; not a statement\nCREATE TABLE a (\n  -- a column;\n  x UInt8\n) ENGINE = Memory;\n\nSELECT 1 ;\n';
    expect(splitStatements(sql)).toEqual(['CREATE TABLE a (\n  x UInt8\n) ENGINE = Memory', 'SELECT 1']);
  });
});

describe('clickHouseServerCode', () => {
  it('reads the code from a ClickHouseError or from 18.16 message text', () => {
    expect(clickHouseServerCode(Object.assign(new Error('x'), { code: '60' }))).toBe('60');
    expect(clickHouseServerCode(new Error('Code: 81, e.displayText() = DB::Exception: Database x does not exist'))).toBe('81');
    expect(clickHouseServerCode(new Error('connect ECONNREFUSED 127.0.0.1:8123'))).toBeUndefined();
  });
});

describe('schemas/clickhouse/', () => {
  const migrations = readClickHouseMigrations();

  it('are numbered from 0000, schema_migrations first', () => {
    expect(migrations.map((migration) => migration.version)).toEqual(migrations.map((_, index) => index));
    expect(migrations[0]?.name).toBe('0000_schema_migrations');
    expect(migrations.map((migration) => migration.name)).toContain('0001_results');
  });

  it('stay within what ClickHouse 18.16 and current releases both accept', () => {
    for (const migration of migrations) {
      for (const statement of migration.statements) {
        expect(statement, migration.name).not.toMatch(/DateTime64|\bTTL\b|LowCardinality|\bMap\(|\bBool\b|\bJSON\b/);
        expect(statement, migration.name).not.toMatch(/ADD\s+COLUMN\s+IF\s+NOT\s+EXISTS/i);
        expect(statement, migration.name).not.toMatch(/\{[A-Za-z_]+:[A-Za-z]/); // query parameters
        // Every table lives in the migrated database.
        for (const [, name] of statement.matchAll(/\bTABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\S+)/gi)) {
          expect(name, migration.name).toMatch(/^\{database\}\.[a-z_]+$/);
        }
      }
    }
  });

  it("the results table's regime Enum8 has the Avro enum's symbols, in order", () => {
    const results = migrations.find((migration) => migration.name === '0001_results')?.statements.join('\n') ?? '';
    const symbols = [...(/regime Enum8\(([^)]*)\)/.exec(results)?.[1] ?? '').matchAll(/'([A-Z_]+)' = (\d+)/g)];
    expect(symbols.map(([, symbol]) => symbol)).toEqual([...REGIMES]);
    expect(symbols.map(([, , value]) => Number(value))).toEqual(REGIMES.map((_, index) => index + 1));
  });

  it('refuses a misnamed file or an unknown placeholder', () => {
    const dir = mkdtempSync(join(tmpdir(), 'adp-ch-'));
    try {
      writeFileSync(join(dir, '1_bad.sql'), 'SELECT 1;');
      expect(() => readClickHouseMigrations(dir)).toThrow(expect.objectContaining({ code: 'MIGRATION_INVALID' }));
      rmSync(join(dir, '1_bad.sql'));
      writeFileSync(join(dir, '0000_params.sql'), 'SELECT {org} FROM {database}.t;');
      expect(() => readClickHouseMigrations(dir)).toThrow(
        expect.objectContaining({ code: 'MIGRATION_INVALID', context: { migration: '0000_params' } }),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
