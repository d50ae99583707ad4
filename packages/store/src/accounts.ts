// The dashboard's accounts and sessions port. A user account signs in with an email and a password
// (the hash only is stored, made by the app with a password-hashing library); a session is what a
// dashboard sign-in (password or identity provider) leaves behind, found by the SHA-256 hash of the
// cookie's token, never by the token itself. Both adapters (embedded/duckdb-accounts.ts,
// clickhouse/clickhouse-accounts.ts) validate here, so they refuse exactly the same input.
import { StoreError } from './errors.js';

export interface UserAccount {
  readonly userId: string;
  readonly orgId: string;
  /** Lower case, trimmed; unique across organizations (sign-in asks for no organization). */
  readonly email: string;
  /** The password hash in the hashing library's own encoded form (`$argon2id$...`). */
  readonly passwordHash: string;
  readonly createdAt: Date;
}

export interface NewUserAccount {
  readonly userId: string;
  readonly orgId: string;
  readonly email: string;
  readonly passwordHash: string;
}

/** How a session was opened: a local account's password, or the identity provider. */
export const SESSION_METHODS = ['password', 'oidc'] as const;
export type SessionMethod = (typeof SESSION_METHODS)[number];

export interface DashboardSession {
  /** SHA-256 hex of the cookie's token. */
  readonly tokenHash: string;
  readonly orgId: string;
  /** The user id (password) or the token's `sub` (oidc). */
  readonly subject: string;
  /** What the dashboard shows: the email, or the provider's email/name claim, or the subject. */
  readonly displayName: string;
  readonly method: SessionMethod;
  readonly createdAt: Date;
  readonly expiresAt: Date;
}

export interface AccountStore {
  /** Creates the account; `created: false` (and the existing account) when the email is taken. */
  createUser(user: NewUserAccount, now: Date): Promise<{ readonly user: UserAccount; readonly created: boolean }>;
  /** The account with this email (any case), or null. */
  findUserByEmail(email: string): Promise<UserAccount | null>;
  /** How many accounts the organization has. */
  countUsers(orgId: string): Promise<number>;
  createSession(session: DashboardSession): Promise<void>;
  /** The session with this token hash, or null when there is none or it was deleted. Expiry is the caller's to check. */
  findSession(tokenHash: string): Promise<DashboardSession | null>;
  /** Deletes the session; false when there was none. */
  deleteSession(tokenHash: string): Promise<boolean>;
}

const MAX_ID_LENGTH = 256;
/** RFC 5321's limit on a path, which bounds any address. */
export const MAX_EMAIL_LENGTH = 254;
const MAX_HASH_LENGTH = 1024;
const EMAIL = /^[^\s@]+@[^\s@]+$/;
const TOKEN_HASH = /^[0-9a-f]{64}$/;

function invalid(operation: string, problem: string): never {
  throw new StoreError('STORE_INVALID_ARGUMENT', operation, problem);
}

function boundedText(operation: string, name: string, value: unknown, maxLength: number): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > maxLength) {
    invalid(operation, `${name} must be a string of 1 to ${maxLength} characters`);
  }
}

/** The form an email is stored and looked up in. */
export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** Whether `email` (normalised) is one an account may have. */
export function isValidEmail(email: string): boolean {
  return email.length <= MAX_EMAIL_LENGTH && EMAIL.test(email);
}

export function validateNewUser(user: NewUserAccount): void {
  const operation = 'createUser';
  boundedText(operation, 'userId', user.userId, MAX_ID_LENGTH);
  boundedText(operation, 'orgId', user.orgId, MAX_ID_LENGTH);
  if (typeof user.email !== 'string' || user.email !== normaliseEmail(user.email) || !isValidEmail(user.email)) {
    invalid(operation, 'email must be a lower-case address of at most 254 characters');
  }
  boundedText(operation, 'passwordHash', user.passwordHash, MAX_HASH_LENGTH);
}

export function validateSession(session: DashboardSession): void {
  const operation = 'createSession';
  validateTokenHash(operation, session.tokenHash);
  boundedText(operation, 'orgId', session.orgId, MAX_ID_LENGTH);
  boundedText(operation, 'subject', session.subject, MAX_ID_LENGTH);
  boundedText(operation, 'displayName', session.displayName, MAX_ID_LENGTH);
  if (!(SESSION_METHODS as readonly unknown[]).includes(session.method)) invalid(operation, `method must be one of ${SESSION_METHODS.join(', ')}`);
  for (const [name, at] of [['createdAt', session.createdAt], ['expiresAt', session.expiresAt]] as const) {
    if (!(at instanceof Date) || !Number.isSafeInteger(at.getTime()) || at.getTime() < 0) invalid(operation, `${name} must be a valid date after 1970`);
  }
}

export function validateTokenHash(operation: string, tokenHash: string): void {
  if (typeof tokenHash !== 'string' || !TOKEN_HASH.test(tokenHash)) invalid(operation, 'tokenHash must be 64 lower-case hex digits');
}
