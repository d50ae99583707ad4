// The embedded default: one DuckDB file, one connection, every operation through one queue.
//
// Why one queue: DuckDB allows a single writer per database and a connection must not run two
// statements at once. Serialising is cheap here because each operation is a point query; the one
// hot write, usage metering, is group-committed (all increments that arrive while a commit is in
// flight go into the next transaction), so throughput does not fall to one fsync per request.
//
// Every statement binds its values ($1, $2, ...); no SQL is built from caller input.
import { mkdir } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import {
  DOUBLE,
  DuckDBBlobValue,
  DuckDBInstance,
  type DuckDBConnection,
  type DuckDBPreparedStatement,
  type DuckDBType,
  type DuckDBValue,
} from '@duckdb/node-api';
import { DEFAULT_ORGANIZATION_ID, DEFAULT_ORGANIZATION_NAME, RECENT_DETECTIONS_KEPT } from '../constants.js';
import { StoreError } from '../errors.js';
import { SerialQueue } from '../serial-queue.js';
import type { AuditStore } from '../audit.js';
import { DuckDBAuditStore } from './duckdb-audit.js';
import type { MeteringStore } from '../metering.js';
import { DuckDBMeteringStore } from './duckdb-metering.js';
import { DuckDBLeaseStore } from './duckdb-leases.js';
import type { LeaseStore } from '../leases.js';
import { MIGRATIONS } from './migrations.js';
import {
  organizationUsage,
  REGIME_NAMES,
  type ApiKeyKind,
  type ApiKeyRecord,
  type BaselineRecord,
  type CreateApiKeyResult,
  type DeleteMachineResult,
  type MachineDetection,
  type MachineStatusRecord,
  type MachineSummary,
  type NewApiKey,
  type NewBaseline,
  type NewOrganization,
  type Organization,
  type OrganizationUsage,
  type Plan,
  type RegimeCounts,
  type Store,
  type UsageQuery,
} from '../types.js';

export { DEFAULT_ORGANIZATION_ID, DEFAULT_ORGANIZATION_NAME, RECENT_DETECTIONS_KEPT };
export const EMBEDDED_STORE_FILE_NAME = 'platform.duckdb';

export interface EmbeddedStoreOptions {
  /** Directory that holds the database file; created (mode 0700) when absent. */
  readonly dataDir: string;
  /** Database file name inside `dataDir`. Default `platform.duckdb`. */
  readonly fileName?: string;
  /** Clock for timestamps and usage days (UTC). Default: the system clock. */
  readonly now?: () => Date;
}

// DuckDB's file lock is per process, so a second instance in the same process would open the same
// file without complaint and the two would overwrite each other. This set refuses that case.
const openDatabaseFiles = new Set<string>();

type Row = Record<string, DuckDBValue>;

/** Opens (creating and migrating when needed) the embedded store under `options.dataDir`. */
export async function openEmbeddedStore(options: EmbeddedStoreOptions): Promise<Store> {
  const filePath = path.resolve(options.dataDir, options.fileName ?? EMBEDDED_STORE_FILE_NAME);
  if (openDatabaseFiles.has(filePath)) {
    throw new StoreError('STORE_UNAVAILABLE', 'open', `${filePath} is already open in this process`);
  }
  openDatabaseFiles.add(filePath);
  let instance: DuckDBInstance | undefined;
  let connection: DuckDBConnection | undefined;
  try {
    await mkdir(path.dirname(filePath), { recursive: true, mode: 0o700 });
    instance = await DuckDBInstance.create(filePath);
    connection = await instance.connect();
    await migrate(connection);
  } catch (cause) {
    connection?.closeSync();
    instance?.closeSync();
    openDatabaseFiles.delete(filePath);
    throw new StoreError('STORE_UNAVAILABLE', 'open', `cannot open ${filePath}: ${describe(cause)}`, { cause });
  }
  return new DuckDBStore(filePath, instance, connection, options.now ?? (() => new Date()));
}

async function migrate(connection: DuckDBConnection): Promise<void> {
  await connection.run(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMP NOT NULL)',
  );
  const reader = await connection.runAndReadAll('SELECT version FROM schema_migrations');
  const applied = new Set(reader.getRowObjects().map((row) => Number(row['version'])));
  for (const migration of MIGRATIONS) {
    if (applied.has(migration.version)) continue;
    await connection.run('BEGIN TRANSACTION');
    try {
      for (const statement of migration.statements) await connection.run(statement);
      await connection.run('INSERT INTO schema_migrations VALUES ($1, current_localtimestamp())', [migration.version]);
      await connection.run('COMMIT');
    } catch (err) {
      await connection.run('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }
}

interface UsageIncrement {
  readonly orgId: string;
  readonly keyKind: ApiKeyKind;
  readonly endpoint: string;
  readonly day: string;
  points: number;
  calls: number;
}

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

const BASELINE_COLUMNS =
  'org_id, machine_id, baseline_id, label, granularity, sensitivity, energy_mean, energy_std, energy_p99, ' +
  'num_windows, series_length, finetune_status, finetune_final_loss, finetune_epochs_run, finetune_epochs_max, ' +
  'finetune_early_stopped, finetune_windows, finetune_duration_seconds, predictor_weights, normalisation_center, ' +
  'normalisation_scale, channels, epoch_ms(created_at) AS created_ms, epoch_ms(updated_at) AS updated_ms';

const KEY_COLUMNS =
  'id, org_id, kind, prefix, key_hash, epoch_ms(created_at) AS created_ms, ' +
  'epoch_ms(last_used_at) AS last_used_ms, epoch_ms(revoked_at) AS revoked_ms, name, epoch_ms(expires_at) AS expires_ms';

const ORGANIZATION_COLUMNS =
  'id, name, epoch_ms(created_at) AS created_ms, epoch_ms(bootstrapped_at) AS bootstrapped_ms, plan, external_id, ' +
  'epoch_ms(disabled_at) AS disabled_ms';

/** Batch sizes (distinct organization, endpoint and day keys) whose usage upsert stays prepared. */
const USAGE_PREPARED_MAX = 8;

/** The usage upsert for `rows` increments: $1..$6 the first row's org, key kind, endpoint, day, points, calls, and so on. */
function usageUpsertSql(rows: number): string {
  const values = Array.from(
    { length: rows },
    (_, k) => `($${6 * k + 1}, $${6 * k + 2}, $${6 * k + 3}, CAST($${6 * k + 4} AS DATE), $${6 * k + 5}, $${6 * k + 6})`,
  );
  return `INSERT INTO usage_by_kind_daily (org_id, key_kind, endpoint, day, points, calls)
            VALUES ${values.join(', ')}
            ON CONFLICT (org_id, key_kind, endpoint, day) DO UPDATE
            SET points = usage_by_kind_daily.points + excluded.points, calls = usage_by_kind_daily.calls + excluded.calls`;
}

class DuckDBStore implements Store {
  private readonly queue = new SerialQueue();
  private closed = false;
  private closing: Promise<void> | undefined;
  private usageBatch = new Map<string, UsageIncrement>();
  private usageWaiters: Waiter[] = [];
  private usageFlushScheduled = false;
  /**
   * The usage upsert prepared once per batch size (up to USAGE_PREPARED_MAX keys): preparing it
   * again for every flush cost a second round trip to the database, as much as the upsert itself.
   */
  private readonly usageUpserts = new Map<number, DuckDBPreparedStatement>();
  /** The update of one existing (organization, endpoint, day) row: a lone request's flush, the usual case. */
  private usageUpdate: DuckDBPreparedStatement | undefined;
  readonly audit: AuditStore = new DuckDBAuditStore({
    run: (operation, task) => this.op(operation, () => task(this.connection)),
  });
  readonly metering: MeteringStore = new DuckDBMeteringStore({
    run: (operation, task) => this.op(operation, () => task(this.connection)),
  });
  readonly leases: LeaseStore = new DuckDBLeaseStore({
    run: (operation, task) => this.op(operation, () => task(this.connection)),
  });

  constructor(
    private readonly filePath: string,
    private readonly instance: DuckDBInstance,
    private readonly connection: DuckDBConnection,
    private readonly now: () => Date,
  ) {}

  createOrganization(id: string, name: string, options: NewOrganization = {}): Promise<Organization> {
    return this.op('createOrganization', async () => {
      if (!id || !name) throw new StoreError('STORE_INVALID_ARGUMENT', 'createOrganization', 'id and name must be non-empty');
      const { plan, externalId } = validateNewOrganization('createOrganization', options);
      await this.connection.run(
        `INSERT INTO organizations (id, name, created_at, bootstrapped_at, plan, external_id)
           VALUES ($1, $2, epoch_ms(CAST($3 AS BIGINT)), epoch_ms(CAST($3 AS BIGINT)), $4, $5) ON CONFLICT (id) DO NOTHING`,
        [id, name, this.nowMs(), plan, externalId],
      );
      const organization = await this.organizationById(id);
      if (!organization) throw new Error('organization missing right after insert');
      return organization;
    });
  }

  ensureDefaultOrganization(): Promise<Organization> {
    return this.op('ensureDefaultOrganization', async () => {
      await this.connection.run(
        'INSERT INTO organizations (id, name, created_at) VALUES ($1, $2, epoch_ms(CAST($3 AS BIGINT))) ON CONFLICT (id) DO NOTHING',
        [DEFAULT_ORGANIZATION_ID, DEFAULT_ORGANIZATION_NAME, this.nowMs()],
      );
      const organization = await this.organizationById(DEFAULT_ORGANIZATION_ID);
      if (!organization) throw new Error('default organization missing right after insert');
      return organization;
    });
  }

  getOrganization(orgId: string): Promise<Organization | null> {
    return this.op('getOrganization', () => this.organizationById(orgId));
  }

  completeBootstrap(orgId: string, keys: readonly NewApiKey[]): Promise<readonly ApiKeyRecord[] | null> {
    return this.op('completeBootstrap', async () => {
      keys.forEach((key) => validateNewKey('completeBootstrap', key));
      await this.requireOrganization('completeBootstrap', orgId);
      return this.transaction(async () => {
        const marked = await this.connection.run(
          'UPDATE organizations SET bootstrapped_at = epoch_ms(CAST($2 AS BIGINT)) WHERE id = $1 AND bootstrapped_at IS NULL',
          [orgId, this.nowMs()],
        );
        if (marked.rowsChanged === 0) return null;
        const records: ApiKeyRecord[] = [];
        for (const key of keys) records.push(await this.insertKey(orgId, key));
        return records;
      });
    });
  }

  createApiKey(orgId: string, key: NewApiKey): Promise<CreateApiKeyResult> {
    return this.op('createApiKey', async () => {
      validateNewKey('createApiKey', key);
      await this.requireOrganization('createApiKey', orgId);
      const existing = await this.keyByHash(key.keyHash);
      if (existing) return { key: existing, created: false };
      return { key: await this.insertKey(orgId, key), created: true };
    });
  }

  findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | null> {
    return this.op('findApiKeyByHash', () => this.keyByHash(keyHash));
  }

  findOrganizationByExternalId(externalId: string): Promise<Organization | null> {
    return this.op('findOrganizationByExternalId', async () => {
      const reader = await this.connection.runAndReadAll(
        `SELECT ${ORGANIZATION_COLUMNS} FROM organizations WHERE external_id = $1 ORDER BY created_at, id LIMIT 1`,
        [externalId],
      );
      const row = reader.getRowObjects()[0];
      return row ? toOrganization(row) : null;
    });
  }

  listOrganizations(): Promise<readonly Organization[]> {
    return this.op('listOrganizations', async () => {
      const reader = await this.connection.runAndReadAll(`SELECT ${ORGANIZATION_COLUMNS} FROM organizations ORDER BY created_at, id`);
      return reader.getRowObjects().map(toOrganization);
    });
  }

  disableOrganization(orgId: string): Promise<boolean> {
    return this.op('disableOrganization', async () => {
      const result = await this.connection.run(
        'UPDATE organizations SET disabled_at = epoch_ms(CAST($2 AS BIGINT)) WHERE id = $1 AND disabled_at IS NULL',
        [orgId, this.nowMs()],
      );
      return result.rowsChanged > 0;
    });
  }

  expireApiKey(keyId: string, at: Date): Promise<boolean> {
    return this.op('expireApiKey', async () => {
      const atMs = BigInt(at.getTime());
      const result = await this.connection.run(
        'UPDATE api_keys SET expires_at = epoch_ms(CAST($2 AS BIGINT)) WHERE id = $1 AND revoked_at IS NULL AND expires_at IS NULL',
        [keyId, atMs],
      );
      return result.rowsChanged > 0;
    });
  }

  listApiKeys(orgId: string): Promise<readonly ApiKeyRecord[]> {
    return this.op('listApiKeys', async () => {
      const reader = await this.connection.runAndReadAll(
        `SELECT ${KEY_COLUMNS} FROM api_keys WHERE org_id = $1 ORDER BY created_at, id`,
        [orgId],
      );
      return reader.getRowObjects().map(toApiKey);
    });
  }

  revokeApiKey(keyId: string): Promise<boolean> {
    return this.op('revokeApiKey', async () => {
      const result = await this.connection.run(
        'UPDATE api_keys SET revoked_at = epoch_ms(CAST($2 AS BIGINT)) WHERE id = $1 AND revoked_at IS NULL',
        [keyId, this.nowMs()],
      );
      return result.rowsChanged > 0;
    });
  }

  touchApiKey(keyId: string, at: Date): Promise<void> {
    return this.op('touchApiKey', async () => {
      await this.connection.run('UPDATE api_keys SET last_used_at = epoch_ms(CAST($2 AS BIGINT)) WHERE id = $1', [
        keyId,
        BigInt(at.getTime()),
      ]);
    });
  }

  recordUsage(orgId: string, endpoint: string, points: number, keyKind: ApiKeyKind = 'live'): Promise<void> {
    if (this.closed) return Promise.reject(closedError('recordUsage'));
    if (!orgId || !endpoint || !Number.isSafeInteger(points) || points < 0 || (keyKind !== 'live' && keyKind !== 'test')) {
      return Promise.reject(
        new StoreError(
          'STORE_INVALID_ARGUMENT',
          'recordUsage',
          'orgId and endpoint must be non-empty, points a non-negative integer and keyKind live or test',
        ),
      );
    }
    const day = this.now().toISOString().slice(0, 10);
    // JSON keeps the composite key unambiguous whatever characters the parts contain.
    const batchKey = JSON.stringify([orgId, keyKind, endpoint, day]);
    const increment = this.usageBatch.get(batchKey);
    if (increment) {
      increment.points += points;
      increment.calls += 1;
    } else {
      this.usageBatch.set(batchKey, { orgId, keyKind, endpoint, day, points, calls: 1 });
    }
    const written = new Promise<void>((resolve, reject) => this.usageWaiters.push({ resolve, reject }));
    if (!this.usageFlushScheduled) {
      this.usageFlushScheduled = true;
      void this.queue.run(() => this.flushUsage());
    }
    return written;
  }

  usageFor(orgId: string, query: UsageQuery = {}): Promise<OrganizationUsage> {
    return this.op('usageFor', async () => {
      const sinceDay = query.since === undefined ? '0001-01-01' : utcDay('usageFor', query.since);
      const reader = await this.connection.runAndReadAll(
        `SELECT endpoint, CAST(sum(points) AS BIGINT) AS points, CAST(sum(calls) AS BIGINT) AS calls
           FROM usage_by_kind_daily
          WHERE org_id = $1 AND ($2 = '' OR key_kind = $2) AND day >= CAST($3 AS DATE)
          GROUP BY endpoint ORDER BY endpoint`,
        [orgId, query.keyKind ?? '', sinceDay],
      );
      const byEndpoint = reader.getRowObjects().map((row) => ({
        endpoint: String(row['endpoint']),
        points: Number(row['points']),
        calls: Number(row['calls']),
      }));
      return organizationUsage(orgId, byEndpoint);
    });
  }

  upsertBaseline(orgId: string, baseline: NewBaseline): Promise<BaselineRecord> {
    return this.op('upsertBaseline', async () => {
      validateBaseline(orgId, baseline);
      const now = this.nowMs();
      return this.transaction(async () => {
        await this.connection.run(
          `INSERT INTO machines (org_id, machine_id, first_seen_at, counters_since, detections_since, points_since)
             VALUES ($1, $2, epoch_ms(CAST($3 AS BIGINT)), epoch_ms(CAST($3 AS BIGINT)), 0, 0)
             ON CONFLICT (org_id, machine_id) DO UPDATE
             SET counters_since = excluded.counters_since, detections_since = 0, points_since = 0`,
          [orgId, baseline.machineId, now],
        );
        const { stats, fineTuneStats: tune } = baseline;
        await this.connection.run(
          `INSERT INTO baselines (${BASELINE_INSERT_COLUMNS})
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22,
                     epoch_ms(CAST($23 AS BIGINT)), epoch_ms(CAST($23 AS BIGINT)))
             ON CONFLICT (org_id, machine_id) DO UPDATE SET
               baseline_id = excluded.baseline_id, label = excluded.label, granularity = excluded.granularity,
               sensitivity = excluded.sensitivity, energy_mean = excluded.energy_mean, energy_std = excluded.energy_std,
               energy_p99 = excluded.energy_p99, num_windows = excluded.num_windows,
               series_length = excluded.series_length, finetune_status = excluded.finetune_status,
               finetune_final_loss = excluded.finetune_final_loss, finetune_epochs_run = excluded.finetune_epochs_run,
               finetune_epochs_max = excluded.finetune_epochs_max,
               finetune_early_stopped = excluded.finetune_early_stopped, finetune_windows = excluded.finetune_windows,
               finetune_duration_seconds = excluded.finetune_duration_seconds,
               predictor_weights = excluded.predictor_weights, normalisation_center = excluded.normalisation_center,
               normalisation_scale = excluded.normalisation_scale, channels = excluded.channels,
               updated_at = excluded.updated_at`,
          [
            orgId,
            baseline.machineId,
            baseline.baselineId,
            baseline.label,
            baseline.granularity,
            baseline.sensitivity,
            stats.energyMean,
            stats.energyStd,
            stats.energyP99,
            BigInt(stats.numWindows),
            BigInt(stats.seriesLength),
            tune.status,
            tune.finalLoss,
            tune.epochsRun,
            tune.epochsMax,
            tune.earlyStopped,
            BigInt(tune.windows),
            tune.durationSeconds,
            baseline.predictorWeights === null ? null : new DuckDBBlobValue(baseline.predictorWeights),
            baseline.normalisation?.center ?? null,
            baseline.normalisation?.scale ?? null,
            baseline.channels ? JSON.stringify(baseline.channels) : null,
            now,
          ],
          BASELINE_PARAMETER_TYPES,
        );
        const record = await this.baselineOf(orgId, baseline.machineId);
        if (!record) throw new Error('baseline missing right after upsert');
        return record;
      });
    });
  }

  getBaseline(orgId: string, machineId: string): Promise<BaselineRecord | null> {
    return this.op('getBaseline', () => this.baselineOf(orgId, machineId));
  }

  listMachines(orgId: string): Promise<readonly MachineSummary[]> {
    return this.op('listMachines', async () => {
      const reader = await this.connection.runAndReadAll(
        `SELECT m.machine_id, epoch_ms(m.first_seen_at) AS first_seen_ms, epoch_ms(b.created_at) AS baseline_created_ms,
                b.num_windows, b.label, b.channels
           FROM machines m LEFT JOIN baselines b ON b.org_id = m.org_id AND b.machine_id = m.machine_id
           WHERE m.org_id = $1 ORDER BY m.machine_id`,
        [orgId],
      );
      return reader.getRowObjects().map((row) => ({
        machineId: String(row['machine_id']),
        firstSeenAt: toDate(row['first_seen_ms']) ?? new Date(0),
        baselineCreatedAt: toDate(row['baseline_created_ms']),
        numWindows: toNumberOrNull(row['num_windows']),
        label: toStringOrNull(row['label']),
        channels: toChannels(row['channels']),
      }));
    });
  }

  deleteMachine(orgId: string, machineId: string): Promise<DeleteMachineResult> {
    return this.op('deleteMachine', () =>
      this.transaction(async () => {
        const baselines = await this.connection.run('DELETE FROM baselines WHERE org_id = $1 AND machine_id = $2', [
          orgId,
          machineId,
        ]);
        await this.connection.run('DELETE FROM machine_detections WHERE org_id = $1 AND machine_id = $2', [
          orgId,
          machineId,
        ]);
        const machines = await this.connection.run('DELETE FROM machines WHERE org_id = $1 AND machine_id = $2', [
          orgId,
          machineId,
        ]);
        return { deleted: machines.rowsChanged > 0, baselineDeleted: baselines.rowsChanged > 0 };
      }),
    );
  }

  recordDetection(orgId: string, machineId: string, detection: MachineDetection): Promise<void> {
    return this.op('recordDetection', async () => {
      if (!orgId || !machineId || !Number.isSafeInteger(detection.points) || detection.points < 0) {
        throw new StoreError(
          'STORE_INVALID_ARGUMENT',
          'recordDetection',
          'orgId and machineId must be non-empty and points a non-negative integer',
        );
      }
      const counts = REGIME_NAMES.map((name) => detection.regimeCounts[name]);
      if (counts.some((count) => !Number.isSafeInteger(count) || count < 0)) {
        throw new StoreError('STORE_INVALID_ARGUMENT', 'recordDetection', 'regime counts must be non-negative integers');
      }
      const now = this.nowMs();
      await this.transaction(async () => {
        await this.connection.run(
          `INSERT INTO machines (org_id, machine_id, first_seen_at, counters_since, detections_since, points_since, last_detection_at)
             VALUES ($1, $2, epoch_ms(CAST($3 AS BIGINT)), epoch_ms(CAST($3 AS BIGINT)), 1, $4, epoch_ms(CAST($3 AS BIGINT)))
             ON CONFLICT (org_id, machine_id) DO UPDATE
             SET detections_since = machines.detections_since + 1,
                 points_since = machines.points_since + excluded.points_since,
                 last_detection_at = excluded.last_detection_at`,
          [orgId, machineId, now, BigInt(detection.points)],
        );
        await this.connection.run(
          `INSERT INTO machine_detections (seq, org_id, machine_id, detected_at, points, with_baseline,
               regime_healthy, regime_active, regime_transition, regime_shock, regime_unknown)
             VALUES (nextval('machine_detection_seq'), $1, $2, epoch_ms(CAST($3 AS BIGINT)), $4, $5, $6, $7, $8, $9, $10)`,
          [orgId, machineId, now, BigInt(detection.points), detection.withBaseline, ...counts.map((count) => BigInt(count))],
        );
        await this.connection.run(
          `DELETE FROM machine_detections
             WHERE org_id = $1 AND machine_id = $2 AND seq NOT IN (
               SELECT seq FROM machine_detections WHERE org_id = $1 AND machine_id = $2 ORDER BY seq DESC LIMIT $3)`,
          [orgId, machineId, RECENT_DETECTIONS_KEPT],
        );
      });
    });
  }

  machineStatus(orgId: string, machineId: string): Promise<MachineStatusRecord | null> {
    return this.op('machineStatus', async () => {
      const reader = await this.connection.runAndReadAll(
        `SELECT epoch_ms(first_seen_at) AS first_seen_ms, epoch_ms(counters_since) AS since_ms, detections_since,
                points_since, epoch_ms(last_detection_at) AS last_ms
           FROM machines WHERE org_id = $1 AND machine_id = $2`,
        [orgId, machineId],
      );
      const row = reader.getRowObjects()[0];
      if (!row) return null;
      const recent = await this.connection.runAndReadAll(
        `SELECT epoch_ms(detected_at) AS at_ms, points, with_baseline, regime_healthy, regime_active,
                regime_transition, regime_shock, regime_unknown
           FROM machine_detections WHERE org_id = $1 AND machine_id = $2 ORDER BY seq DESC LIMIT $3`,
        [orgId, machineId, RECENT_DETECTIONS_KEPT],
      );
      return {
        machineId,
        firstSeenAt: toDate(row['first_seen_ms']) ?? new Date(0),
        baseline: await this.baselineOf(orgId, machineId),
        countersSince: toDate(row['since_ms']) ?? new Date(0),
        detectionsSince: Number(row['detections_since']),
        pointsSince: Number(row['points_since']),
        lastDetectionAt: toDate(row['last_ms']),
        recentDetections: recent.getRowObjects().map((detection) => ({
          at: toDate(detection['at_ms']) ?? new Date(0),
          points: Number(detection['points']),
          withBaseline: detection['with_baseline'] === true,
          regimeCounts: regimeCountsOf(detection),
        })),
      };
    });
  }

  ping(): Promise<void> {
    return this.op('ping', async () => {
      await this.connection.run('SELECT 1');
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
      // Pending usage increments were queued before `closed` was set, so draining writes them.
      await this.queue.drain();
      await this.connection.run('CHECKPOINT').catch(() => undefined);
    } finally {
      for (const upsert of this.usageUpserts.values()) upsert.destroySync();
      this.usageUpserts.clear();
      this.usageUpdate?.destroySync();
      this.usageUpdate = undefined;
      this.connection.closeSync();
      this.instance.closeSync();
      openDatabaseFiles.delete(this.filePath);
    }
  }

  private async flushUsage(): Promise<void> {
    const batch = [...this.usageBatch.values()];
    const waiters = this.usageWaiters;
    this.usageBatch = new Map();
    this.usageWaiters = [];
    this.usageFlushScheduled = false;
    if (batch.length === 0) {
      for (const waiter of waiters) waiter.resolve();
      return;
    }
    try {
      // A lone key whose row exists already (the same organization, endpoint and day as an earlier
      // call): one UPDATE, about a third of an upsert's cost in DuckDB, which checks its key index
      // for the conflict. No row changed: the key is new today, and the upsert below adds it.
      if (batch.length === 1) {
        const [only] = batch as [UsageIncrement];
        this.usageUpdate ??= await this.connection.prepare(
          `UPDATE usage_by_kind_daily SET points = points + $5, calls = calls + $6
             WHERE org_id = $1 AND key_kind = $2 AND endpoint = $3 AND day = CAST($4 AS DATE)`,
        );
        this.usageUpdate.bind([only.orgId, only.keyKind, only.endpoint, only.day, BigInt(only.points), BigInt(only.calls)]);
        if ((await this.usageUpdate.run()).rowsChanged === 1) {
          for (const waiter of waiters) waiter.resolve();
          return;
        }
      }
      // One statement, atomic on its own (autocommit), prepared once per batch size: BEGIN, an
      // upsert per key (each prepared anew) and COMMIT took about twice as long for a single
      // request's increment. The batch holds each (org, endpoint, day) once, as ON CONFLICT
      // requires.
      const reused = this.usageUpserts.get(batch.length);
      const upsert = reused ?? (await this.connection.prepare(usageUpsertSql(batch.length)));
      try {
        upsert.bind(
          batch.flatMap((increment) => [
            increment.orgId,
            increment.keyKind,
            increment.endpoint,
            increment.day,
            BigInt(increment.points),
            BigInt(increment.calls),
          ]),
        );
        await upsert.run();
      } finally {
        if (reused === undefined) {
          if (batch.length <= USAGE_PREPARED_MAX) this.usageUpserts.set(batch.length, upsert);
          else upsert.destroySync();
        }
      }
      for (const waiter of waiters) waiter.resolve();
    } catch (cause) {
      const error = new StoreError('STORE_QUERY_FAILED', 'recordUsage', describe(cause), { cause });
      for (const waiter of waiters) waiter.reject(error);
    }
  }

  /** Runs `task` in the queue, refusing after close and wrapping database failures. */
  private op<T>(operation: string, task: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(closedError(operation));
    return this.queue.run(async () => {
      try {
        return await task();
      } catch (cause) {
        if (cause instanceof StoreError) throw cause;
        throw new StoreError('STORE_QUERY_FAILED', operation, describe(cause), { cause });
      }
    });
  }

  private async transaction<T>(body: () => Promise<T>): Promise<T> {
    await this.connection.run('BEGIN TRANSACTION');
    try {
      const result = await body();
      await this.connection.run('COMMIT');
      return result;
    } catch (err) {
      await this.connection.run('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }

  private async insertKey(orgId: string, key: NewApiKey): Promise<ApiKeyRecord> {
    const id = `key_${randomUUID().replaceAll('-', '')}`;
    await this.connection.run(
      'INSERT INTO api_keys (id, org_id, kind, prefix, key_hash, created_at, name) VALUES ($1, $2, $3, $4, $5, epoch_ms(CAST($6 AS BIGINT)), $7)',
      [id, orgId, key.kind, key.prefix, key.keyHash, this.nowMs(), key.name ?? ''],
    );
    const record = await this.keyByHash(key.keyHash);
    if (!record) throw new Error('api key missing right after insert');
    return record;
  }

  private async baselineOf(orgId: string, machineId: string): Promise<BaselineRecord | null> {
    const reader = await this.connection.runAndReadAll(
      `SELECT ${BASELINE_COLUMNS} FROM baselines WHERE org_id = $1 AND machine_id = $2`,
      [orgId, machineId],
    );
    const row = reader.getRowObjects()[0];
    return row ? toBaseline(row) : null;
  }

  private async keyByHash(keyHash: string): Promise<ApiKeyRecord | null> {
    const reader = await this.connection.runAndReadAll(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_hash = $1`, [
      keyHash,
    ]);
    const row = reader.getRowObjects()[0];
    return row ? toApiKey(row) : null;
  }

  private async organizationById(orgId: string): Promise<Organization | null> {
    const reader = await this.connection.runAndReadAll(`SELECT ${ORGANIZATION_COLUMNS} FROM organizations WHERE id = $1`, [orgId]);
    const row = reader.getRowObjects()[0];
    return row ? toOrganization(row) : null;
  }

  private async requireOrganization(operation: string, orgId: string): Promise<void> {
    if (!(await this.organizationById(orgId))) {
      throw new StoreError('STORE_INVALID_ARGUMENT', operation, `unknown organization ${JSON.stringify(orgId)}`);
    }
  }

  private nowMs(): bigint {
    return BigInt(this.now().getTime());
  }
}

function validateNewOrganization(operation: string, options: NewOrganization): { plan: Plan; externalId: string | null } {
  const plan = options.plan ?? 'paid';
  if (plan !== 'free' && plan !== 'paid') throw new StoreError('STORE_INVALID_ARGUMENT', operation, 'plan must be free or paid');
  const externalId = options.externalId ?? null;
  if (externalId !== null && externalId.length === 0) {
    throw new StoreError('STORE_INVALID_ARGUMENT', operation, 'externalId must be non-empty when given');
  }
  return { plan, externalId };
}

/** The UTC day (YYYY-MM-DD) of `at`. */
function utcDay(operation: string, at: Date): string {
  if (!Number.isFinite(at.getTime())) throw new StoreError('STORE_INVALID_ARGUMENT', operation, 'dates must be valid');
  return at.toISOString().slice(0, 10);
}

function toOrganization(row: Row): Organization {
  return {
    id: String(row['id']),
    name: String(row['name']),
    createdAt: toDate(row['created_ms']) ?? new Date(0),
    bootstrappedAt: toDate(row['bootstrapped_ms']),
    plan: row['plan'] === 'free' ? 'free' : 'paid',
    externalId: toStringOrNull(row['external_id']),
    disabledAt: toDate(row['disabled_ms']),
  };
}

function validateNewKey(operation: string, key: NewApiKey): void {
  if (key.kind !== 'live' && key.kind !== 'test') {
    throw new StoreError('STORE_INVALID_ARGUMENT', operation, 'kind must be live or test');
  }
  if (!/^[0-9a-f]{64}$/.test(key.keyHash)) {
    throw new StoreError('STORE_INVALID_ARGUMENT', operation, 'keyHash must be a lower-case hex SHA-256 digest');
  }
  if (!key.prefix) throw new StoreError('STORE_INVALID_ARGUMENT', operation, 'prefix must be non-empty');
  if (key.name !== undefined && (typeof key.name !== 'string' || key.name.length > 200)) {
    throw new StoreError('STORE_INVALID_ARGUMENT', operation, 'name must be at most 200 characters');
  }
}

const BASELINE_INSERT_COLUMNS = BASELINE_COLUMNS.replace(
  'epoch_ms(created_at) AS created_ms, epoch_ms(updated_at) AS updated_ms',
  'created_at, updated_at',
);

/**
 * The upsert's DOUBLE parameters ($7-$9 statistics, $13 final loss, $18 duration, $20-$21
 * normalisation) bound as DOUBLE: the client binds an integer-valued number as INTEGER or BIGINT,
 * which fails past the int64 range (a mean energy of 1e20). Other parameters keep their own types.
 */
const BASELINE_PARAMETER_TYPES: DuckDBType[] = [];
for (const parameter of [7, 8, 9, 13, 18, 20, 21]) BASELINE_PARAMETER_TYPES[parameter - 1] = DOUBLE;

function validateBaseline(orgId: string, baseline: NewBaseline): void {
  const fail = (problem: string): never => {
    throw new StoreError('STORE_INVALID_ARGUMENT', 'upsertBaseline', problem);
  };
  if (!orgId || !baseline.machineId || !baseline.baselineId) fail('orgId, machineId and baselineId must be non-empty');
  const { stats, fineTuneStats } = baseline;
  for (const value of [stats.energyMean, stats.energyStd, stats.energyP99, fineTuneStats.durationSeconds]) {
    if (!Number.isFinite(value)) fail('energy statistics and durations must be finite numbers');
  }
  for (const value of [stats.numWindows, stats.seriesLength, fineTuneStats.epochsRun, fineTuneStats.epochsMax, fineTuneStats.windows]) {
    if (!Number.isSafeInteger(value) || value < 0) fail('counts must be non-negative integers');
  }
  if ((baseline.predictorWeights === null) !== (baseline.normalisation === null)) {
    fail('predictor weights and normalisation come together');
  }
  const channels = baseline.channels;
  if (channels != null && (!Array.isArray(channels) || channels.length === 0 || !channels.every((name) => typeof name === 'string' && name !== ''))) {
    fail('channels must be null or a non-empty list of non-empty names');
  }
}

/** The channels column: a JSON array of names written by upsertBaseline, or NULL. */
function toChannels(value: DuckDBValue | undefined): string[] | null {
  if (value === null || value === undefined) return null;
  const parsed: unknown = JSON.parse(String(value));
  return Array.isArray(parsed) ? parsed.map(String) : null;
}

function toBaseline(row: Row): BaselineRecord {
  const weights = row['predictor_weights'];
  const center = toNumberOrNull(row['normalisation_center']);
  const scale = toNumberOrNull(row['normalisation_scale']);
  return {
    orgId: String(row['org_id']),
    machineId: String(row['machine_id']),
    baselineId: String(row['baseline_id']),
    label: toStringOrNull(row['label']),
    granularity: toStringOrNull(row['granularity']),
    sensitivity: toNumberOrNull(row['sensitivity']),
    stats: {
      energyMean: Number(row['energy_mean']),
      energyStd: Number(row['energy_std']),
      energyP99: Number(row['energy_p99']),
      numWindows: Number(row['num_windows']),
      seriesLength: Number(row['series_length']),
    },
    fineTuneStats: {
      status: row['finetune_status'] === 'completed' ? 'completed' : 'skipped',
      finalLoss: toNumberOrNull(row['finetune_final_loss']),
      epochsRun: Number(row['finetune_epochs_run']),
      epochsMax: Number(row['finetune_epochs_max']),
      earlyStopped: row['finetune_early_stopped'] === true,
      windows: Number(row['finetune_windows']),
      durationSeconds: Number(row['finetune_duration_seconds']),
    },
    predictorWeights: weights instanceof DuckDBBlobValue ? weights.bytes : null,
    normalisation: center === null || scale === null ? null : { center, scale },
    createdAt: toDate(row['created_ms']) ?? new Date(0),
    updatedAt: toDate(row['updated_ms']) ?? new Date(0),
    channels: toChannels(row['channels']),
  };
}

function regimeCountsOf(row: Row): RegimeCounts {
  return {
    HEALTHY: Number(row['regime_healthy']),
    ACTIVE: Number(row['regime_active']),
    TRANSITION: Number(row['regime_transition']),
    SHOCK: Number(row['regime_shock']),
    UNKNOWN: Number(row['regime_unknown']),
  };
}

function toNumberOrNull(value: DuckDBValue | undefined): number | null {
  return value === null || value === undefined ? null : Number(value);
}

function toStringOrNull(value: DuckDBValue | undefined): string | null {
  return value === null || value === undefined ? null : String(value);
}

function toApiKey(row: Row): ApiKeyRecord {
  return {
    id: String(row['id']),
    orgId: String(row['org_id']),
    kind: String(row['kind']) as ApiKeyKind,
    prefix: String(row['prefix']),
    keyHash: String(row['key_hash']),
    createdAt: toDate(row['created_ms']) ?? new Date(0),
    lastUsedAt: toDate(row['last_used_ms']),
    revokedAt: toDate(row['revoked_ms']),
    name: String(row['name'] ?? ''),
    expiresAt: toDate(row['expires_ms']),
  };
}

function toDate(value: DuckDBValue | undefined): Date | null {
  return value === null || value === undefined ? null : new Date(Number(value));
}

function closedError(operation: string): StoreError {
  return new StoreError('STORE_CLOSED', operation, 'the store is closed');
}

function describe(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
