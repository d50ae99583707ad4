-- One row per judged telemetry point (adp.streaming.DetectionResult in schemas/avro/result.avsc),
-- written by the workers in batches.
--
-- Replays: a worker commits Kafka offsets only after ClickHouse confirms a batch, so after a crash
-- some points are judged and inserted again. The sorting key (org_id, machine_id, ts_ms) is the
-- point's identity; ReplacingMergeTree keeps one row per key, the one with the highest
-- written_at_ms, when parts merge. Merges happen eventually, so queries that must see each point
-- once read with FINAL (or argMax(..., written_at_ms) grouped by the key).
--
-- Partitions are calendar months (UTC) of the point's timestamp; retention drops old partitions
-- (`ALTER TABLE ... DROP PARTITION 202401`): 18.16 has no TTL.
CREATE TABLE IF NOT EXISTS {database}.results (
  -- Organization id (the Avro field `organization`).
  org_id String,
  machine_id String,
  -- The point's timestamp: epoch milliseconds, UTC (Avro `timestamp`). Int64, not DateTime64,
  -- which 18.16 does not have.
  ts_ms Int64,
  -- The UTC day of ts_ms, for partitioning and day-range pruning; computed by the server.
  day Date MATERIALIZED toDate(toDateTime(intDiv(ts_ms, 1000), 'UTC')),
  value Float64,
  expected_value Float64,
  upper_margin Float64,
  lower_margin Float64,
  -- Flags as 0/1 (18.16 has no Bool).
  is_anomaly UInt8,
  is_positive_anomaly UInt8,
  is_negative_anomaly UInt8,
  severity Float64,
  energy Nullable(Float64),
  z_score Nullable(Float64),
  -- The Avro enum Regime's symbols; values are stable numbers, so a new symbol is a new number.
  regime Enum8('HEALTHY' = 1, 'ACTIVE' = 2, 'TRANSITION' = 3, 'SHOCK' = 4, 'UNKNOWN' = 5),
  model_version String,
  -- When the worker wrote this row, epoch milliseconds: the ReplacingMergeTree version, so the
  -- latest judgement of a replayed point wins.
  written_at_ms UInt64
)
ENGINE = ReplacingMergeTree(written_at_ms)
PARTITION BY toYYYYMM(day)
ORDER BY (org_id, machine_id, ts_ms)
SETTINGS index_granularity = 8192;
