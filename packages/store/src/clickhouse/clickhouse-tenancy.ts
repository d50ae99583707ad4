// The tenancy port in ClickHouse: organizations (a ReplacingMergeTree by version), API keys (event
// rows: created, touched, revoked) and first-start bootstrap claims. See clickhouse-database.ts for
// what having no transactions means for them.
import { createHash, randomUUID } from 'node:crypto';
import { DEFAULT_ORGANIZATION_ID, DEFAULT_ORGANIZATION_NAME } from '../constants.js';
import { StoreError } from '../errors.js';
import type {
  ApiKeyKind,
  ApiKeyRecord,
  CreateApiKeyResult,
  NewApiKey,
  NewOrganization,
  Organization,
  TenancyStore,
} from '../types.js';
import { ClickHouseAdapter, type ClickHouseDatabase, type Versioned } from './clickhouse-database.js';
import type { InsertBatcher } from './insert-batcher.js';
import { sqlInteger, sqlString } from './sql.js';
import { epochMs, requireNonEmpty, validateNewKey, validateNewOrganization } from './validation.js';
import { retrying, type RetryPolicy } from '@adp/streaming/retry';

/**
 * A bootstrap claim older than this no longer blocks a new attempt, so a replica that died between
 * its claim and its keys does not leave the organization without keys for ever. Far longer than the
 * few inserts a bootstrap takes, and than plausible clock skew between replicas.
 */
export const BOOTSTRAP_CLAIM_WINDOW_MS = 60_000;

/** Claims a replica makes before it gives up on a contended bootstrap. */
const BOOTSTRAP_ATTEMPTS = 6;

/** The pause between claims: 25 ms doubling, each drawn up to twice that (at most 1.6 s in all). */
const BOOTSTRAP_BACKOFF: RetryPolicy = { initialDelayMs: 25, multiplier: 2, maxDelayMs: 800, jitter: true };

/**
 * The id of the key with this hash. Derived, not random, so that two replicas creating the same key
 * at the same moment write one key, not two (a second one would survive revoking the first). The
 * hash of a high-entropy secret's hash reveals nothing usable about the secret.
 */
export function apiKeyIdFor(keyHash: string): string {
  return `key_${createHash('sha256').update(`adp-store/api-key-id/${keyHash}`).digest('hex').slice(0, 32)}`;
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

export class ClickHouseTenancyStore extends ClickHouseAdapter implements TenancyStore {
  /** Key uses are on the request path: group-committed. */
  private readonly keyUseInserts: InsertBatcher;

  constructor(db: ClickHouseDatabase) {
    super(db);
    this.keyUseInserts = db.batcher('touchApiKey', db.t.keys);
  }

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
      const collided = new Error('another replica holds a bootstrap claim');
      try {
        return await retrying(
          async () => {
            const before = await this.organizationById(operation, orgId);
            if (!before.live || before.live.bootstrappedAt !== null) return null;
            const claim = await this.claimBootstrap(operation, orgId);
            if (!claim) throw collided;
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
          },
          // Only a collision is tried again; a failure of the store ends the bootstrap at once.
          { policy: BOOTSTRAP_BACKOFF, retries: BOOTSTRAP_ATTEMPTS - 1, isRetriable: (error) => error === collided },
        );
      } catch (error) {
        if (error === collided) return null;
        throw error;
      }
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
