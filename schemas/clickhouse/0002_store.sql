-- The platform store (packages/store/src/clickhouse/): organizations, API keys, usage, baselines,
-- machines and their detections, shared by every API replica and worker of the scale-out
-- configuration. The store's tables are prefixed `store_` so they sit beside `results` in the same
-- database.
--
-- ClickHouse has no transactions, no unique keys and (on 18.16) no lightweight DELETE or UPDATE, so
-- every change is an inserted row:
--   - entities (organizations, machines, baselines) are ReplacingMergeTree tables keyed by the
--     entity's id with a `version` column (a hybrid logical clock written by the store: greater than
--     the version the write was based on, and than the writer's wall clock in microseconds); the
--     store reads them with FINAL, filtering only on sorting-key columns inside FINAL;
--   - a deletion is a tombstone row (`deleted = 1`) with a higher version; the replaced rows, and
--     with them a deleted baseline's weights, leave the disk when ClickHouse merges the parts
--     (`OPTIMIZE TABLE ... FINAL` forces that);
--   - facts that only accumulate (key events, usage, detections, bootstrap claims) are plain rows
--     aggregated at read, so two replicas writing at once never overwrite each other.
-- Times are Int64 or UInt64 epoch milliseconds, UTC (18.16 has no DateTime64); flags are UInt8 (no
-- Bool on 18.16).
CREATE TABLE IF NOT EXISTS {database}.store_organizations (
  id String,
  name String,
  created_at_ms Int64,
  -- When the first-start keys were issued; NULL until then.
  bootstrapped_at_ms Nullable(Int64),
  version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY id;
-- Who is issuing an organization's first-start keys. A replica inserts a claim, then reads the live
-- claims of the last minute: it goes on only when its own is the only one, so at most one replica
-- issues the keys. Two that claim together both see two claims: each abandons its claim (a second row,
-- abandoned = 1, same claim_id and claimed_at_ms) and tries again after a random pause. A winner never
-- abandons, and a claim older than the window no longer counts, so a replica that died mid-bootstrap
-- blocks the next attempt for one minute at most.
CREATE TABLE IF NOT EXISTS {database}.store_bootstrap_claims (
  org_id String,
  claim_id String,
  claimed_at_ms Int64,
  abandoned UInt8
)
ENGINE = MergeTree
ORDER BY (org_id, claimed_at_ms, claim_id);
-- API keys as events: `created` carries the key (hash only, never the plaintext), `touched` a last
-- use, `revoked` a revocation. Every event row repeats the key's identity so a read is one GROUP BY
-- key_id. A touch therefore never overwrites a revocation written by another replica at the same
-- moment. ReplacingMergeTree keeps one row per key and event (the latest, by at_ms) when parts merge;
-- the store reads with max(), which gives the same answer before and after a merge.
CREATE TABLE IF NOT EXISTS {database}.store_api_keys (
  key_hash String,
  key_id String,
  event Enum8('created' = 1, 'touched' = 2, 'revoked' = 3),
  org_id String,
  kind Enum8('live' = 1, 'test' = 2),
  prefix String,
  created_at_ms UInt64,
  -- When the event happened: created_at_ms for `created`, the last use, or the revocation.
  at_ms UInt64
)
ENGINE = ReplacingMergeTree(at_ms)
ORDER BY (key_hash, key_id, event);
-- Usage per organization, endpoint label and UTC day. Each insert adds rows; SummingMergeTree adds
-- them up when parts merge and reads sum() them, so the result is the same before and after.
CREATE TABLE IF NOT EXISTS {database}.store_usage_daily (
  org_id String,
  endpoint String,
  day Date,
  points UInt64,
  calls UInt64
)
ENGINE = SummingMergeTree((points, calls))
PARTITION BY toYYYYMM(day)
ORDER BY (org_id, endpoint, day);
-- A machine of an organization. `incarnation` changes when a deleted machine comes back, so the
-- detections of its earlier life stay hidden; `version` is also the counters' generation: a baseline
-- write inserts a new version, and only detections recorded against the current version are counted.
CREATE TABLE IF NOT EXISTS {database}.store_machines (
  org_id String,
  machine_id String,
  incarnation String,
  first_seen_at_ms Int64,
  counters_since_ms Int64,
  deleted UInt8,
  version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (org_id, machine_id);
-- One baseline per machine. The fine-tuned predictor's bytes are base64 in a String (JSONEachRow
-- carries text); NULL when fine-tuning was skipped. The statistics and the normalisation are
-- real numbers kept as text (JavaScript's shortest round-trip form): 18.16 parses Float64 input
-- inexactly (about one random double in six comes back an ulp off), and a baseline must read back
-- exactly as it was written.
CREATE TABLE IF NOT EXISTS {database}.store_baselines (
  org_id String,
  machine_id String,
  baseline_id String,
  label Nullable(String),
  granularity Nullable(String),
  sensitivity Nullable(String),
  energy_mean String,
  energy_std String,
  energy_p99 String,
  num_windows UInt64,
  series_length UInt64,
  finetune_status Enum8('completed' = 1, 'skipped' = 2),
  finetune_final_loss Nullable(String),
  finetune_epochs_run UInt32,
  finetune_epochs_max UInt32,
  finetune_early_stopped UInt8,
  finetune_windows UInt64,
  finetune_duration_seconds String,
  predictor_weights_base64 Nullable(String),
  normalisation_center Nullable(String),
  normalisation_scale Nullable(String),
  created_at_ms Int64,
  updated_at_ms Int64,
  deleted UInt8,
  version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (org_id, machine_id);
-- One row per detection counted for a machine: the status counters are aggregates over the rows of
-- the machine's current incarnation and version, the recent list its newest rows. Rows of deleted
-- machines stay hidden (their incarnation is gone); retention drops old monthly partitions.
CREATE TABLE IF NOT EXISTS {database}.store_machine_detections (
  org_id String,
  machine_id String,
  incarnation String,
  -- The machine version the detection was counted against (see store_machines).
  machine_version UInt64,
  detected_at_ms Int64,
  -- Write order, to sort detections of the same millisecond.
  version UInt64,
  points UInt64,
  with_baseline UInt8,
  regime_healthy UInt64,
  regime_active UInt64,
  regime_transition UInt64,
  regime_shock UInt64,
  regime_unknown UInt64
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(toDate(toDateTime(intDiv(detected_at_ms, 1000), 'UTC')))
ORDER BY (org_id, machine_id, detected_at_ms);
