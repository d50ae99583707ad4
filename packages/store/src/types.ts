// The platform store's contract. Everything here is plain data so that another implementation
// (ClickHouse for usage, Redis or Postgres for keys) can stand in without the callers noticing.

/** `live` keys are billed; `test` keys are for integration work. The prefix of the key says which. */
export type ApiKeyKind = 'live' | 'test';

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
}

/** What the store needs to record a key; the caller generates and hashes it. */
export interface NewApiKey {
  readonly kind: ApiKeyKind;
  readonly keyHash: string;
  readonly prefix: string;
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

export interface Store {
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
  /**
   * Adds one call carrying `points` points (a non-negative integer) to the organization's usage for
   * `endpoint`. Resolves once the increment is durable.
   */
  recordUsage(orgId: string, endpoint: string, points: number): Promise<void>;
  usageFor(orgId: string): Promise<OrganizationUsage>;
  /** Resolves when the store can serve a trivial query; rejects with a StoreError otherwise. */
  ping(): Promise<void>;
  /** Flushes pending writes and releases the database. Idempotent; later calls reject with STORE_CLOSED. */
  close(): Promise<void>;
}
