// @adp/store: the platform's persistent state behind narrow, async ports cut by capability
// (tenancy, usage, baselines, machines, audit, metering). `openStores` picks the backend: the
// embedded DuckDB one by default, the ClickHouse one in the scale-out configuration, shared by every
// API replica and worker. Also the stream's stores (results and checkpoints, which implement
// @adp/streaming's ports; detection jobs) per backend, and the ClickHouse migration runner.
export type {
  ApiKeyKind,
  ApiKeyRecord,
  BaselineFineTuneStats,
  BaselineRecord,
  BaselineStats,
  CreateApiKeyResult,
  DeleteMachineResult,
  MachineDetection,
  MachineStatusRecord,
  MachineSummary,
  NewBaseline,
  ShapeReference,
  RegimeCounts,
  RegimeName,
  EndpointUsage,
  NewApiKey,
  NewOrganization,
  Plan,
  TenancyStore,
  UsageQuery,
  Organization,
  OrganizationUsage,
  Store,
  UsageStore,
  BaselineStore,
  MachineStore,
} from './types.js';
export { openStores, type StoresConfig } from './open-stores.js';
export { PLANS, REGIME_NAMES } from './types.js';
export {
  AUDIT_ACTOR_KINDS,
  AUDIT_PAGE_MAX,
  decodeAuditCursor,
  type AuditActor,
  type AuditActorKind,
  type AuditEvent,
  type AuditListOptions,
  type AuditPage,
  type AuditStore,
} from './audit.js';
export {
  HOUR_MS,
  LEDGER_STATUSES,
  METERING_DIMENSIONS,
  type HourlyCalls,
  type LedgerEntry,
  type LedgerStatus,
  type MarketplaceCustomerRecord,
  type MeteringDimension,
  type MeteringStore,
} from './metering.js';
export { overlapsRange, type BaselineActivityInterval, type BaselineActivityStore } from './baseline-activity.js';
export {
  MAX_EMAIL_LENGTH,
  SESSION_METHODS,
  isValidEmail,
  normaliseEmail,
  type AccountStore,
  type DashboardSession,
  type NewUserAccount,
  type SessionMethod,
  type UserAccount,
} from './accounts.js';
export {
  DELIVERY_STATUSES,
  FEEDBACK_LABELS,
  WEBHOOK_EVENTS,
  type AlertingStore,
  type DeliveryAttempt,
  type DeliveryStatus,
  type FeedbackLabel,
  type FeedbackPattern,
  type MachineAlert,
  type MachineFeedback,
  type WebhookDelivery,
  type WebhookEvent,
  type WebhookSecret,
  type WebhookTarget,
} from './alerting.js';
export { type DailyUsage, type DailyUsageQuery, type DailyUsageStore } from './usage-daily.js';
export { type LeaseStore } from './leases.js';
export { STORE_ERROR_CODES, StoreError, isStoreError, type StoreErrorCode } from './errors.js';
export {
  DEFAULT_ORGANIZATION_ID,
  DEFAULT_ORGANIZATION_NAME,
  EMBEDDED_STORE_FILE_NAME,
  RECENT_DETECTIONS_KEPT,
  openEmbeddedStore,
  type EmbeddedStoreOptions,
} from './embedded/duckdb-store.js';
export {
  BOOTSTRAP_CLAIM_WINDOW_MS,
  apiKeyIdFor,
  openClickHouseStore,
  type ClickHouseStoreOptions,
} from './clickhouse/clickhouse-store.js';

// The stream's stores: results and checkpoints (@adp/streaming's ports) and detection jobs, one
// adapter per backend; @adp/platform's openStreaming picks them from configuration.
export { createMemoryCheckpointStore, createMemoryResultStore } from './memory/stores.js';
export { createDuckDbCheckpointStore, type DuckDbCheckpointStoreOptions } from './embedded/duckdb-checkpoints.js';
export { createDuckDbResultStore, type DuckDbResultStoreOptions } from './embedded/duckdb-results.js';
export { createClickHouseResultStore, type ClickHouseResultStoreOptions } from './clickhouse/clickhouse-results.js';
export { createRedisCheckpointStore, type RedisCheckpointOptions } from './redis/checkpoints.js';
export * from './jobs.js';
export { createMemoryJobStore } from './memory/jobs.js';
export { createDuckDbJobStore, type DuckDbJobStoreOptions } from './embedded/duckdb-jobs.js';
export { createClickHouseJobStore, type ClickHouseJobStoreOptions } from './clickhouse/clickhouse-jobs.js';

// The ClickHouse schema (schemas/clickhouse/): the migration runner, identifier checks, the server's error code.
export { clickHouseServerCode } from './clickhouse/failures.js';
export {
  DEFAULT_CLICKHOUSE_MIGRATIONS_DIR,
  runClickHouseMigrations,
  type MigrationReport,
  type RunClickHouseMigrationsOptions,
} from './clickhouse/migrations.js';
export { SQL_IDENTIFIER, sqlIdentifier } from './clickhouse/identifiers.js';
