-- Plans, operator ids and disabling of organizations; names and rotation expiry of API keys; usage
-- per key kind (packages/store/src/clickhouse/clickhouse-store.ts).
--
-- Organizations from before plans existed are paid. Every organization row the store writes
-- carries all its columns, so a newer version never falls back to these defaults.
ALTER TABLE {database}.store_organizations ADD COLUMN plan String DEFAULT 'paid';
ALTER TABLE {database}.store_organizations ADD COLUMN external_id Nullable(String);
ALTER TABLE {database}.store_organizations ADD COLUMN disabled_at_ms Nullable(Int64);
-- A key's name, and when a rotated key stops working (0: never). A rotation restates the key's
-- `created` row with a later at_ms and the expiry; ReplacingMergeTree keeps that row when parts
-- merge, and reads take the latest `created` row's values (argMaxIf), the same before and after.
ALTER TABLE {database}.store_api_keys ADD COLUMN name String DEFAULT '';
ALTER TABLE {database}.store_api_keys ADD COLUMN expires_at_ms UInt64 DEFAULT 0;
-- Usage per organization, key kind, endpoint label and UTC day. The kind must be in the sorting
-- key (SummingMergeTree adds up rows of equal keys), so it is a new table; store_usage_daily keeps
-- the usage recorded before kinds existed and is read as live usage.
CREATE TABLE IF NOT EXISTS {database}.store_usage_by_kind_daily (
  org_id String,
  key_kind Enum8('live' = 1, 'test' = 2),
  endpoint String,
  day Date,
  points UInt64,
  calls UInt64
)
ENGINE = SummingMergeTree((points, calls))
PARTITION BY toYYYYMM(day)
ORDER BY (org_id, key_kind, endpoint, day);
