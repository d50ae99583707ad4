// Schema of the embedded store, as an append-only list of migrations. Never edit a released
// migration; add a new one. Each runs in its own transaction and is recorded in schema_migrations.
//
// No foreign keys: DuckDB rewrites some updates of referenced rows as delete + insert and then
// rejects them, so referential integrity is checked by the store's methods instead.

export interface Migration {
  readonly version: number;
  readonly statements: readonly string[];
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    statements: [
      `CREATE TABLE organizations (
         id VARCHAR PRIMARY KEY,
         name VARCHAR NOT NULL,
         created_at TIMESTAMP NOT NULL,
         bootstrapped_at TIMESTAMP
       )`,
      `CREATE TABLE api_keys (
         id VARCHAR PRIMARY KEY,
         org_id VARCHAR NOT NULL,
         kind VARCHAR NOT NULL CHECK (kind IN ('live', 'test')),
         prefix VARCHAR NOT NULL,
         key_hash VARCHAR NOT NULL UNIQUE,
         created_at TIMESTAMP NOT NULL,
         last_used_at TIMESTAMP,
         revoked_at TIMESTAMP
       )`,
      // Aggregated per organization, endpoint and UTC day: a read per organization touches
      // (endpoints x days) rows however many calls there were, and days keep billing periods cheap.
      `CREATE TABLE usage_daily (
         org_id VARCHAR NOT NULL,
         endpoint VARCHAR NOT NULL,
         day DATE NOT NULL,
         points BIGINT NOT NULL,
         calls BIGINT NOT NULL,
         PRIMARY KEY (org_id, endpoint, day)
       )`,
    ],
  },
];
