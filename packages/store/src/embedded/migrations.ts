// Schema of the embedded store, as an append-only list of migrations. Never edit a released
// migration; add a new one. Each runs in its own transaction and is recorded in schema_migrations.
//
// No foreign keys: DuckDB rewrites some updates of referenced rows as delete + insert and then
// rejects them, so referential integrity is checked by the store's methods instead.

export interface Migration {
  readonly version: number;
  readonly statements: readonly string[];
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    statements: [
      `CREATE TABLE organizations (
         id VARCHAR PRIMARY KEY,
         name VARCHAR NOT NULL,
         created_at TIMESTAMP NOT NULL,
         bootstrapped_at TIMESTAMP
       )`,
      `CREATE TABLE api_keys (
         id VARCHAR PRIMARY KEY,
         org_id VARCHAR NOT NULL,
         kind VARCHAR NOT NULL CHECK (kind IN ('live', 'test')),
         prefix VARCHAR NOT NULL,
         key_hash VARCHAR NOT NULL UNIQUE,
         created_at TIMESTAMP NOT NULL,
         last_used_at TIMESTAMP,
         revoked_at TIMESTAMP
       )`,
      // Aggregated per organization, endpoint and UTC day: a read per organization touches
      // (endpoints x days) rows however many calls there were, and days keep billing periods cheap.
      `CREATE TABLE usage_daily (
         org_id VARCHAR NOT NULL,
         endpoint VARCHAR NOT NULL,
         day DATE NOT NULL,
         points BIGINT NOT NULL,
         calls BIGINT NOT NULL,
         PRIMARY KEY (org_id, endpoint, day)
       )`,
    ],
  },
  {
    version: 2,
    statements: [
      // A machine exists per organization once it has a baseline or has been named in a
      // detection. The counters restart when its baseline is (re)written: `counters_since`.
      `CREATE TABLE machines (
         org_id VARCHAR NOT NULL,
         machine_id VARCHAR NOT NULL,
         first_seen_at TIMESTAMP NOT NULL,
         counters_since TIMESTAMP NOT NULL,
         detections_since BIGINT NOT NULL,
         points_since BIGINT NOT NULL,
         last_detection_at TIMESTAMP,
         PRIMARY KEY (org_id, machine_id)
       )`,
      // One baseline per machine; the fine-tuned predictor is a BLOB in the model package's
      // serialisation (NULL when only energies were given and fine-tuning was skipped).
      `CREATE TABLE baselines (
         org_id VARCHAR NOT NULL,
         machine_id VARCHAR NOT NULL,
         baseline_id VARCHAR NOT NULL,
         label VARCHAR,
         granularity VARCHAR,
         sensitivity INTEGER,
         energy_mean DOUBLE NOT NULL,
         energy_std DOUBLE NOT NULL,
         energy_p99 DOUBLE NOT NULL,
         num_windows BIGINT NOT NULL,
         series_length BIGINT NOT NULL,
         finetune_status VARCHAR NOT NULL CHECK (finetune_status IN ('completed', 'skipped')),
         finetune_final_loss DOUBLE,
         finetune_epochs_run INTEGER NOT NULL,
         finetune_epochs_max INTEGER NOT NULL,
         finetune_early_stopped BOOLEAN NOT NULL,
         finetune_windows BIGINT NOT NULL,
         finetune_duration_seconds DOUBLE NOT NULL,
         predictor_weights BLOB,
         normalisation_center DOUBLE,
         normalisation_scale DOUBLE,
         created_at TIMESTAMP NOT NULL,
         updated_at TIMESTAMP NOT NULL,
         PRIMARY KEY (org_id, machine_id)
       )`,
      // The last few detections per machine (pruned on insert), for the status endpoint.
      'CREATE SEQUENCE machine_detection_seq START 1',
      `CREATE TABLE machine_detections (
         seq BIGINT PRIMARY KEY,
         org_id VARCHAR NOT NULL,
         machine_id VARCHAR NOT NULL,
         detected_at TIMESTAMP NOT NULL,
         points BIGINT NOT NULL,
         with_baseline BOOLEAN NOT NULL,
         regime_healthy BIGINT NOT NULL,
         regime_active BIGINT NOT NULL,
         regime_transition BIGINT NOT NULL,
         regime_shock BIGINT NOT NULL,
         regime_unknown BIGINT NOT NULL
       )`,
    ],
  },
  {
    version: 3,
    statements: [
      // Plans, operator ids and disabling. Organizations from before plans existed are paid. (DuckDB
      // cannot add a NOT NULL column; the store always writes these.)
      "ALTER TABLE organizations ADD COLUMN plan VARCHAR DEFAULT 'paid'",
      'ALTER TABLE organizations ADD COLUMN external_id VARCHAR',
      'ALTER TABLE organizations ADD COLUMN disabled_at TIMESTAMP',
      "ALTER TABLE api_keys ADD COLUMN name VARCHAR DEFAULT ''",
      // The end of a rotated key's grace period.
      'ALTER TABLE api_keys ADD COLUMN expires_at TIMESTAMP',
      // Usage is kept per key kind too (test keys are never billed): a new key column needs a new
      // table. Usage recorded before kinds existed was billed, so it counts as live.
      `CREATE TABLE usage_by_kind_daily (
         org_id VARCHAR NOT NULL,
         key_kind VARCHAR NOT NULL CHECK (key_kind IN ('live', 'test')),
         endpoint VARCHAR NOT NULL,
         day DATE NOT NULL,
         points BIGINT NOT NULL,
         calls BIGINT NOT NULL,
         PRIMARY KEY (org_id, key_kind, endpoint, day)
       )`,
      `INSERT INTO usage_by_kind_daily (org_id, key_kind, endpoint, day, points, calls)
         SELECT org_id, 'live', endpoint, day, points, calls FROM usage_daily`,
      'DROP TABLE usage_daily',
    ],
  },
  {
    version: 4,
    statements: [
      // A multivariate machine's baseline lists its channels (JSON array of names); each channel's
      // own baseline is the row of `<machine_id>:<channel>`. NULL for a single series.
      'ALTER TABLE baselines ADD COLUMN channels VARCHAR',
    ],
  },
  {
    version: 5,
    statements: [
      // The audit log (../audit.ts): append-only, read per organization newest first.
      `CREATE TABLE audit_events (
         event_id VARCHAR NOT NULL,
         org_id VARCHAR NOT NULL,
         occurred_at TIMESTAMP NOT NULL,
         actor_kind VARCHAR NOT NULL CHECK (actor_kind IN ('key', 'jwt', 'admin', 'system')),
         actor_id VARCHAR NOT NULL,
         action VARCHAR NOT NULL,
         target VARCHAR NOT NULL,
         source_ip VARCHAR,
         PRIMARY KEY (org_id, event_id)
       )`,
      'CREATE INDEX audit_events_org_at ON audit_events (org_id, occurred_at)',
    ],
  },
  {
    version: 6,
    statements: [
      // Marketplace metering (../metering.ts): live calls per organization, dimension and UTC hour
      // (epoch ms of the hour's start), and the ledger of what was reported for each.
      `CREATE TABLE metering_hourly_calls (
         org_id VARCHAR NOT NULL,
         dimension VARCHAR NOT NULL,
         hour_ms BIGINT NOT NULL,
         calls BIGINT NOT NULL,
         PRIMARY KEY (org_id, dimension, hour_ms)
       )`,
      `CREATE TABLE metering_ledger (
         org_id VARCHAR NOT NULL,
         customer VARCHAR NOT NULL,
         dimension VARCHAR NOT NULL,
         hour_ms BIGINT NOT NULL,
         used BIGINT NOT NULL,
         carried_in BIGINT NOT NULL,
         quantity BIGINT NOT NULL,
         carried_out BIGINT NOT NULL,
         status VARCHAR NOT NULL CHECK (status IN ('pending', 'sent', 'accepted', 'rejected')),
         updated_at TIMESTAMP NOT NULL,
         PRIMARY KEY (org_id, dimension, hour_ms)
       )`,
    ],
  },
  {
    version: 7,
    statements: [
      // Dashboard accounts and sessions (../accounts.ts). An email signs in without naming its
      // organization, so it is unique across organizations. A session is found by its token's hash.
      `CREATE TABLE user_accounts (
         user_id VARCHAR PRIMARY KEY,
         org_id VARCHAR NOT NULL,
         email VARCHAR NOT NULL UNIQUE,
         password_hash VARCHAR NOT NULL,
         created_at TIMESTAMP NOT NULL
       )`,
      `CREATE TABLE dashboard_sessions (
         token_hash VARCHAR PRIMARY KEY,
         org_id VARCHAR NOT NULL,
         subject VARCHAR NOT NULL,
         display_name VARCHAR NOT NULL,
         method VARCHAR NOT NULL CHECK (method IN ('password', 'oidc')),
         created_at TIMESTAMP NOT NULL,
         expires_at TIMESTAMP NOT NULL
       )`,
    ],
  },
  {
    version: 8,
    statements: [
      // Named leases between replicas (../leases.ts), e.g. the hourly metering export's.
      `CREATE TABLE leases (
         name VARCHAR PRIMARY KEY,
         holder VARCHAR NOT NULL,
         expires_ms BIGINT NOT NULL
       )`,
      // The license a ledger entry was sent under, and what ResolveCustomer said of each
      // marketplace subscriber (../metering.ts).
      'ALTER TABLE metering_ledger ADD COLUMN license_arn VARCHAR',
      `CREATE TABLE marketplace_customers (
         org_id VARCHAR PRIMARY KEY,
         customer_identifier VARCHAR,
         aws_account_id VARCHAR,
         license_arn VARCHAR,
         updated_at TIMESTAMP NOT NULL
       )`,
    ],
  },
  {
    version: 9,
    statements: [
      // When each machine's baseline was active (../baseline-activity.ts), kept after deletions for
      // the monitored_machines billing of past hours. At most one interval per machine is open
      // (active_until_ms NULL).
      `CREATE TABLE baseline_activity (
         org_id VARCHAR NOT NULL,
         machine_id VARCHAR NOT NULL,
         active_from_ms BIGINT NOT NULL,
         active_until_ms BIGINT,
         PRIMARY KEY (org_id, machine_id, active_from_ms)
       )`,
      // The baselines that exist now have been active since they were created (a replacement keeps
      // created_at; a deletion removed the row, so a re-created baseline starts again).
      `INSERT INTO baseline_activity (org_id, machine_id, active_from_ms, active_until_ms)
         SELECT org_id, machine_id, epoch_ms(created_at), NULL FROM baselines`,
    ],
  },
  {
    version: 10,
    statements: [
      // A baseline's shape reference (../shape-reference.ts: little-endian float64s, so every value
      // reads back bit for bit). NULL for statistics-only and multivariate parent baselines, and
      // for the baselines written before it was kept.
      'ALTER TABLE baselines ADD COLUMN shape_reference BLOB',
    ],
  },
  {
    version: 11,
    statements: [
      // A multivariate machine's joint model of its channels (JSON text written by the API). NULL
      // for single series, channels' own baselines and baselines written before it was kept.
      'ALTER TABLE baselines ADD COLUMN machine_model VARCHAR',
    ],
  },
  {
    version: 12,
    statements: [
      // Webhook targets, their deliveries and machine feedback (../alerting.ts): each record one
      // JSON document, replaced whole; parent and status are copied out for the lists.
      `CREATE TABLE alerting (
         kind VARCHAR NOT NULL,
         org_id VARCHAR NOT NULL,
         id VARCHAR NOT NULL,
         parent VARCHAR NOT NULL,
         status VARCHAR NOT NULL,
         created_ms BIGINT NOT NULL,
         doc VARCHAR NOT NULL,
         PRIMARY KEY (kind, org_id, id)
       )`,
    ],
  },
];
