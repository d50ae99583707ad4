-- Dashboard accounts and sessions (packages/store/src/clickhouse/clickhouse-accounts.ts). Times are
-- Int64 epoch milliseconds, UTC. Both tables keep every write as a row; the row with the greatest
-- version is the current one (ReplacingMergeTree keeps it when parts merge; reads take it with
-- argMax, the same before and after).
--
-- One account per email, across organizations. Two replicas creating the same email at the same
-- instant both insert; the later version wins and the other's password no longer signs in.
CREATE TABLE IF NOT EXISTS {database}.store_user_accounts (
  email String,
  user_id String,
  org_id String,
  password_hash String,
  created_ms Int64,
  version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY email;
-- A session by its token's SHA-256 hash; sign-out writes the row again with deleted = 1.
CREATE TABLE IF NOT EXISTS {database}.store_dashboard_sessions (
  token_hash String,
  org_id String,
  subject String,
  display_name String,
  method String,
  created_ms Int64,
  expires_ms Int64,
  deleted UInt8,
  version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY token_hash;
