// Where successful API-key lookups are remembered for AUTH_CACHE_TTL_MS, so most requests cost no
// store query: in this process's memory (one replica, no REDIS_URL) or in Redis, shared by every
// replica. Revoking a key deletes its entry (see ApiKeyAuthenticator.revoke), so a revocation
// takes effect at once everywhere instead of after the TTL.
import type { ApiKeyKind } from '@adp/store';
import type { RedisConnection } from './redis-client.js';
import { TtlCache } from './ttl-cache.js';

/** What authentication needs from a key record: all a cache entry holds (never the key). */
export interface AuthenticatedKey {
  readonly id: string;
  readonly orgId: string;
  readonly kind: ApiKeyKind;
  /** When a rotated key stops working (epoch ms); absent when it does not expire. */
  readonly expiresAtMs?: number;
}

/** The entry a cache keeps: exactly the fields of AuthenticatedKey, nothing else the caller passed. */
function entryOf(key: AuthenticatedKey): AuthenticatedKey {
  return { id: key.id, orgId: key.orgId, kind: key.kind, ...(key.expiresAtMs === undefined ? {} : { expiresAtMs: key.expiresAtMs }) };
}

/** Entries are keyed by the key's SHA-256 hex hash. Implementations may reject on I/O failure. */
export interface ApiKeyCache {
  get(keyHash: string): Promise<AuthenticatedKey | undefined>;
  set(keyHash: string, key: AuthenticatedKey): Promise<void>;
  delete(keyHash: string): Promise<void>;
}

export class MemoryApiKeyCache implements ApiKeyCache {
  private readonly entries: TtlCache<AuthenticatedKey>;

  constructor(maxEntries: number, ttlMs: number, nowMs: () => number = Date.now) {
    this.entries = new TtlCache(maxEntries, ttlMs, nowMs);
  }

  get(keyHash: string): Promise<AuthenticatedKey | undefined> {
    return Promise.resolve(this.entries.get(keyHash));
  }

  set(keyHash: string, key: AuthenticatedKey): Promise<void> {
    this.entries.set(keyHash, entryOf(key));
    return Promise.resolve();
  }

  delete(keyHash: string): Promise<void> {
    this.entries.delete(keyHash);
    return Promise.resolve();
  }
}

/** One Redis string per key, `<prefix>apikey:<sha256 hex>` = JSON, expiring after the TTL. */
export class RedisApiKeyCache implements ApiKeyCache {
  constructor(
    private readonly redis: RedisConnection,
    private readonly keyPrefix: string,
    private readonly ttlMs: number,
  ) {}

  redisKey(keyHash: string): string {
    return `${this.keyPrefix}apikey:${keyHash}`;
  }

  async get(keyHash: string): Promise<AuthenticatedKey | undefined> {
    if (this.ttlMs <= 0) return undefined;
    const text = await this.redis.get(this.redisKey(keyHash));
    return text === null ? undefined : parseEntry(text);
  }

  async set(keyHash: string, key: AuthenticatedKey): Promise<void> {
    if (this.ttlMs <= 0) return;
    await this.redis.set(this.redisKey(keyHash), JSON.stringify(entryOf(key)), { PX: this.ttlMs });
  }

  async delete(keyHash: string): Promise<void> {
    await this.redis.del(this.redisKey(keyHash));
  }
}

/** A cached entry, or undefined (a miss) for anything that is not one: never trust shared state blindly. */
function parseEntry(text: string): AuthenticatedKey | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { id, orgId, kind, expiresAtMs } = value as Record<string, unknown>;
  if (typeof id !== 'string' || typeof orgId !== 'string' || (kind !== 'live' && kind !== 'test')) return undefined;
  if (expiresAtMs !== undefined && (typeof expiresAtMs !== 'number' || !Number.isFinite(expiresAtMs))) return undefined;
  return { id, orgId, kind, ...(expiresAtMs === undefined ? {} : { expiresAtMs }) };
}
