// API keys: generation, hashing and the shape check. Pure functions; no I/O.
import { createHash, randomBytes } from 'node:crypto';
import type { ApiKeyKind, NewApiKey } from '@adp/store';

/** `svc_live_` or `svc_test_` and 16..128 url-safe characters (generated keys have 32). */
export const API_KEY_PATTERN = /^svc_(live|test)_[A-Za-z0-9_-]{16,128}$/;

/** 24 random bytes are 32 base64url characters: 192 bits, far beyond guessing. */
const RANDOM_BYTES = 24;

/** Characters of the random part kept in the display prefix: enough to tell keys apart in a list. */
const DISPLAY_RANDOM_CHARS = 4;

export function generateApiKey(kind: ApiKeyKind): string {
  return `svc_${kind}_${randomBytes(RANDOM_BYTES).toString('base64url')}`;
}

/**
 * Lower-case hex SHA-256 of the whole key. A plain hash (no salt, no slow KDF) is enough because
 * keys carry at least 96 random bits; it also makes lookup by hash a point query.
 */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** The kind a key's prefix declares, or null when the key does not have the API key shape. */
export function apiKeyKind(key: string): ApiKeyKind | null {
  const match = API_KEY_PATTERN.exec(key);
  return match ? (match[1] as ApiKeyKind) : null;
}

/** What the store records for a key: kind, hash and a short display prefix, never the plaintext. */
export function describeApiKey(key: string): NewApiKey {
  const kind = apiKeyKind(key);
  if (!kind) throw new TypeError('not an API key');
  return {
    kind,
    keyHash: hashApiKey(key),
    prefix: key.slice(0, `svc_${kind}_`.length + DISPLAY_RANDOM_CHARS),
  };
}
