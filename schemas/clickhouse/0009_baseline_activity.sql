-- When each machine's baseline was active (packages/store/src/clickhouse/clickhouse-baseline-activity.ts),
-- kept after deletions for the monitored_machines billing of past hours: one row per interval
-- [active_from_ms, active_until_ms), NULL until while it is open. Closing an interval writes its row
-- again with the end and a greater version; reads take the latest row with FINAL.
CREATE TABLE IF NOT EXISTS {database}.store_baseline_activity (
  org_id String,
  machine_id String,
  active_from_ms Int64,
  active_until_ms Nullable(Int64),
  version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (org_id, machine_id, active_from_ms);
-- The baselines that exist now have been active since they were created (a replacement keeps
-- created_at_ms; a re-created baseline starts again). Version 0: any interval the store has already
-- closed or reopened wins over this row, and a second run of this statement writes the same rows.
INSERT INTO {database}.store_baseline_activity (org_id, machine_id, active_from_ms, active_until_ms, version)
SELECT org_id, machine_id, created_at_ms, CAST(NULL AS Nullable(Int64)), toUInt64(0)
FROM (SELECT org_id, machine_id, created_at_ms, deleted FROM {database}.store_baselines FINAL)
WHERE deleted = 0;
