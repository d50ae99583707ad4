-- Detection jobs (POST /v1/jobs, docs/jobs.md) in the scale-out configuration: the job records,
-- the chunks a worker stages until a series is complete, the judged series and their per-point
-- results. Every table is a ReplacingMergeTree read with FINAL: a row written again (a replayed
-- chunk, a series judged again after a restart, a job's new status) replaces the earlier one
-- with the same sorting key, so each point has one result row.

-- One row per job; a change of status is a new row with a higher version. A removed job is a
-- row with deleted = 1.
CREATE TABLE IF NOT EXISTS {database}.jobs (
  org_id String,
  job_id String,
  -- The client's Idempotency-Key, '' when none.
  idempotency_key String,
  created_at_ms Int64,
  status String,
  points_total UInt64,
  -- The whole record (JobRecord in packages/streaming/src/jobs/contract.ts) as JSON.
  record String,
  deleted UInt8,
  version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (org_id, job_id);

-- A series' chunks as received (the Avro JobChunk message, base64), until the series is judged.
CREATE TABLE IF NOT EXISTS {database}.job_chunks (
  job_id String,
  series_index UInt32,
  chunk_index UInt32,
  message String,
  written_at_ms UInt64
)
ENGINE = ReplacingMergeTree(written_at_ms)
ORDER BY (job_id, series_index, chunk_index);

-- One row per judged series: its points, the period the engine used, its episodes (JSON).
CREATE TABLE IF NOT EXISTS {database}.job_series (
  job_id String,
  series_index UInt32,
  points UInt64,
  period UInt64,
  episodes String,
  written_at_ms UInt64
)
ENGINE = ReplacingMergeTree(written_at_ms)
ORDER BY (job_id, series_index);

-- One row per judged point of a job.
CREATE TABLE IF NOT EXISTS {database}.job_results (
  job_id String,
  series_index UInt32,
  point_index UInt64,
  -- Epoch milliseconds; NULL when the series has no timestamps.
  ts_ms Nullable(Int64),
  value Float64,
  expected_value Float64,
  upper_margin Float64,
  lower_margin Float64,
  is_anomaly UInt8,
  is_positive_anomaly UInt8,
  is_negative_anomaly UInt8,
  severity Float64,
  written_at_ms UInt64
)
ENGINE = ReplacingMergeTree(written_at_ms)
ORDER BY (job_id, series_index, point_index);
