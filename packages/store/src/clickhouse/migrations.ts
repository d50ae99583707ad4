// Applies the ClickHouse DDL in schemas/clickhouse/ at start: every `NNNN_name.sql` in order,
// each once per database, recorded in `<database>.schema_migrations`. Safe to run again and from
// several replicas at once: statements use IF NOT EXISTS, an ADD COLUMN whose column exists is
// skipped (18.16 has no `ADD COLUMN IF NOT EXISTS`), and a migration recorded twice is one row
// after FINAL. ClickHouse has no transactions, so a migration interrupted halfway is simply run
// again from its first statement.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ClickHouseClient } from '@clickhouse/client';
import { StreamingError } from '@adp/streaming/errors';
import { clickHouseFailure } from './failures.js';
import { sqlIdentifier } from './identifiers.js';

/** schemas/clickhouse/ of this repository. */
export const DEFAULT_CLICKHOUSE_MIGRATIONS_DIR = fileURLToPath(
  new URL('../../../../schemas/clickhouse/', import.meta.url),
);

const MIGRATION_FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;
const DATABASE_PLACEHOLDER = '{database}';
const ADD_COLUMN = /^ALTER\s+TABLE\s+([A-Za-z0-9_]+)\.([A-Za-z0-9_]+)\s+ADD\s+COLUMN\s+([A-Za-z0-9_]+)\s/i;

export interface ClickHouseMigration {
  readonly version: number;
  /** The file name without `.sql`, e.g. `0001_results`. */
  readonly name: string;
  /** SHA-256 of the file's text, hex; an applied migration whose file changed is refused. */
  readonly checksum: string;
  /** Statements with `{database}` still in place. */
  readonly statements: readonly string[];
}

export interface MigrationReport {
  readonly database: string;
  /** Migrations run by this call, in order. */
  readonly applied: readonly string[];
  /** Migrations found already recorded. */
  readonly alreadyApplied: readonly string[];
}

/** Splits a migration's text into statements: whole-line `--` comments dropped, `;` at line end separates. */
export function splitStatements(sql: string): string[] {
  const text = sql
    .split('\n')
    .filter((line) => !line.trim().startsWith('--'))
    .join('\n');
  return text
    .split(/;[ \t]*(?:\n|$)/)
    .map((statement) => statement.trim())
    .filter((statement) => statement.length > 0);
}

/** Reads `NNNN_name.sql` files from `dir`, sorted by version. Other files are ignored. */
export function readClickHouseMigrations(dir: string = DEFAULT_CLICKHOUSE_MIGRATIONS_DIR): ClickHouseMigration[] {
  const migrations: ClickHouseMigration[] = [];
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith('.sql')) continue;
    const match = MIGRATION_FILE.exec(file);
    const name = file.slice(0, -'.sql'.length);
    if (!match) {
      throw new StreamingError('MIGRATION_INVALID', `${file}: migration files are named NNNN_snake_case.sql`, {
        migration: name,
      });
    }
    const version = Number(match[1]);
    if (migrations.some((existing) => existing.version === version)) {
      throw new StreamingError('MIGRATION_INVALID', `${file}: version ${version} is used twice`, { migration: name });
    }
    const sql = readFileSync(join(dir, file), 'utf8');
    const statements = splitStatements(sql);
    if (statements.length === 0) {
      throw new StreamingError('MIGRATION_INVALID', `${file} has no statements`, { migration: name });
    }
    for (const statement of statements) {
      const unknown = statement.replaceAll(DATABASE_PLACEHOLDER, '').match(/\{[A-Za-z_][A-Za-z0-9_]*\}/);
      if (unknown) {
        throw new StreamingError('MIGRATION_INVALID', `${file}: unknown placeholder ${unknown[0]}`, { migration: name });
      }
    }
    migrations.push({ version, name, checksum: createHash('sha256').update(sql).digest('hex'), statements });
  }
  return migrations;
}

function migrationError(error: unknown, what: string, context: { migration?: string; database: string }): StreamingError {
  if (error instanceof StreamingError) return error;
  const { serverCode, message } = clickHouseFailure(error);
  if (serverCode === undefined) return new StreamingError('CLICKHOUSE_UNAVAILABLE', `${what}: ${message}`, context, { cause: error });
  return new StreamingError('MIGRATION_FAILED', `${what}: ${message}`, { ...context, serverCode }, { cause: error });
}

interface AppliedRow {
  version: number;
  name: string;
  checksum: string;
}

async function appliedMigrations(client: ClickHouseClient, database: string): Promise<Map<number, AppliedRow>> {
  const exists = await (
    await client.query({ query: `EXISTS TABLE ${database}.schema_migrations`, format: 'JSONEachRow' })
  ).json<{ result: number }>();
  if (exists[0]?.result !== 1) return new Map();
  const rows = await (
    await client.query({
      query: `SELECT version, name, checksum FROM ${database}.schema_migrations FINAL ORDER BY version`,
      format: 'JSONEachRow',
    })
  ).json<AppliedRow>();
  return new Map(rows.map((row) => [Number(row.version), row]));
}

async function columnExists(client: ClickHouseClient, database: string, table: string, column: string): Promise<boolean> {
  const rows = await (
    await client.query({
      query: `SELECT count() AS n FROM system.columns
              WHERE database = '${sqlIdentifier(database, 'database')}' AND table = '${sqlIdentifier(table, 'table')}'
                AND name = '${sqlIdentifier(column, 'column')}'`,
      format: 'JSONEachRow',
      clickhouse_settings: { output_format_json_quote_64bit_integers: 0 },
    })
  ).json<{ n: number }>();
  return Number(rows[0]?.n ?? 0) > 0;
}

export interface RunClickHouseMigrationsOptions {
  /** Database to create (if missing) and migrate; must be a plain identifier. */
  readonly database: string;
  /** Default: schemas/clickhouse/ of this repository. */
  readonly migrationsDir?: string;
  /** Clock for `applied_at`; epoch ms. */
  readonly now?: () => number;
}

/**
 * Creates `database` if missing and applies every migration not yet recorded there, in order.
 * Throws StreamingError: INVALID_IDENTIFIER (bad database name), MIGRATION_INVALID (bad file,
 * or an applied migration's file changed), MIGRATION_FAILED (the server refused a statement; the
 * context names the migration and the server's code), CLICKHOUSE_UNAVAILABLE (retriable).
 */
export async function runClickHouseMigrations(
  client: ClickHouseClient,
  options: RunClickHouseMigrationsOptions,
): Promise<MigrationReport> {
  const database = sqlIdentifier(options.database, 'database');
  const migrations = readClickHouseMigrations(options.migrationsDir);
  const now = options.now ?? Date.now;

  let applied: Map<number, AppliedRow>;
  try {
    await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}` });
    applied = await appliedMigrations(client, database);
  } catch (error) {
    throw migrationError(error, `reading the migrations applied to ${database}`, { database });
  }

  const report = { database, applied: [] as string[], alreadyApplied: [] as string[] };
  for (const migration of migrations) {
    const context = { migration: migration.name, database };
    const recorded = applied.get(migration.version);
    if (recorded) {
      if (recorded.checksum !== migration.checksum) {
        throw new StreamingError(
          'MIGRATION_INVALID',
          `${migration.name} was applied to ${database} with different SQL (checksum ${recorded.checksum.slice(0, 12)}); ` +
            'released migrations are never edited: add a new one',
          context,
        );
      }
      report.alreadyApplied.push(migration.name);
      continue;
    }
    for (const [index, template] of migration.statements.entries()) {
      const statement = template.replaceAll(DATABASE_PLACEHOLDER, database);
      try {
        const addColumn = ADD_COLUMN.exec(statement);
        if (addColumn && (await columnExists(client, addColumn[1] ?? '', addColumn[2] ?? '', addColumn[3] ?? ''))) {
          continue;
        }
        try {
          await client.command({ query: statement });
        } catch (error) {
          // Replicas starting together migrate together: another one may have added the column
          // between the check above and this statement.
          if (!addColumn || !(await columnExists(client, addColumn[1] ?? '', addColumn[2] ?? '', addColumn[3] ?? ''))) throw error;
        }
      } catch (error) {
        throw migrationError(error, `${migration.name}, statement ${index + 1}`, context);
      }
    }
    try {
      await client.insert({
        table: `${database}.schema_migrations`,
        values: [
          {
            version: migration.version,
            name: migration.name,
            checksum: migration.checksum,
            applied_at: Math.floor(now() / 1000),
          },
        ],
        format: 'JSONEachRow',
      });
    } catch (error) {
      throw migrationError(error, `recording ${migration.name}`, context);
    }
    report.applied.push(migration.name);
  }
  return report;
}
