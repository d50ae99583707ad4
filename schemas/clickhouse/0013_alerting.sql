-- Webhook targets, their deliveries and machine feedback (packages/store/src/clickhouse/
-- clickhouse-alerting.ts): one JSON document per (kind, org_id, id), written whole on every change
-- with a greater version; reads take each key's latest row with argMax, and a removal writes the
-- row again with deleted = 1. Times are Int64 epoch milliseconds, UTC.
CREATE TABLE IF NOT EXISTS {database}.store_alerting (
  kind String,
  org_id String,
  id String,
  parent String,
  status String,
  created_ms Int64,
  doc String,
  deleted UInt8,
  version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (kind, org_id, id);
