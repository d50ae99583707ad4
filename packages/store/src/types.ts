// The platform store's contract. Everything here is plain data so that another implementation
// (ClickHouse for usage, Redis or Postgres for keys) can stand in without the callers noticing.
import type { AuditStore } from './audit.js';
import type { BaselineActivityStore } from './baseline-activity.js';
import type { LeaseStore } from './leases.js';
import type { MeteringStore } from './metering.js';
import type { AccountStore } from './accounts.js';
import type { AlertingStore } from './alerting.js';
import type { DailyUsageStore } from './usage-daily.js';

/** `live` keys are billed; `test` keys are for integration work. The prefix of the key says which. */
export type ApiKeyKind = 'live' | 'test';

/** `free` organizations have a monthly quota of data points on live keys; `paid` ones have none. */
export type Plan = 'free' | 'paid';
export const PLANS: readonly Plan[] = ['free', 'paid'];

export interface Organization {
  readonly id: string;
  readonly name: string;
  readonly createdAt: Date;
  /**
   * When the first-start keys were issued for this organization; `null` until then. The app
   * treats `null` as "first start" so that a crash between creating the organization and issuing
   * its keys is repaired on the next start instead of leaving an organization nobody can use.
   */
  readonly bootstrappedAt: Date | null;
  /** Organizations that existed before plans did are `paid`. */
  readonly plan: Plan;
  /** The operator's own id for the organization (unique when set), e.g. an identity provider's. */
  readonly externalId: string | null;
  /** When the organization was disabled (none of its keys work any more); null while enabled. */
  readonly disabledAt: Date | null;
}

/** What an operator chooses when creating an organization; the rest comes from the store. */
export interface NewOrganization {
  readonly plan?: Plan;
  readonly externalId?: string | null;
}

export interface ApiKeyRecord {
  readonly id: string;
  readonly orgId: string;
  readonly kind: ApiKeyKind;
  /** The first characters of the key (`svc_live_AbCd`), enough to recognise it in a list, never enough to use it. */
  readonly prefix: string;
  /** Lower-case hex SHA-256 of the whole key. The plaintext is never stored. */
  readonly keyHash: string;
  readonly createdAt: Date;
  readonly lastUsedAt: Date | null;
  readonly revokedAt: Date | null;
  /** A label its organization chose (empty when none). */
  readonly name: string;
  /** When a rotated key stops working (the end of its grace period); null when it does not expire. */
  readonly expiresAt: Date | null;
}

/** What the store needs to record a key; the caller generates and hashes it. */
export interface NewApiKey {
  readonly kind: ApiKeyKind;
  readonly keyHash: string;
  readonly prefix: string;
  /** Default empty. At most 200 characters. */
  readonly name?: string;
}

/** Which usage `usageFor` sums. Absent fields: no restriction. */
export interface UsageQuery {
  /** Only calls made with keys of this kind. */
  readonly keyKind?: ApiKeyKind;
  /** Only usage on or after this instant's UTC day. */
  readonly since?: Date;
}

/**
 * The tenancy port: organizations and their API keys (first-start bootstrap, the operator's and the
 * organizations' own key management, authentication's lookups).
 */
export interface TenancyStore {
  /**
   * Creates an organization (already bootstrapped: its keys come from `createApiKey`), or returns
   * the existing one of that id unchanged. Idempotent. Plan default `paid`.
   */
  createOrganization(id: string, name: string, options?: NewOrganization): Promise<Organization>;
  /** Returns the default organization, creating it when absent. Idempotent. */
  ensureDefaultOrganization(): Promise<Organization>;
  /**
   * Atomically records the first-start keys of `orgId` and marks it bootstrapped. Returns the new
   * records, or `null` (and records nothing) when the organization was already bootstrapped.
   */
  completeBootstrap(orgId: string, keys: readonly NewApiKey[]): Promise<readonly ApiKeyRecord[] | null>;
  /** Records a key for `orgId` unless a key with the same hash exists (then returns that one). */
  createApiKey(orgId: string, key: NewApiKey): Promise<CreateApiKeyResult>;
  /** The key with this SHA-256 hex hash, revoked or not; `null` when unknown. */
  findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | null>;
  listApiKeys(orgId: string): Promise<readonly ApiKeyRecord[]>;
  /** Marks the key revoked. Returns false when no such key exists or it was already revoked. */
  revokeApiKey(keyId: string): Promise<boolean>;
  /** Sets `last_used_at`. Callers throttle this; it is a write. */
  touchApiKey(keyId: string, at: Date): Promise<void>;
  /** The organization, disabled or not; null when unknown. */
  getOrganization(orgId: string): Promise<Organization | null>;
  /** The organization whose external id this is; null when none. */
  findOrganizationByExternalId(externalId: string): Promise<Organization | null>;
  /** Every organization, oldest first. */
  listOrganizations(): Promise<readonly Organization[]>;
  /** Marks the organization disabled. Returns false when unknown or already disabled. */
  disableOrganization(orgId: string): Promise<boolean>;
  /**
   * Makes an active key stop working at `at` (a rotation's grace period). Returns false when no
   * such key exists, or it is revoked or already expiring.
   */
  expireApiKey(keyId: string, at: Date): Promise<boolean>;
}

export interface CreateApiKeyResult {
  readonly key: ApiKeyRecord;
  /** False when a key with the same hash already existed; `key` is then that existing key, unchanged. */
  readonly created: boolean;
}

export interface EndpointUsage {
  /** Usage label, e.g. `entire/detect`. */
  readonly endpoint: string;
  /** Sum of the points the calls carried. */
  readonly points: number;
  /** Number of calls. */
  readonly calls: number;
}

export interface OrganizationUsage {
  readonly orgId: string;
  readonly points: number;
  readonly calls: number;
  /** One entry per endpoint with any usage, sorted by endpoint label. */
  readonly byEndpoint: readonly EndpointUsage[];
}

/** An organization's usage from its per-endpoint sums (sorted by endpoint, as the stores read them). */
export function organizationUsage(orgId: string, byEndpoint: readonly EndpointUsage[]): OrganizationUsage {
  return {
    orgId,
    points: byEndpoint.reduce((sum, entry) => sum + entry.points, 0),
    calls: byEndpoint.reduce((sum, entry) => sum + entry.calls, 0),
    byEndpoint,
  };
}

/** Summary statistics of a machine's energies on healthy data (the z-score reference). */
export interface BaselineStats {
  readonly energyMean: number;
  readonly energyStd: number;
  readonly energyP99: number;
  /** Windows (points with history) the statistics were computed over. */
  readonly numWindows: number;
  /** Points in the series (or energies) the baseline was built from. */
  readonly seriesLength: number;
}

/** How the predictor was fine-tuned for the baseline; `skipped` when only energies were given. */
export interface BaselineFineTuneStats {
  readonly status: 'completed' | 'skipped';
  readonly finalLoss: number | null;
  readonly epochsRun: number;
  readonly epochsMax: number;
  readonly earlyStopped: boolean;
  readonly windows: number;
  readonly durationSeconds: number;
}

/** What the app hands the store to create or replace a machine's baseline. */
export interface NewBaseline {
  readonly machineId: string;
  readonly baselineId: string;
  readonly label: string | null;
  readonly granularity: string | null;
  readonly sensitivity: number | null;
  readonly stats: BaselineStats;
  readonly fineTuneStats: BaselineFineTuneStats;
  /** The fine-tuned predictor, serialised by the model package; null when fine-tuning was skipped. */
  readonly predictorWeights: Uint8Array | null;
  /** Value scaling used with the predictor; null when fine-tuning was skipped. */
  readonly normalisation: { readonly center: number; readonly scale: number } | null;
  /**
   * A multivariate machine's record: its channel names, in the request's order, each with its own
   * baseline under `<machineId>:<channel>`. Null (or absent) for a single series. The stores
   * always return it (null for baselines written without it).
   */
  readonly channels?: readonly string[] | null;
  /**
   * The healthy values new data's shapes are compared with (null or absent: none, as for a
   * statistics-only baseline or one written before shapes were kept). The stores always return it
   * (null for baselines written without it) and keep `values` bit for bit.
   */
  readonly shapeReference?: ShapeReference | null;
  /**
   * A multivariate machine's joint model of its channels (@adp/machine's MachineModel as JSON
   * text, opaque to the store, at most MACHINE_MODEL_MAX_CHARS). Null or absent: none. The stores
   * always return it (null for baselines written without it) and keep the text as written.
   */
  readonly machineModel?: string | null;
}

/** A baseline's shape reference: see pipelines/detection's shape-distance.ts. */
export interface ShapeReference {
  /** Subsequence length, in points (2 or more, at most a third of `values`). */
  readonly length: number;
  /** The healthy values, finite, at most 8,640 of them. */
  readonly values: readonly number[];
  /** Median nearest-neighbour distance of the values' own subsequences (finite, >= 0). */
  readonly center: number;
  /** Robust spread of those distances (finite, > 0). */
  readonly spread: number;
}

export interface BaselineRecord extends NewBaseline {
  readonly orgId: string;
  /** When this machine's first baseline was created; kept when the baseline is replaced. */
  readonly createdAt: Date;
  /** When the baseline was last written (equals createdAt for a first baseline). */
  readonly updatedAt: Date;
}

/** One machine of an organization, as a list shows it. */
export interface MachineSummary {
  readonly machineId: string;
  readonly firstSeenAt: Date;
  /** Null when the machine has no baseline (it was only seen in detections). */
  readonly baselineCreatedAt: Date | null;
  readonly numWindows: number | null;
  readonly label: string | null;
  /** The baseline's channel names (a multivariate machine); null otherwise. */
  readonly channels?: readonly string[] | null;
}

export { REGIMES as REGIME_NAMES, type Regime as RegimeName } from '@adp/domain';
import type { Regime as RegimeName } from '@adp/domain';
export type RegimeCounts = Readonly<Record<RegimeName, number>>;

/** One detection for a machine, as the status counters record it. */
export interface MachineDetection {
  readonly points: number;
  readonly regimeCounts: RegimeCounts;
  /** Whether the detection ran with the machine's baseline (fine-tuned or statistics-only). */
  readonly withBaseline: boolean;
}

export interface MachineStatusRecord {
  readonly machineId: string;
  readonly firstSeenAt: Date;
  readonly baseline: BaselineRecord | null;
  /** Start of the counters: the current baseline's updatedAt, else when the machine was first seen. */
  readonly countersSince: Date;
  readonly detectionsSince: number;
  readonly pointsSince: number;
  readonly lastDetectionAt: Date | null;
  /** The most recent detections (newest first), at most RECENT_DETECTIONS_KEPT. */
  readonly recentDetections: readonly (MachineDetection & { readonly at: Date })[];
}

export interface DeleteMachineResult {
  /** False when the organization has no such machine. */
  readonly deleted: boolean;
  /** True when a baseline (and its weights) was removed with the machine. */
  readonly baselineDeleted: boolean;
}

/** The usage port: data points and calls per organization, endpoint, key kind and UTC day. */
export interface UsageStore {
  /**
   * Adds one call carrying `points` points (a non-negative integer) to the organization's usage for
   * `endpoint`, made with a key of `keyKind` (default `live`). Resolves once the increment is durable.
   */
  recordUsage(orgId: string, endpoint: string, points: number, keyKind?: ApiKeyKind): Promise<void>;
  /** The organization's usage, all of it or what `query` selects. */
  usageFor(orgId: string, query?: UsageQuery): Promise<OrganizationUsage>;
}

/** The baselines port: a machine's baseline (statistics and fine-tuned weights). */
export interface BaselineStore {
  /**
   * Creates or replaces the baseline of `baseline.machineId` in `orgId`, creating the machine when
   * absent, and restarts its detection counters. Returns the stored record (with its weights).
   */
  upsertBaseline(orgId: string, baseline: NewBaseline): Promise<BaselineRecord>;
  /** The machine's baseline with its weights, or null. Machines are visible to their organization only. */
  getBaseline(orgId: string, machineId: string): Promise<BaselineRecord | null>;
}

/** The machines port: an organization's machines and their detection counters. */
export interface MachineStore {
  /** The organization's machines, sorted by machine id. */
  listMachines(orgId: string): Promise<readonly MachineSummary[]>;
  /** Removes the machine, its baseline, weights and counters. */
  deleteMachine(orgId: string, machineId: string): Promise<DeleteMachineResult>;
  /** Counts one detection for the machine, creating the machine when absent. */
  recordDetection(orgId: string, machineId: string, detection: MachineDetection): Promise<void>;
  /** Counters, baseline and recent detections of a machine, or null when the organization has no such machine. */
  machineStatus(orgId: string, machineId: string): Promise<MachineStatusRecord | null>;
}

/**
 * Every port on one database, as `openStores` returns them: each port by name, and their methods
 * on the object itself for callers that take several.
 */
export interface Store extends TenancyStore, UsageStore, BaselineStore, MachineStore {
  readonly tenancy: TenancyStore;
  readonly usage: UsageStore;
  readonly baselines: BaselineStore;
  readonly machines: MachineStore;
  /** When each machine's baseline was active, written by upsertBaseline and deleteMachine themselves. */
  readonly baselineActivity: BaselineActivityStore;
  /** The audit log, in the same database; closed with the store. */
  readonly audit: AuditStore;
  /** Marketplace metering (hourly call counts and the export ledger). Both stores have it; optional for stand-ins in tests. */
  readonly metering?: MeteringStore;
  /** Usage per UTC day. Both stores have it; optional for stand-ins in tests (then GET /v1/usage/daily answers 503). */
  readonly dailyUsage?: DailyUsageStore;
  /** Dashboard accounts and sessions. Both stores have it; optional for stand-ins in tests (then sign-in answers 503). */
  readonly accounts?: AccountStore;
  /** Webhook targets, their deliveries and machine feedback. Both stores have it; optional for stand-ins in tests (then /v1/webhooks and feedback answer 503). */
  readonly alerting?: AlertingStore;
  /** Named leases between replicas (the embedded store; ClickHouse has none). */
  readonly leases?: LeaseStore;
  /** Resolves when the store can serve a trivial query; rejects with a StoreError otherwise. */
  ping(): Promise<void>;
  /** Flushes pending writes and releases the database. Idempotent; later calls reject with STORE_CLOSED. */
  close(): Promise<void>;
}
