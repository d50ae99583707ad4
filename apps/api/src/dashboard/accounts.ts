// Local dashboard accounts: an email and a password, hashed with Argon2id (@node-rs/argon2, a
// prebuilt binary: nothing to compile, no install script). The first account of the default
// organization is made at the first start (the password printed once and saved in
// <DATA_DIR>/bootstrap-account.json, mode 0600, like the first keys); more through the admin API.
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { hash, verify } from '@node-rs/argon2';
import { isValidEmail, normaliseEmail, type AccountStore, type UserAccount } from '@adp/store';
import { AppError, ERRORS } from '../errors.js';
import { writeSecretFile } from '../tenancy/bootstrap.js';

/** Shortest password an account may have: long enough that the hash, not the throttle, protects it. */
export const PASSWORD_MIN_LENGTH = 12;
/** Longest password looked at; Argon2 takes any length, but a megabyte would be a cheap way to spend our CPU. */
export const PASSWORD_MAX_LENGTH = 256;
export const BOOTSTRAP_ACCOUNT_FILE_NAME = 'bootstrap-account.json';

/** Hashed once per process and verified against when the email is unknown, so both cases cost the same. */
let decoyHash: Promise<string> | undefined;

export function hashPassword(password: string): Promise<string> {
  return hash(password);
}

/**
 * The account these credentials sign in, or null (unknown email or wrong password: the caller
 * cannot tell which, and both take one Argon2 verification).
 */
export async function checkPassword(accounts: AccountStore, email: string, password: string): Promise<UserAccount | null> {
  if (password.length === 0 || password.length > PASSWORD_MAX_LENGTH) return null;
  const user = isValidEmail(normaliseEmail(email)) ? await accounts.findUserByEmail(email) : null;
  if (user === null) {
    decoyHash ??= hash(randomBytes(16).toString('hex'));
    await verify(await decoyHash, password).catch(() => false);
    return null;
  }
  const matches = await verify(user.passwordHash, password).catch(() => false);
  return matches ? user : null;
}

/** Creates an account; a taken email or a weak password is a coded 4xx. */
export async function createAccount(accounts: AccountStore, orgId: string, email: string, password: string): Promise<UserAccount> {
  const normalised = normaliseEmail(email);
  if (!isValidEmail(normalised)) throw new AppError(ERRORS.InvalidArgument, 'email must be an address of at most 254 characters.');
  if (password.length < PASSWORD_MIN_LENGTH || password.length > PASSWORD_MAX_LENGTH) {
    throw new AppError(ERRORS.InvalidArgument, `password must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters.`);
  }
  const { user, created } = await accounts.createUser(
    { userId: `usr_${randomUUID().replaceAll('-', '')}`, orgId, email: normalised, passwordHash: await hashPassword(password) },
    new Date(),
  );
  if (!created) throw new AppError(ERRORS.AccountExists, `An account with the email ${JSON.stringify(normalised)} exists.`);
  return user;
}

/** What the first start did about the dashboard's first account. */
export interface BootstrapAccount {
  readonly email: string;
  /** Plaintext, only on the start that created it. */
  readonly password: string;
  readonly file: string;
}

/**
 * Creates the default organization's first account when it has none: the password goes to the
 * file first, then the account to the store, so a crash in between leaves no account and the next
 * start writes a fresh file. Null when the organization already has an account.
 */
export async function bootstrapAccount(accounts: AccountStore, orgId: string, email: string, dataDir: string): Promise<BootstrapAccount | null> {
  try {
    if ((await accounts.countUsers(orgId)) > 0) return null;
    const password = randomBytes(18).toString('base64url');
    const file = path.join(dataDir, BOOTSTRAP_ACCOUNT_FILE_NAME);
    await writeSecretFile(file, {
      note: 'The dashboard account created on the first start. Sign in at /dashboard/ with it; keep this file secret or delete it.',
      organizationId: orgId,
      email,
      password,
    });
    const { created } = await accounts.createUser({ userId: `usr_${randomUUID().replaceAll('-', '')}`, orgId, email, passwordHash: await hashPassword(password) }, new Date());
    return created ? { email, password, file } : null;
  } catch (cause) {
    if (cause instanceof AppError) throw cause;
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new AppError(ERRORS.BootstrapFailed, `Creating the first dashboard account failed: ${reason}`, { cause });
  }
}

