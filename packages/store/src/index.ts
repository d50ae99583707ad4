// @adp/store: the platform's persistent state (organizations, API keys, usage, baselines, machines)
// behind one narrow, async interface. The embedded DuckDB implementation is the default; the
// ClickHouse one is the scale-out configuration's, shared by every API replica and worker.
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
} from './types.js';
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
