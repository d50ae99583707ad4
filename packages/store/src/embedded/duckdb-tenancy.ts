// The tenancy port in the embedded database: organizations and API keys (tables `organizations`,
// `api_keys`), on the embedded database's connection and queue.
import { randomUUID } from 'node:crypto';
import { DEFAULT_ORGANIZATION_ID, DEFAULT_ORGANIZATION_NAME } from '../constants.js';
import { StoreError } from '../errors.js';
import type {
  ApiKeyKind,
  ApiKeyRecord,
  CreateApiKeyResult,
  NewApiKey,
  NewOrganization,
  Organization,
  Plan,
  TenancyStore,
} from '../types.js';
import { EmbeddedAdapter, toDate, toStringOrNull, type Row } from './duckdb-database.js';

const KEY_COLUMNS =
  'id, org_id, kind, prefix, key_hash, epoch_ms(created_at) AS created_ms, ' +
  'epoch_ms(last_used_at) AS last_used_ms, epoch_ms(revoked_at) AS revoked_ms, name, epoch_ms(expires_at) AS expires_ms';

const ORGANIZATION_COLUMNS =
  'id, name, epoch_ms(created_at) AS created_ms, epoch_ms(bootstrapped_at) AS bootstrapped_ms, plan, external_id, ' +
  'epoch_ms(disabled_at) AS disabled_ms';

export class DuckDBTenancyStore extends EmbeddedAdapter implements TenancyStore {
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
