-- Marketplace metering (packages/store/src/clickhouse/clickhouse-metering.ts). Times are Int64
-- epoch milliseconds of the UTC hour's start.
--
-- Live calls per organization, dimension and hour: one row per call (group-committed), added up
-- by SummingMergeTree when parts merge; reads sum them, the same before and after a merge.
CREATE TABLE IF NOT EXISTS {database}.store_metering_hourly_calls (
  org_id String,
  dimension String,
  hour_ms Int64,
  calls UInt64
)
ENGINE = SummingMergeTree(calls)
ORDER BY (org_id, dimension, hour_ms);
-- The export ledger: one row per write of an (organization, dimension, hour) entry; the row with
-- the greatest version is the entry (ReplacingMergeTree keeps it when parts merge; reads take it
-- with argMax, the same before and after).
CREATE TABLE IF NOT EXISTS {database}.store_metering_ledger (
  hour_ms Int64,
  org_id String,
  dimension String,
  customer String,
  used UInt64,
  carried_in UInt64,
  quantity UInt64,
  carried_out UInt64,
  status String,
  updated_ms Int64,
  version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (hour_ms, org_id, dimension);
