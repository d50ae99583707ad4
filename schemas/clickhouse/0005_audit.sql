-- The audit log (packages/store/src/clickhouse/clickhouse-audit.ts): who changed what in an
-- organization, when and from where. Append-only: one row per event, never replaced or deleted,
-- so a plain MergeTree; a page is read per organization, newest first, which the sorting key
-- serves. Times are Int64 epoch milliseconds, UTC (18.16 has no DateTime64).
CREATE TABLE IF NOT EXISTS {database}.store_audit_events (
  org_id String,
  at_ms Int64,
  event_id String,
  actor_kind Enum8('key' = 1, 'jwt' = 2, 'admin' = 3, 'system' = 4),
  -- The key id, the identity-provider subject, the operator's or the component's name.
  actor_id String,
  -- noun.verb, e.g. baseline.created.
  action String,
  target String,
  -- The client's address; NULL for events without a request.
  source_ip Nullable(String)
)
ENGINE = MergeTree
ORDER BY (org_id, at_ms, event_id);
