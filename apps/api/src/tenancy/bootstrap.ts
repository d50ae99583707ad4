// First-start bootstrap: the default organization and its first keys.
//
// On the first start (the default organization has never been bootstrapped) one test and one live
// key are generated, written to <DATA_DIR>/bootstrap-keys.json (mode 0600) and only then recorded
// in the store together with the "bootstrapped" mark, in one transaction. A crash in between
// leaves an unmarked organization, so the next start issues fresh keys and rewrites the file: the
// keys in the file are always the ones that work. Later starts create nothing. The file stays
// until someone deletes it, and every start reports it (`earlierKeysFile`): a first start that
// failed after writing it (its port taken) never showed the keys.
//
// BOOTSTRAP_API_KEY, when set, is created for the default organization if no key with that value
// exists (any organization, revoked or not: an existing key is never changed). Set on the first
// start, it is the organization's key instead of a generated pair: a deployment that chose its key
// gets no second secret on disk.
import { access, chmod, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ApiKeyKind, Store } from '@adp/store';
import { AppError, ERRORS } from '../errors.js';
import { describeApiKey, generateApiKey } from './keys.js';

export const BOOTSTRAP_KEYS_FILE_NAME = 'bootstrap-keys.json';

/** A key created on this start, with its plaintext: shown once, never stored. */
export interface IssuedKey {
  readonly kind: ApiKeyKind;
  readonly keyId: string;
  readonly prefix: string;
  readonly key: string;
}

export interface BootstrapResult {
  readonly organizationId: string;
  /** Keys generated on THIS start (test then live); empty on every later start. */
  readonly createdKeys: readonly IssuedKey[];
  /** Absolute path of the file the created keys were saved in; null when none were created. */
  readonly keysFile: string | null;
  /**
   * Absolute path of a keys file an earlier start wrote and nobody has deleted; null when there is
   * none or this start wrote it.
   */
  readonly earlierKeysFile: string | null;
  /** What happened to BOOTSTRAP_API_KEY; null when it is not set. Never holds the plaintext. */
  readonly configuredKey: {
    readonly keyId: string;
    readonly kind: ApiKeyKind;
    /** False when the key already existed. */
    readonly created: boolean;
    /** True when the key exists but was revoked (it then stays revoked). */
    readonly revoked: boolean;
  } | null;
}

export interface BootstrapOptions {
  readonly dataDir: string;
  readonly bootstrapApiKey: string | undefined;
}

export async function bootstrapTenancy(store: Store, options: BootstrapOptions): Promise<BootstrapResult> {
  try {
    const organization = await store.ensureDefaultOrganization();
    let createdKeys: IssuedKey[] = [];
    let keysFile: string | null = null;

    // First, so that a crash before the mark below leaves the key in place for the next start.
    let configuredKey: BootstrapResult['configuredKey'] = null;
    if (options.bootstrapApiKey !== undefined) {
      const { key, created } = await store.createApiKey(organization.id, describeApiKey(options.bootstrapApiKey));
      configuredKey = { keyId: key.id, kind: key.kind, created, revoked: key.revokedAt !== null };
    }

    if (organization.bootstrappedAt === null && configuredKey !== null) {
      await store.completeBootstrap(organization.id, []);
    } else if (organization.bootstrappedAt === null) {
      const plaintexts = [generateApiKey('test'), generateApiKey('live')];
      keysFile = path.join(options.dataDir, BOOTSTRAP_KEYS_FILE_NAME);
      await writeKeysFile(keysFile, organization.id, plaintexts);
      const records = await store.completeBootstrap(organization.id, plaintexts.map(describeApiKey));
      if (records === null) {
        // Someone else bootstrapped between our read and our write; their file is the true one.
        keysFile = null;
      } else {
        createdKeys = records.map((record, index) => ({
          kind: record.kind,
          keyId: record.id,
          prefix: record.prefix,
          key: plaintexts[index] ?? '',
        }));
      }
    }

    const savedFile = path.join(options.dataDir, BOOTSTRAP_KEYS_FILE_NAME);
    const earlierKeysFile = keysFile === null && (await exists(savedFile)) ? savedFile : null;
    return { organizationId: organization.id, createdKeys, keysFile, earlierKeysFile, configuredKey };
  } catch (cause) {
    if (cause instanceof AppError) throw cause;
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new AppError(ERRORS.BootstrapFailed, `Bootstrap of the default organization failed: ${reason}`, { cause });
  }
}

async function exists(filePath: string): Promise<boolean> {
  try {
    await access(filePath);
    return true;
  } catch {
    return false;
  }
}

/** Writes the keys file atomically (temp file + rename) with mode 0600. */
async function writeKeysFile(filePath: string, organizationId: string, plaintexts: readonly string[]): Promise<void> {
  await writeSecretFile(filePath, {
    note: 'API keys created on the first start. They are shown once and stored only as hashes; keep this file secret or delete it.',
    organizationId,
    createdAt: new Date().toISOString(),
    keys: plaintexts.map((key) => ({ kind: key.startsWith('svc_live_') ? 'live' : 'test', key })),
  });
}

/** Writes `content` as JSON atomically (temp file + rename), readable by its owner only (0600). */
export async function writeSecretFile(filePath: string, content: unknown): Promise<void> {
  await mkdir(path.dirname(filePath), { recursive: true, mode: 0o700 });
  const temporary = `${filePath}.${process.pid}.tmp`;
  try {
    await writeFile(temporary, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600, flag: 'w' });
    // The mode given at creation is filtered by the umask and ignored for an existing file.
    await chmod(temporary, 0o600);
    await rename(temporary, filePath);
  } catch (err) {
    await rm(temporary, { force: true });
    throw err;
  }
}
