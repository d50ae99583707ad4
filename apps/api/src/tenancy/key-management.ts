// Key management for an organization: issue, list, revoke and rotate its API keys. Shared by the
// organizations' own routes (/v1/keys) and the operators' (/admin/v1/organizations/{id}/keys).
//
// An organization always keeps a live key that does not expire: revoking the last one is refused
// (LastLiveKey), so nobody locks an organization out by mistake; rotation issues the successor
// before the old key starts expiring.
import type { ApiKeyKind, ApiKeyRecord, Store } from '@adp/store';
import { AppError, ERRORS } from '../errors.js';
import type { ApiKeyAuthenticator } from './authentication.js';
import { describeApiKey, generateApiKey } from './keys.js';

/** Characters of the plaintext shown as `last4` when a key is issued. */
const LAST_CHARACTERS = 4;

/** A key as the API shows it: never the secret or its hash. */
export interface KeyView {
  readonly key_id: string;
  readonly kind: ApiKeyKind;
  readonly name: string;
  readonly prefix: string;
  readonly created_at: string;
  readonly last_used_at: string | null;
  readonly revoked_at: string | null;
  readonly expires_at: string | null;
}

/** A key just issued: its view, the plaintext (shown this once) and its last characters. */
export interface IssuedKeyView extends KeyView {
  readonly key: string;
  readonly last4: string;
}

export function keyView(record: ApiKeyRecord): KeyView {
  return {
    key_id: record.id,
    kind: record.kind,
    name: record.name,
    prefix: record.prefix,
    created_at: record.createdAt.toISOString(),
    last_used_at: record.lastUsedAt?.toISOString() ?? null,
    revoked_at: record.revokedAt?.toISOString() ?? null,
    expires_at: record.expiresAt?.toISOString() ?? null,
  };
}

/** Whether the key works at `nowMs`: not revoked and not past its expiry. */
export function isActive(record: ApiKeyRecord, nowMs: number): boolean {
  return record.revokedAt === null && (record.expiresAt === null || record.expiresAt.getTime() > nowMs);
}

export class KeyManager {
  constructor(
    private readonly store: Store,
    private readonly authenticator: ApiKeyAuthenticator,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** Issues a key for `orgId`; the plaintext is in the answer and nowhere else. */
  async create(orgId: string, kind: ApiKeyKind, name: string): Promise<IssuedKeyView> {
    const plaintext = generateApiKey(kind);
    const description = { ...describeApiKey(plaintext), name };
    const { key } = await this.store.createApiKey(orgId, description);
    this.authenticator.keyCreated(description.keyHash);
    return { ...keyView(key), key: plaintext, last4: plaintext.slice(-LAST_CHARACTERS) };
  }

  /** The organization's keys, revoked ones included, oldest first. */
  async list(orgId: string): Promise<readonly KeyView[]> {
    return (await this.store.listApiKeys(orgId)).map(keyView);
  }

  /**
   * Revokes a key of `orgId` on every replica. Revoking a revoked key answers it unchanged
   * (`changed: false`, so the caller records no second revocation).
   * Throws KeyNotFound for another organization's key or an unknown id, LastLiveKey for the
   * organization's last live key that does not expire.
   */
  async revoke(orgId: string, keyId: string): Promise<{ key: KeyView; changed: boolean }> {
    const keys = await this.store.listApiKeys(orgId);
    const target = keys.find((key) => key.id === keyId);
    if (!target) throw new AppError(ERRORS.KeyNotFound, `This organization has no key ${JSON.stringify(keyId)}.`);
    if (target.revokedAt !== null) return { key: keyView(target), changed: false };
    const now = this.nowMs();
    const lasting = (key: ApiKeyRecord) => key.kind === 'live' && key.revokedAt === null && key.expiresAt === null;
    if (lasting(target) && !keys.some((key) => key.id !== keyId && lasting(key))) {
      throw new AppError(
        ERRORS.LastLiveKey,
        "This is the organization's last live key that does not expire; create another live key (POST /v1/keys) before revoking it.",
      );
    }
    await this.authenticator.revoke(orgId, keyId);
    const revoked = (await this.store.listApiKeys(orgId)).find((key) => key.id === keyId);
    return { key: keyView(revoked ?? { ...target, revokedAt: new Date(now) }), changed: true };
  }

  /**
   * Issues a successor of the key (same kind and name); the old key keeps working for
   * `graceSeconds` more (0: it is revoked at once). Throws KeyNotFound, or KeyNotActive for a key
   * that is revoked, expired or already rotated.
   */
  async rotate(orgId: string, keyId: string, graceSeconds: number): Promise<{ successor: IssuedKeyView; previous: KeyView }> {
    const target = (await this.store.listApiKeys(orgId)).find((key) => key.id === keyId);
    if (!target) throw new AppError(ERRORS.KeyNotFound, `This organization has no key ${JSON.stringify(keyId)}.`);
    if (!isActive(target, this.nowMs()) || target.expiresAt !== null) {
      throw new AppError(ERRORS.KeyNotActive, `Key ${JSON.stringify(keyId)} is revoked, expired or already rotated; only an active key can be rotated.`);
    }
    const successor = await this.create(orgId, target.kind, target.name);
    if (graceSeconds === 0) {
      await this.authenticator.revoke(orgId, keyId);
    } else {
      await this.store.expireApiKey(keyId, new Date(this.nowMs() + graceSeconds * 1000));
      // Cached entries do not know the expiry yet: the next use reads it from the store.
      await this.authenticator.invalidate([target.keyHash]);
    }
    const previous = (await this.store.listApiKeys(orgId)).find((key) => key.id === keyId) ?? target;
    return { successor, previous: keyView(previous) };
  }
}
