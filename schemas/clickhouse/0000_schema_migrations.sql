-- Which migrations have run in this database. The runner (packages/streaming/src/clickhouse-migrations.ts)
-- reads it before applying anything and adds a row after each migration succeeds. Two runners that
-- start together may both record a migration: ReplacingMergeTree keyed on the version keeps one row,
-- read with FINAL.
--
-- Every file here must run on ClickHouse 18.16 (CI) and current releases (deployments): no
-- DateTime64, no TTL, no LowCardinality, no Map, no `ADD COLUMN IF NOT EXISTS`, no `{name:Type}`
-- parameters. `{database}` is the only placeholder; the runner substitutes it after checking that it
-- is a plain identifier. Statements end with `;` at the end of a line; comments are whole `--` lines.
-- Never edit a migration that has been released: the runner refuses a changed checksum. Add a file.
CREATE TABLE IF NOT EXISTS {database}.schema_migrations (
  version UInt32,
  name String,
  -- SHA-256 of the migration file's text, hex.
  checksum String,
  applied_at DateTime
)
ENGINE = ReplacingMergeTree(applied_at)
ORDER BY version;
