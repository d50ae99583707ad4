// The scale-out Store: every API replica and worker opens it on the same ClickHouse database, so
// they share organizations, keys, usage, baselines and machines. Runs on ClickHouse 18.16 (CI) and
// current releases: no query parameters, no DateTime64, Bool, TTL or lightweight DELETE/UPDATE.
//
// How values reach SQL: inserts send rows as JSONEachRow bodies (never SQL text); SELECTs
// interpolate strings through `sqlString` (escaped, tested over every byte) and integers through
// `sqlInteger`; the database name is checked by `sqlIdentifier`. The tables are described in
// schemas/clickhouse/0002_store.sql.
//
// ClickHouse has no transactions and no unique constraints. What that means here (also in the
// package README):
//   - check-then-insert is not atomic. Two replicas creating the same organization at once both
//     insert; the row with the higher version wins and one caller may have been handed the other's
//     name. Two replicas creating the same API key at once both report `created: true`, but they
//     write the same key id (derived from the hash), so it is still one key that one revocation
//     revokes. Two revocations at once both answer `true`.
//   - the first-start bootstrap is guarded by claims (see `completeBootstrap`): at most one replica
//     issues keys. Replicas that keep colliding give up after a few attempts (null, nothing issued)
//     and a replica that died holding a claim blocks others for BOOTSTRAP_CLAIM_WINDOW_MS; either way
//     the organization stays unbootstrapped and the next start repairs it. The guarantee assumes one
//     ClickHouse server (an acknowledged insert is visible to the next SELECT), which is what the
//     scale-out configuration runs; with Replicated tables use insert_quorum and
//     select_sequential_consistency.
//   - a multi-row change (a baseline write: machine row, then baseline row; a deletion: two
//     tombstones) can be cut halfway by a crash. The order is chosen so that a half-done write leaves
//     a usable state (a machine with restarted counters and its old baseline).
//   - a detection recorded while another replica rewrites the machine's baseline is counted against
//     the counters generation it read, so it may fall outside the restarted counters.
//   - usage, detections and key uses are group-committed (InsertBatcher). An insert that fails is not
//     retried (a retry after a lost acknowledgement would count twice); the promises of every call
//     in that batch reject instead.
import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { StreamingError, clickHouseServerCode, runClickHouseMigrations, sqlIdentifier } from '@adp/streaming';
import { DEFAULT_ORGANIZATION_ID, DEFAULT_ORGANIZATION_NAME, RECENT_DETECTIONS_KEPT } from '../constants.js';
import { StoreError, type StoreErrorCode } from '../errors.js';
import type {
  ApiKeyKind,
  ApiKeyRecord,
  BaselineRecord,
  CreateApiKeyResult,
  DeleteMachineResult,
  MachineDetection,
  MachineStatusRecord,
  MachineSummary,
  NewApiKey,
  NewBaseline,
  NewOrganization,
  Organization,
  OrganizationUsage,
  RegimeCounts,
  Store,
  UsageQuery,
} from '../types.js';
import { organizationUsage } from '../types.js';
import type { AuditStore } from '../audit.js';
import { ClickHouseAuditStore } from './clickhouse-audit.js';
import type { MeteringStore } from '../metering.js';
import { ClickHouseMeteringStore } from './clickhouse-metering.js';
import { InsertBatcher } from './insert-batcher.js';
import { sqlInteger, sqlString } from './sql.js';
import { epochMs, requireNonEmpty, validateBaseline, validateDetection, validateNewKey, validateNewOrganization } from './validation.js';
import { VersionClock } from './version-clock.js';

export interface ClickHouseStoreOptions {
  /** ClickHouse's HTTP interface, e.g. `http://127.0.0.1:8123`. */
  readonly url: string;
  /**
   * Database of the store's tables: created when absent and migrated at open with every file in
   * `migrationsDir`. A plain identifier (`[A-Za-z_][A-Za-z0-9_]{0,62}`); anything else is refused.
   */
  readonly database: string;
  /** Default `default`. */
  readonly username?: string;
  /** Default empty. */
  readonly password?: string;
  /** Longest a query or insert may take, in ms, before it fails as STORE_UNAVAILABLE. Default 10 000. */
  readonly requestTimeoutMs?: number;
  /** Longest `ping()` waits, in ms. Default 2 000: a readiness probe must answer quickly. */
  readonly pingTimeoutMs?: number;
  /**
   * Least time between two inserts into the same table from this process, ms, for the writes on the
   * request path (usage, detections, key use); what arrives meanwhile goes into the next insert.
   * Default 25: an idle store writes at once, a busy one makes at most 40 parts a second per table
   * (ClickHouse refuses inserts once a partition has 300 unmerged parts) at the cost of up to 25 ms
   * on the requests that wait. 0 inserts back to back.
   */
  readonly minInsertIntervalMs?: number;
  /** Where the migrations are. Default: schemas/clickhouse/ of this repository. */
  readonly migrationsDir?: string;
  /** Clock for the recorded times (created, used, revoked, detected) and usage days (UTC). Default: the system clock. */
  readonly now?: () => Date;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
const DEFAULT_PING_TIMEOUT_MS = 2_000;
const MAX_QUERY_BYTES = 16 * 1024 * 1024;
const DEFAULT_MIN_INSERT_INTERVAL_MS = 25;
/**
 * A bootstrap claim older than this no longer blocks a new attempt, so a replica that died between
 * its claim and its keys does not leave the organization without keys for ever. Far longer than the
 * few inserts a bootstrap takes, and than plausible clock skew between replicas.
 */
export const BOOTSTRAP_CLAIM_WINDOW_MS = 60_000;
/** Claims a replica makes before it gives up on a contended bootstrap. */
const BOOTSTRAP_ATTEMPTS = 6;
/** Base of the random pause between claims, ms; doubled each attempt (at most 1.6 s in all). */
const BOOTSTRAP_BACKOFF_MS = 25;

/** Opens the store on `options.database`, creating and migrating it when needed. */
export async function openClickHouseStore(options: ClickHouseStoreOptions): Promise<Store> {
  let database: string;
  try {
    database = sqlIdentifier(options.database, 'database');
  } catch (cause) {
    throw new StoreError('STORE_INVALID_ARGUMENT', 'open', describe(cause), { cause });
  }
  const durations = {
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    pingTimeoutMs: options.pingTimeoutMs ?? DEFAULT_PING_TIMEOUT_MS,
    minInsertIntervalMs: options.minInsertIntervalMs ?? DEFAULT_MIN_INSERT_INTERVAL_MS,
  };
  for (const [name, value] of Object.entries(durations)) {
    const least = name === 'minInsertIntervalMs' ? 0 : 1;
    if (!Number.isFinite(value) || value < least) {
      throw new StoreError('STORE_INVALID_ARGUMENT', 'open', `${name} must be a finite number of ms, at least ${least}`);
    }
  }
  let client: ClickHouseClient;
  try {
    client = createClient({
      url: options.url,
      username: options.username ?? 'default',
      password: options.password ?? '',
      request_timeout: durations.requestTimeoutMs,
      clickhouse_settings: {
        // 64-bit integers as JSON numbers: every one the store writes stays below 2^53.
        output_format_json_quote_64bit_integers: 0,
        // Caller strings are quoted into SELECTs; the 256 KiB default would turn a long machine id
        // into a syntax error. 16 MiB is far above anything the API's body limit lets through.
        max_query_size: String(MAX_QUERY_BYTES),
      },
      // Failures reach the caller as StoreErrors; the client's own logging would repeat them.
      log: { level: ClickHouseLogLevel.OFF },
    });
  } catch (cause) {
    throw new StoreError('STORE_INVALID_ARGUMENT', 'open', `bad ClickHouse configuration: ${describe(cause)}`, { cause });
  }
  try {
    await runClickHouseMigrations(client, {
      database,
      ...(options.migrationsDir === undefined ? {} : { migrationsDir: options.migrationsDir }),
    });
  } catch (cause) {
    await client.close().catch(() => undefined);
    // A refused or edited migration is a deployment error, not an outage, but either way the store
    // cannot serve; STORE_UNAVAILABLE keeps the API answering 503 while it is fixed.
    const where = cause instanceof StreamingError ? ` (${cause.code})` : '';
    throw new StoreError('STORE_UNAVAILABLE', 'open', `cannot migrate ${database}${where}: ${describe(cause)}`, { cause });
  }
  return new ClickHouseStore(
    client,
    database,
    durations.pingTimeoutMs,
    options.now ?? (() => new Date()),
    durations.minInsertIntervalMs,
  );
}

/**
 * The id of the key with this hash. Derived, not random, so that two replicas creating the same key
 * at the same moment write one key, not two (a second one would survive revoking the first). The
 * hash of a high-entropy secret's hash reveals nothing usable about the secret.
 */
export function apiKeyIdFor(keyHash: string): string {
  return `key_${createHash('sha256').update(`adp-store/api-key-id/${keyHash}`).digest('hex').slice(0, 32)}`;
}

/** An entity's latest row under FINAL: the live state (null when absent or deleted) and the version to write after. */
interface Versioned<T> {
  readonly live: T | null;
  readonly version: number;
}

interface OrganizationRow {
  id: string;
  name: string;
  created_at_ms: number;
  bootstrapped_at_ms: number | null;
  plan: string;
  external_id: string | null;
  disabled_at_ms: number | null;
  version: number;
}

interface KeyRow {
  key_id: string;
  the_hash: string;
  the_org: string;
  the_kind: string;
  the_prefix: string;
  created_ms: number;
  touches: number;
  last_used_ms: number;
  revocations: number;
  revoked_ms: number;
  the_name: string;
  expires_ms: number;
}

interface MachineRow {
  incarnation: string;
  first_seen_at_ms: number;
  counters_since_ms: number;
  deleted: number;
  version: number;
}

interface BaselineRow {
  org_id: string;
  machine_id: string;
  baseline_id: string;
  label: string | null;
  granularity: string | null;
  sensitivity: string | null;
  energy_mean: string;
  energy_std: string;
  energy_p99: string;
  num_windows: number;
  series_length: number;
  finetune_status: string;
  finetune_final_loss: string | null;
  finetune_epochs_run: number;
  finetune_epochs_max: number;
  finetune_early_stopped: number;
  finetune_windows: number;
  finetune_duration_seconds: string;
  predictor_weights_base64: string | null;
  normalisation_center: string | null;
  normalisation_scale: string | null;
  channels: string | null;
  created_at_ms: number;
  updated_at_ms: number;
  deleted: number;
  version: number;
}

interface DetectionRow {
  detected_at_ms: number;
  points: number;
  with_baseline: number;
  regime_healthy: number;
  regime_active: number;
  regime_transition: number;
  regime_shock: number;
  regime_unknown: number;
}

// Aliases never reuse a column's name: the old analyzer would substitute the alias into WHERE.
const KEY_SELECT = `SELECT key_id,
    argMaxIf(key_hash, at_ms, event = 'created') AS the_hash,
    argMaxIf(org_id, at_ms, event = 'created') AS the_org,
    toString(argMaxIf(kind, at_ms, event = 'created')) AS the_kind,
    argMaxIf(prefix, at_ms, event = 'created') AS the_prefix,
    argMaxIf(created_at_ms, at_ms, event = 'created') AS created_ms,
    argMaxIf(name, at_ms, event = 'created') AS the_name,
    argMaxIf(expires_at_ms, at_ms, event = 'created') AS expires_ms,
    countIf(event = 'touched') AS touches,
    maxIf(at_ms, event = 'touched') AS last_used_ms,
    countIf(event = 'revoked') AS revocations,
    maxIf(at_ms, event = 'revoked') AS revoked_ms`;

const BASELINE_FIELDS =
  'org_id, machine_id, baseline_id, label, granularity, sensitivity, energy_mean, energy_std, energy_p99, ' +
  'num_windows, series_length, finetune_status, finetune_final_loss, finetune_epochs_run, ' +
  'finetune_epochs_max, finetune_early_stopped, finetune_windows, finetune_duration_seconds, predictor_weights_base64, ' +
  'normalisation_center, normalisation_scale, channels, created_at_ms, updated_at_ms, deleted, version';

class ClickHouseStore implements Store {
  private readonly clock = new VersionClock();
  private readonly inFlight = new Set<Promise<unknown>>();
  private closed = false;
  private closing: Promise<void> | undefined;
  // The writes on the request path (metering, detections, key use) are group-committed.
  private readonly usageInserts: InsertBatcher;
  private readonly detectionInserts: InsertBatcher;
  private readonly keyUseInserts: InsertBatcher;
  readonly audit: AuditStore;
  readonly metering: MeteringStore;
  private readonly meteringCallInserts: InsertBatcher;
  private readonly t: Readonly<Record<
    'organizations' | 'claims' | 'keys' | 'usage' | 'usageByKind' | 'machines' | 'baselines' | 'detections',
    string
  >>;

  constructor(
    private readonly client: ClickHouseClient,
    database: string,
    private readonly pingTimeoutMs: number,
    private readonly now: () => Date,
    minInsertIntervalMs: number,
  ) {
    this.t = {
      organizations: `${database}.store_organizations`,
      claims: `${database}.store_bootstrap_claims`,
      keys: `${database}.store_api_keys`,
      usage: `${database}.store_usage_daily`,
      usageByKind: `${database}.store_usage_by_kind_daily`,
      machines: `${database}.store_machines`,
      baselines: `${database}.store_baselines`,
      detections: `${database}.store_machine_detections`,
    };
    const batcher = (operation: string, table: string) =>
      new InsertBatcher((rows) => this.insert(operation, table, rows), minInsertIntervalMs, (flush) => this.track(flush));
    this.usageInserts = batcher('recordUsage', this.t.usageByKind);
    this.detectionInserts = batcher('recordDetection', this.t.detections);
    this.keyUseInserts = batcher('touchApiKey', this.t.keys);
    this.audit = new ClickHouseAuditStore(
      {
        op: (operation, task) => this.op(operation, task),
        rows: (operation, query) => this.rows(operation, query),
        insert: (operation, table, values) => this.insert(operation, table, values),
      },
      `${database}.store_audit_events`,
    );
    this.meteringCallInserts = batcher('countCall', `${database}.store_metering_hourly_calls`);
    this.metering = new ClickHouseMeteringStore(
      {
        op: (operation, task) => this.op(operation, task),
        rows: (operation, query) => this.rows(operation, query),
        insert: (operation, table, values) => this.insert(operation, table, values),
        addCall: (row) => (this.closed ? Promise.reject(closedError('countCall')) : this.meteringCallInserts.add(row)),
        nextVersion: () => this.clock.next(),
      },
      {
        calls: `${database}.store_metering_hourly_calls`,
        ledger: `${database}.store_metering_ledger`,
        customers: `${database}.store_marketplace_customers`,
      },
    );
  }

  // ---- organizations and keys ------------------------------------------------------------------

  createOrganization(id: string, name: string, options: NewOrganization = {}): Promise<Organization> {
    return this.op('createOrganization', async (operation) => {
      requireNonEmpty(operation, { id, name });
      return this.ensureOrganization(operation, id, name, true, validateNewOrganization(operation, options));
    });
  }

  getOrganization(orgId: string): Promise<Organization | null> {
    return this.op('getOrganization', async (operation) => (await this.organizationById(operation, orgId)).live);
  }

  findOrganizationByExternalId(externalId: string): Promise<Organization | null> {
    return this.op('findOrganizationByExternalId', async (operation) => {
      const [row] = await this.rows<OrganizationRow>(
        operation,
        `SELECT ${ORGANIZATION_FIELDS} FROM ${this.t.organizations} FINAL
          WHERE external_id = ${sqlString(externalId)} ORDER BY created_at_ms, id LIMIT 1`,
      );
      return row ? toOrganization(row) : null;
    });
  }

  listOrganizations(): Promise<readonly Organization[]> {
    return this.op('listOrganizations', async (operation) => {
      const rows = await this.rows<OrganizationRow>(
        operation,
        `SELECT ${ORGANIZATION_FIELDS} FROM ${this.t.organizations} FINAL ORDER BY created_at_ms, id`,
      );
      return rows.map(toOrganization);
    });
  }

  disableOrganization(orgId: string): Promise<boolean> {
    return this.op('disableOrganization', async (operation) => {
      const organization = await this.organizationById(operation, orgId);
      if (!organization.live || organization.live.disabledAt !== null) return false;
      await this.insert(operation, this.t.organizations, [
        organizationRow({ ...organization.live, disabledAt: new Date(this.nowMs()) }, this.clock.next(organization.version)),
      ]);
      return true;
    });
  }

  expireApiKey(keyId: string, at: Date): Promise<boolean> {
    return this.op('expireApiKey', async (operation) => {
      const atMs = epochMs(operation, at);
      const key = await this.keyById(operation, keyId);
      if (!key || key.revokedAt !== null || key.expiresAt !== null) return false;
      // The key's `created` row again, later, with the expiry: see schemas/clickhouse/0003_tenancy.sql.
      const restatedAtMs = Math.max(this.nowMs(), key.createdAt.getTime() + 1);
      await this.insert(operation, this.t.keys, [keyEventRow({ ...key, expiresAt: new Date(atMs) }, 'created', restatedAtMs)]);
      return true;
    });
  }

  ensureDefaultOrganization(): Promise<Organization> {
    return this.op('ensureDefaultOrganization', (operation) =>
      this.ensureOrganization(operation, DEFAULT_ORGANIZATION_ID, DEFAULT_ORGANIZATION_NAME, false),
    );
  }

  completeBootstrap(orgId: string, keys: readonly NewApiKey[]): Promise<readonly ApiKeyRecord[] | null> {
    return this.op('completeBootstrap', async (operation) => {
      keys.forEach((key) => validateNewKey(operation, key));
      await this.requireOrganization(operation, orgId);
      // No transaction marks the organization and inserts the keys together, so replicas take turns
      // through claims (store_bootstrap_claims): at most one issues keys; one that finds another
      // claim abandons its own and tries again after a random pause, until the organization is
      // bootstrapped or the attempts run out (then null: the next start repairs it).
      for (let attempt = 0; attempt < BOOTSTRAP_ATTEMPTS; attempt++) {
        if (attempt > 0) await delay(Math.random() * BOOTSTRAP_BACKOFF_MS * 2 ** attempt);
        const before = await this.organizationById(operation, orgId);
        if (!before.live || before.live.bootstrappedAt !== null) return null;
        const claim = await this.claimBootstrap(operation, orgId);
        if (!claim) continue;
        try {
          // Read again under the claim: a replica that failed after marking the organization (its
          // acknowledgement lost) abandoned its claim, and must not be followed by a second set of keys.
          const organization = await this.organizationById(operation, orgId);
          if (!organization.live || organization.live.bootstrappedAt !== null) return null;
          return await this.issueBootstrapKeys(operation, organization, keys);
        } catch (cause) {
          // Let another attempt go ahead now rather than after the claim window.
          await claim.abandon().catch(() => undefined);
          throw cause;
        }
      }
      return null;
    });
  }

  createApiKey(orgId: string, key: NewApiKey): Promise<CreateApiKeyResult> {
    return this.op('createApiKey', async (operation) => {
      validateNewKey(operation, key);
      await this.requireOrganization(operation, orgId);
      const existing = await this.keyByHash(operation, key.keyHash);
      if (existing) return { key: existing, created: false };
      const nowMs = this.nowMs();
      const record = keyRecord(orgId, key, nowMs);
      await this.insert(operation, this.t.keys, [keyEventRow(record, 'created', nowMs)]);
      return { key: record, created: true };
    });
  }

  findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | null> {
    return this.op('findApiKeyByHash', (operation) => this.keyByHash(operation, keyHash));
  }

  listApiKeys(orgId: string): Promise<readonly ApiKeyRecord[]> {
    return this.op('listApiKeys', (operation) => this.keysWhere(operation, `org_id = ${sqlString(orgId)}`));
  }

  revokeApiKey(keyId: string): Promise<boolean> {
    return this.op('revokeApiKey', async (operation) => {
      const key = await this.keyById(operation, keyId);
      if (!key || key.revokedAt !== null) return false;
      const nowMs = this.nowMs();
      await this.insert(operation, this.t.keys, [keyEventRow(key, 'revoked', nowMs)]);
      return true;
    });
  }

  touchApiKey(keyId: string, at: Date): Promise<void> {
    return this.op('touchApiKey', async (operation) => {
      const atMs = epochMs(operation, at);
      const key = await this.keyById(operation, keyId);
      if (!key) return;
      await this.keyUseInserts.add(keyEventRow(key, 'touched', atMs));
    });
  }

  // ---- usage -----------------------------------------------------------------------------------

  recordUsage(orgId: string, endpoint: string, points: number, keyKind: ApiKeyKind = 'live'): Promise<void> {
    if (this.closed) return Promise.reject(closedError('recordUsage'));
    const validIds = typeof orgId === 'string' && typeof endpoint === 'string' && orgId.length > 0 && endpoint.length > 0;
    if (!validIds || !Number.isSafeInteger(points) || points < 0 || (keyKind !== 'live' && keyKind !== 'test')) {
      return Promise.reject(
        new StoreError(
          'STORE_INVALID_ARGUMENT',
          'recordUsage',
          'orgId and endpoint must be non-empty, points a non-negative integer and keyKind live or test',
        ),
      );
    }
    let day: string;
    try {
      day = new Date(this.nowMs()).toISOString().slice(0, 10);
    } catch (cause) {
      return Promise.reject(cause);
    }
    // One row per call; SummingMergeTree folds them together when parts merge.
    return this.usageInserts.add({ org_id: orgId, key_kind: keyKind, endpoint, day, points, calls: 1 });
  }

  usageFor(orgId: string, query: UsageQuery = {}): Promise<OrganizationUsage> {
    return this.op('usageFor', async (operation) => {
      if (query.keyKind !== undefined && query.keyKind !== 'live' && query.keyKind !== 'test') {
        throw new StoreError('STORE_INVALID_ARGUMENT', operation, 'keyKind must be live or test');
      }
      const since = query.since === undefined ? '' : ` AND day >= toDate(${sqlString(new Date(epochMs(operation, query.since)).toISOString().slice(0, 10))})`;
      const org = `org_id = ${sqlString(orgId)}`;
      // Usage from before kinds were recorded (store_usage_daily) was billed: it counts as live.
      const parts = [`SELECT endpoint, points, calls FROM ${this.t.usageByKind} WHERE ${org}${since}${query.keyKind ? ` AND key_kind = ${sqlString(query.keyKind)}` : ''}`];
      if (query.keyKind !== 'test') parts.push(`SELECT endpoint, points, calls FROM ${this.t.usage} WHERE ${org}${since}`);
      const byEndpoint = (
        await this.rows<{ endpoint: string; total_points: number; total_calls: number }>(
          operation,
          `SELECT endpoint, sum(points) AS total_points, sum(calls) AS total_calls FROM (${parts.join(' UNION ALL ')})
            GROUP BY endpoint ORDER BY endpoint`,
        )
      ).map((row) => ({ endpoint: row.endpoint, points: Number(row.total_points), calls: Number(row.total_calls) }));
      return organizationUsage(orgId, byEndpoint);
    });
  }

  // ---- machines and baselines ------------------------------------------------------------------

  upsertBaseline(orgId: string, baseline: NewBaseline): Promise<BaselineRecord> {
    return this.op('upsertBaseline', async (operation) => {
      validateBaseline(orgId, baseline);
      const [machine, previous] = await Promise.all([
        this.machineOf(operation, orgId, baseline.machineId),
        this.baselineOf(operation, orgId, baseline.machineId),
      ]);
      const nowMs = this.nowMs();
      // The machine first: a crash between the two inserts leaves restarted counters beside the old
      // baseline, which is harmless; the other order could leave a baseline without its machine.
      await this.insert(operation, this.t.machines, [
        {
          org_id: orgId,
          machine_id: baseline.machineId,
          incarnation: machine.live?.incarnation ?? randomUUID(),
          first_seen_at_ms: machine.live?.first_seen_at_ms ?? nowMs,
          counters_since_ms: nowMs,
          deleted: 0,
          version: this.clock.next(machine.version),
        },
      ]);
      const record: BaselineRecord = {
        ...baseline,
        orgId,
        predictorWeights: baseline.predictorWeights === null ? null : new Uint8Array(baseline.predictorWeights),
        createdAt: previous.live?.createdAt ?? new Date(nowMs),
        updatedAt: new Date(nowMs),
        channels: baseline.channels ? [...baseline.channels] : null,
      };
      await this.insert(operation, this.t.baselines, [baselineRow(record, this.clock.next(previous.version))]);
      return record;
    });
  }

  getBaseline(orgId: string, machineId: string): Promise<BaselineRecord | null> {
    return this.op('getBaseline', async (operation) => (await this.baselineOf(operation, orgId, machineId)).live);
  }

  listMachines(orgId: string): Promise<readonly MachineSummary[]> {
    return this.op('listMachines', async (operation) => {
      // FINAL filters only on sorting-key columns; `deleted` is looked at afterwards, because a
      // condition on it inside FINAL could drop a tombstone before it hides the row it replaces.
      const [machines, baselines] = await Promise.all([
        this.rows<{ machine_id: string; first_seen_at_ms: number; deleted: number }>(
          operation,
          `SELECT machine_id, first_seen_at_ms, deleted FROM ${this.t.machines} FINAL
            WHERE org_id = ${sqlString(orgId)} ORDER BY machine_id`,
        ),
        this.rows<{ machine_id: string; created_at_ms: number; num_windows: number; label: string | null; channels: string | null; deleted: number }>(
          operation,
          `SELECT machine_id, created_at_ms, num_windows, label, channels, deleted FROM ${this.t.baselines} FINAL
            WHERE org_id = ${sqlString(orgId)}`,
        ),
      ]);
      const baselineOf = new Map(baselines.filter((row) => row.deleted === 0).map((row) => [row.machine_id, row]));
      return machines
        .filter((row) => row.deleted === 0)
        .map((row) => {
          const baseline = baselineOf.get(row.machine_id);
          return {
            machineId: row.machine_id,
            firstSeenAt: new Date(row.first_seen_at_ms),
            baselineCreatedAt: baseline ? new Date(baseline.created_at_ms) : null,
            numWindows: baseline ? Number(baseline.num_windows) : null,
            label: baseline ? baseline.label : null,
            channels: baseline ? channelsOf(baseline.channels) : null,
          };
        });
    });
  }

  deleteMachine(orgId: string, machineId: string): Promise<DeleteMachineResult> {
    return this.op('deleteMachine', async (operation) => {
      const [machine, baseline] = await Promise.all([
        this.machineOf(operation, orgId, machineId),
        this.baselineOf(operation, orgId, machineId),
      ]);
      // The baseline first: a crash in between leaves a machine without a baseline (it then lists
      // as seen-only), never a deleted machine whose baseline a later machine of that id inherits.
      if (baseline.live) {
        await this.insert(operation, this.t.baselines, [baselineTombstone(orgId, machineId, this.clock.next(baseline.version))]);
      }
      if (machine.live) {
        await this.insert(operation, this.t.machines, [
          { ...machine.live, org_id: orgId, machine_id: machineId, deleted: 1, version: this.clock.next(machine.version) },
        ]);
      }
      return { deleted: machine.live !== null, baselineDeleted: baseline.live !== null };
    });
  }

  recordDetection(orgId: string, machineId: string, detection: MachineDetection): Promise<void> {
    return this.op('recordDetection', async (operation) => {
      validateDetection(orgId, machineId, detection);
      const machine = await this.machineOf(operation, orgId, machineId);
      const nowMs = this.nowMs();
      let live = machine.live;
      if (!live) {
        live = {
          incarnation: randomUUID(),
          first_seen_at_ms: nowMs,
          counters_since_ms: nowMs,
          deleted: 0,
          version: this.clock.next(machine.version),
        };
        await this.insert(operation, this.t.machines, [{ org_id: orgId, machine_id: machineId, ...live }]);
      }
      const counts = detection.regimeCounts;
      await this.detectionInserts.add({
          org_id: orgId,
          machine_id: machineId,
          incarnation: live.incarnation,
          machine_version: live.version,
          detected_at_ms: nowMs,
          version: this.clock.next(),
          points: detection.points,
          with_baseline: detection.withBaseline ? 1 : 0,
          regime_healthy: counts.HEALTHY,
          regime_active: counts.ACTIVE,
          regime_transition: counts.TRANSITION,
          regime_shock: counts.SHOCK,
          regime_unknown: counts.UNKNOWN,
      });
    });
  }

  machineStatus(orgId: string, machineId: string): Promise<MachineStatusRecord | null> {
    return this.op('machineStatus', async (operation) => {
      const machine = (await this.machineOf(operation, orgId, machineId)).live;
      if (!machine) return null;
      const where = `org_id = ${sqlString(orgId)} AND machine_id = ${sqlString(machineId)}
        AND incarnation = ${sqlString(machine.incarnation)}`;
      const [baseline, counters, recent] = await Promise.all([
        this.baselineOf(operation, orgId, machineId),
        this.rows<{ detections: number; points_since: number; total: number; last_ms: number }>(
          operation,
          `SELECT countIf(machine_version = ${sqlInteger(machine.version)}) AS detections,
                  sumIf(points, machine_version = ${sqlInteger(machine.version)}) AS points_since,
                  count() AS total, max(detected_at_ms) AS last_ms
             FROM ${this.t.detections} WHERE ${where}`,
        ),
        this.rows<DetectionRow>(
          operation,
          `SELECT detected_at_ms, points, with_baseline, regime_healthy, regime_active, regime_transition,
                  regime_shock, regime_unknown
             FROM ${this.t.detections} WHERE ${where}
            ORDER BY detected_at_ms DESC, version DESC LIMIT ${sqlInteger(RECENT_DETECTIONS_KEPT)}`,
        ),
      ]);
      const summary = counters[0];
      return {
        machineId,
        firstSeenAt: new Date(machine.first_seen_at_ms),
        baseline: baseline.live,
        countersSince: new Date(machine.counters_since_ms),
        detectionsSince: Number(summary?.detections ?? 0),
        pointsSince: Number(summary?.points_since ?? 0),
        lastDetectionAt: summary && Number(summary.total) > 0 ? new Date(Number(summary.last_ms)) : null,
        recentDetections: recent.map((row) => ({
          at: new Date(Number(row.detected_at_ms)),
          points: Number(row.points),
          withBaseline: row.with_baseline === 1,
          regimeCounts: regimeCountsOf(row),
        })),
      };
    });
  }

  // ---- lifecycle -------------------------------------------------------------------------------

  ping(): Promise<void> {
    return this.op('ping', async (operation) => {
      // A SELECT, not the /ping endpoint: it proves the credentials work too, and costs as little.
      const result = await this.client.ping({ select: true, abort_signal: AbortSignal.timeout(this.pingTimeoutMs) });
      if (!result.success) throw storeErrorFrom(operation, result.error);
    });
  }

  close(): Promise<void> {
    if (!this.closing) {
      this.closed = true;
      this.closing = this.shutdown();
    }
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    try {
      // Writes accepted before close wait in a batcher or are in flight; both are tracked.
      while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    } finally {
      await this.client.close();
    }
  }

  // ---- helpers ---------------------------------------------------------------------------------

  private track<T>(promise: Promise<T>): Promise<T> {
    this.inFlight.add(promise);
    const forget = () => this.inFlight.delete(promise);
    promise.then(forget, forget);
    return promise;
  }

  /** Runs `task`, refusing after close, and turns every failure into a StoreError. */
  private op<T>(operation: string, task: (operation: string) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(closedError(operation));
    return this.track(
      (async () => {
        try {
          return await task(operation);
        } catch (cause) {
          if (cause instanceof StoreError) throw cause;
          throw new StoreError('STORE_QUERY_FAILED', operation, describe(cause), { cause });
        }
      })(),
    );
  }

  private async rows<T>(operation: string, query: string): Promise<T[]> {
    try {
      const result = await this.client.query({ query, format: 'JSONEachRow' });
      return await result.json<T>();
    } catch (cause) {
      throw storeErrorFrom(operation, cause);
    }
  }

  private async insert(operation: string, table: string, values: readonly Record<string, unknown>[]): Promise<void> {
    try {
      // JSONEachRow always: the client's default format is unknown to 18.16.
      await this.client.insert({ table, values: [...values], format: 'JSONEachRow' });
    } catch (cause) {
      throw storeErrorFrom(operation, cause);
    }
  }

  /** Claims the bootstrap of `orgId`; null (with the claim abandoned) when another live claim exists. */
  private async claimBootstrap(operation: string, orgId: string): Promise<{ abandon(): Promise<void> } | null> {
    const claim = { org_id: orgId, claim_id: randomUUID(), claimed_at_ms: Date.now(), abandoned: 0 };
    await this.insert(operation, this.t.claims, [claim]);
    const abandon = () => this.insert(operation, this.t.claims, [{ ...claim, abandoned: 1 }]);
    const live = await this.rows<{ claim_id: string }>(
      operation,
      `SELECT claim_id FROM ${this.t.claims}
        WHERE org_id = ${sqlString(orgId)} AND claimed_at_ms >= ${sqlInteger(claim.claimed_at_ms - BOOTSTRAP_CLAIM_WINDOW_MS)}
        GROUP BY claim_id HAVING max(abandoned) = 0`,
    );
    if (live.length === 1 && live[0]?.claim_id === claim.claim_id) return { abandon };
    await abandon();
    return null;
  }

  private async issueBootstrapKeys(
    operation: string,
    organization: Versioned<Organization>,
    keys: readonly NewApiKey[],
  ): Promise<readonly ApiKeyRecord[] | null> {
    const current = organization.live;
    if (!current) return null;
    const nowMs = this.nowMs();
    const records = keys.map((key) => keyRecord(current.id, key, nowMs));
    if (records.length > 0) {
      await this.insert(operation, this.t.keys, records.map((record) => keyEventRow(record, 'created', nowMs)));
    }
    // Marked after the keys: a crash in between leaves an unbootstrapped organization (repaired by
    // the next start), never a bootstrapped one without its keys.
    await this.insert(operation, this.t.organizations, [
      organizationRow({ ...current, bootstrappedAt: new Date(nowMs) }, this.clock.next(organization.version)),
    ]);
    return records;
  }

  private async ensureOrganization(
    operation: string,
    id: string,
    name: string,
    bootstrapped: boolean,
    options: { readonly plan: Organization['plan']; readonly externalId: string | null } = { plan: 'paid', externalId: null },
  ): Promise<Organization> {
    const existing = await this.organizationById(operation, id);
    if (existing.live) return existing.live;
    const nowMs = this.nowMs();
    const created: Organization = {
      id,
      name,
      createdAt: new Date(nowMs),
      bootstrappedAt: bootstrapped ? new Date(nowMs) : null,
      plan: options.plan,
      externalId: options.externalId,
      disabledAt: null,
    };
    await this.insert(operation, this.t.organizations, [organizationRow(created, this.clock.next(existing.version))]);
    // Read back rather than answer from memory: when another replica created it at the same moment,
    // every caller then sees the one row that won.
    const stored = await this.organizationById(operation, id);
    if (!stored.live) throw new StoreError('STORE_QUERY_FAILED', operation, 'organization missing right after insert');
    return stored.live;
  }

  private async organizationById(operation: string, id: string): Promise<Versioned<Organization>> {
    const [row] = await this.rows<OrganizationRow>(
      operation,
      `SELECT ${ORGANIZATION_FIELDS} FROM ${this.t.organizations} FINAL WHERE id = ${sqlString(id)}`,
    );
    if (!row) return { live: null, version: 0 };
    return { live: toOrganization(row), version: Number(row.version) };
  }

  private async requireOrganization(operation: string, orgId: string): Promise<Versioned<Organization>> {
    const organization = await this.organizationById(operation, orgId);
    if (!organization.live) {
      throw new StoreError('STORE_INVALID_ARGUMENT', operation, `unknown organization ${JSON.stringify(orgId)}`);
    }
    return organization;
  }

  private async keysWhere(operation: string, condition: string): Promise<ApiKeyRecord[]> {
    const rows = await this.rows<KeyRow>(
      operation,
      `${KEY_SELECT} FROM ${this.t.keys} WHERE ${condition}
        GROUP BY key_id HAVING countIf(event = 'created') > 0 ORDER BY created_ms, key_id`,
    );
    return rows.map(toApiKey);
  }

  private async keyByHash(operation: string, keyHash: string): Promise<ApiKeyRecord | null> {
    return (await this.keysWhere(operation, `key_hash = ${sqlString(keyHash)}`))[0] ?? null;
  }

  private async keyById(operation: string, keyId: string): Promise<ApiKeyRecord | null> {
    return (await this.keysWhere(operation, `key_id = ${sqlString(keyId)}`))[0] ?? null;
  }

  private async machineOf(operation: string, orgId: string, machineId: string): Promise<Versioned<MachineRow>> {
    const [row] = await this.rows<MachineRow>(
      operation,
      `SELECT incarnation, first_seen_at_ms, counters_since_ms, deleted, version FROM ${this.t.machines} FINAL
        WHERE org_id = ${sqlString(orgId)} AND machine_id = ${sqlString(machineId)}`,
    );
    if (!row) return { live: null, version: 0 };
    const version = Number(row.version);
    return { live: row.deleted === 0 ? { ...row, version } : null, version };
  }

  private async baselineOf(operation: string, orgId: string, machineId: string): Promise<Versioned<BaselineRecord>> {
    const [row] = await this.rows<BaselineRow>(
      operation,
      `SELECT ${BASELINE_FIELDS} FROM ${this.t.baselines} FINAL
        WHERE org_id = ${sqlString(orgId)} AND machine_id = ${sqlString(machineId)}`,
    );
    if (!row) return { live: null, version: 0 };
    return { live: row.deleted === 0 ? toBaseline(row) : null, version: Number(row.version) };
  }

  private nowMs(): number {
    const ms = this.now().getTime();
    if (!Number.isSafeInteger(ms)) throw new StoreError('STORE_INVALID_ARGUMENT', 'now', 'the clock returned an invalid date');
    return ms;
  }
}

function keyRecord(orgId: string, key: NewApiKey, createdAtMs: number): ApiKeyRecord {
  return {
    id: apiKeyIdFor(key.keyHash),
    orgId,
    kind: key.kind,
    prefix: key.prefix,
    keyHash: key.keyHash,
    createdAt: new Date(createdAtMs),
    lastUsedAt: null,
    revokedAt: null,
    name: key.name ?? '',
    expiresAt: null,
  };
}

const ORGANIZATION_FIELDS = 'id, name, created_at_ms, bootstrapped_at_ms, plan, external_id, disabled_at_ms, version';

/** A row of store_organizations with every column, so a newer version never falls back to a default. */
function organizationRow(organization: Organization, version: number): Record<string, unknown> {
  return {
    id: organization.id,
    name: organization.name,
    created_at_ms: organization.createdAt.getTime(),
    bootstrapped_at_ms: organization.bootstrappedAt?.getTime() ?? null,
    plan: organization.plan,
    external_id: organization.externalId,
    disabled_at_ms: organization.disabledAt?.getTime() ?? null,
    version,
  };
}

function toOrganization(row: OrganizationRow): Organization {
  return {
    id: row.id,
    name: row.name,
    createdAt: new Date(Number(row.created_at_ms)),
    bootstrappedAt: row.bootstrapped_at_ms === null ? null : new Date(Number(row.bootstrapped_at_ms)),
    plan: row.plan === 'free' ? 'free' : 'paid',
    externalId: row.external_id,
    disabledAt: row.disabled_at_ms === null ? null : new Date(Number(row.disabled_at_ms)),
  };
}

/** A row of store_api_keys: the key's identity, repeated on every event, and when the event happened. */
function keyEventRow(key: ApiKeyRecord, event: 'created' | 'touched' | 'revoked', atMs: number): Record<string, unknown> {
  return {
    key_hash: key.keyHash,
    key_id: key.id,
    event,
    org_id: key.orgId,
    kind: key.kind,
    prefix: key.prefix,
    created_at_ms: key.createdAt.getTime(),
    name: key.name,
    expires_at_ms: key.expiresAt?.getTime() ?? 0,
    at_ms: atMs,
  };
}

function toApiKey(row: KeyRow): ApiKeyRecord {
  return {
    id: row.key_id,
    orgId: row.the_org,
    kind: row.the_kind as ApiKeyKind,
    prefix: row.the_prefix,
    keyHash: row.the_hash,
    createdAt: new Date(Number(row.created_ms)),
    lastUsedAt: Number(row.touches) > 0 ? new Date(Number(row.last_used_ms)) : null,
    revokedAt: Number(row.revocations) > 0 ? new Date(Number(row.revoked_ms)) : null,
    name: row.the_name,
    expiresAt: Number(row.expires_ms) > 0 ? new Date(Number(row.expires_ms)) : null,
  };
}

/** A real number as exact text: JavaScript's shortest round-trip form, keeping the sign of zero. */
function exactText(value: number): string {
  return Object.is(value, -0) ? '-0' : String(value);
}

function exactTextOrNull(value: number | null): string | null {
  return value === null ? null : exactText(value);
}

function numberOrNull(text: string | null): number | null {
  return text === null ? null : Number(text);
}

function baselineRow(record: BaselineRecord, version: number): Record<string, unknown> {
  const { stats, fineTuneStats: tune } = record;
  return {
    org_id: record.orgId,
    machine_id: record.machineId,
    baseline_id: record.baselineId,
    label: record.label,
    granularity: record.granularity,
    sensitivity: exactTextOrNull(record.sensitivity),
    energy_mean: exactText(stats.energyMean),
    energy_std: exactText(stats.energyStd),
    energy_p99: exactText(stats.energyP99),
    num_windows: stats.numWindows,
    series_length: stats.seriesLength,
    finetune_status: tune.status,
    finetune_final_loss: exactTextOrNull(tune.finalLoss),
    finetune_epochs_run: tune.epochsRun,
    finetune_epochs_max: tune.epochsMax,
    finetune_early_stopped: tune.earlyStopped ? 1 : 0,
    finetune_windows: tune.windows,
    finetune_duration_seconds: exactText(tune.durationSeconds),
    predictor_weights_base64:
      record.predictorWeights === null
        ? null
        : Buffer.from(record.predictorWeights.buffer, record.predictorWeights.byteOffset, record.predictorWeights.byteLength).toString('base64'),
    normalisation_center: exactTextOrNull(record.normalisation?.center ?? null),
    normalisation_scale: exactTextOrNull(record.normalisation?.scale ?? null),
    channels: record.channels ? JSON.stringify(record.channels) : null,
    created_at_ms: record.createdAt.getTime(),
    updated_at_ms: record.updatedAt.getTime(),
    deleted: 0,
    version,
  };
}

/** The row that hides a deleted baseline; its weights are gone from disk once the parts merge. */
function baselineTombstone(orgId: string, machineId: string, version: number): Record<string, unknown> {
  return {
    org_id: orgId,
    machine_id: machineId,
    baseline_id: '',
    label: null,
    granularity: null,
    sensitivity: null,
    energy_mean: '0',
    energy_std: '0',
    energy_p99: '0',
    num_windows: 0,
    series_length: 0,
    finetune_status: 'skipped',
    finetune_final_loss: null,
    finetune_epochs_run: 0,
    finetune_epochs_max: 0,
    finetune_early_stopped: 0,
    finetune_windows: 0,
    finetune_duration_seconds: '0',
    predictor_weights_base64: null,
    normalisation_center: null,
    normalisation_scale: null,
    channels: null,
    created_at_ms: 0,
    updated_at_ms: 0,
    deleted: 1,
    version,
  };
}

function toBaseline(row: BaselineRow): BaselineRecord {
  const center = numberOrNull(row.normalisation_center);
  const scale = numberOrNull(row.normalisation_scale);
  return {
    orgId: row.org_id,
    machineId: row.machine_id,
    baselineId: row.baseline_id,
    label: row.label,
    granularity: row.granularity,
    sensitivity: numberOrNull(row.sensitivity),
    stats: {
      energyMean: Number(row.energy_mean),
      energyStd: Number(row.energy_std),
      energyP99: Number(row.energy_p99),
      numWindows: Number(row.num_windows),
      seriesLength: Number(row.series_length),
    },
    fineTuneStats: {
      status: row.finetune_status === 'completed' ? 'completed' : 'skipped',
      finalLoss: numberOrNull(row.finetune_final_loss),
      epochsRun: Number(row.finetune_epochs_run),
      epochsMax: Number(row.finetune_epochs_max),
      earlyStopped: row.finetune_early_stopped === 1,
      windows: Number(row.finetune_windows),
      durationSeconds: Number(row.finetune_duration_seconds),
    },
    predictorWeights: row.predictor_weights_base64 === null ? null : new Uint8Array(Buffer.from(row.predictor_weights_base64, 'base64')),
    normalisation: center === null || scale === null ? null : { center, scale },
    createdAt: new Date(Number(row.created_at_ms)),
    updatedAt: new Date(Number(row.updated_at_ms)),
    channels: channelsOf(row.channels),
  };
}

/** The channels column: a JSON array of names written by upsertBaseline, or NULL. */
function channelsOf(text: string | null): string[] | null {
  if (text === null) return null;
  const parsed: unknown = JSON.parse(text);
  return Array.isArray(parsed) ? parsed.map(String) : null;
}

function regimeCountsOf(row: DetectionRow): RegimeCounts {
  return {
    HEALTHY: Number(row.regime_healthy),
    ACTIVE: Number(row.regime_active),
    TRANSITION: Number(row.regime_transition),
    SHOCK: Number(row.regime_shock),
    UNKNOWN: Number(row.regime_unknown),
  };
}

/**
 * A failed query or insert as a StoreError. ClickHouse answered with an error code (from
 * ClickHouseError, or on 18.16 only in the message text): STORE_QUERY_FAILED. No answer at all
 * (refused, reset, timed out): STORE_UNAVAILABLE. Both are retriable and the API answers 503.
 */
function storeErrorFrom(operation: string, cause: unknown): StoreError {
  if (cause instanceof StoreError) return cause;
  const serverCode = clickHouseServerCode(cause);
  const code: StoreErrorCode = serverCode === undefined ? 'STORE_UNAVAILABLE' : 'STORE_QUERY_FAILED';
  const message =
    serverCode === undefined ? `ClickHouse did not answer: ${describe(cause)}` : `ClickHouse error ${serverCode}: ${describe(cause)}`;
  return new StoreError(code, operation, message, { cause });
}

function closedError(operation: string): StoreError {
  return new StoreError('STORE_CLOSED', operation, 'the store is closed');
}

function describe(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
