// Dashboard accounts and sessions in the embedded database (tables `user_accounts` and
// `dashboard_sessions`, migration 7). Shares the embedded store's connection and queue, as the
// audit log does.
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import type { EmbeddedAccess } from './duckdb-database.js';
import {
  normaliseEmail,
  validateNewUser,
  validateSession,
  validateTokenHash,
  type AccountStore,
  type DashboardSession,
  type NewUserAccount,
  type SessionMethod,
  type UserAccount,
} from '../accounts.js';

const USER_COLUMNS = 'user_id, org_id, email, password_hash, epoch_ms(created_at) AS created_ms';

export class DuckDBAccountStore implements AccountStore {
  constructor(private readonly access: EmbeddedAccess) {}

  createUser(user: NewUserAccount, now: Date): Promise<{ user: UserAccount; created: boolean }> {
    try {
      validateNewUser(user);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.access.run('createUser', async (connection) => {
      const reader = await connection.runAndReadAll(
        `INSERT INTO user_accounts (user_id, org_id, email, password_hash, created_at)
           VALUES ($1, $2, $3, $4, epoch_ms(CAST($5 AS BIGINT))) ON CONFLICT DO NOTHING RETURNING user_id`,
        [user.userId, user.orgId, user.email, user.passwordHash, BigInt(now.getTime())],
      );
      const created = reader.getRows().length > 0;
      const stored = await userByEmail(connection, user.email);
      if (!stored) throw new Error('account missing right after insert');
      return { user: stored, created };
    });
  }

  findUserByEmail(email: string): Promise<UserAccount | null> {
    return this.access.run('findUserByEmail', (connection) => userByEmail(connection, normaliseEmail(email)));
  }

  countUsers(orgId: string): Promise<number> {
    return this.access.run('countUsers', async (connection) => {
      const reader = await connection.runAndReadAll('SELECT count(*) AS n FROM user_accounts WHERE org_id = $1', [orgId]);
      return Number(reader.getRowObjects()[0]?.['n'] ?? 0);
    });
  }

  createSession(session: DashboardSession): Promise<void> {
    try {
      validateSession(session);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.access.run('createSession', async (connection) => {
      await connection.run(
        `INSERT INTO dashboard_sessions (token_hash, org_id, subject, display_name, method, created_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, epoch_ms(CAST($6 AS BIGINT)), epoch_ms(CAST($7 AS BIGINT)))`,
        [
          session.tokenHash,
          session.orgId,
          session.subject,
          session.displayName,
          session.method,
          BigInt(session.createdAt.getTime()),
          BigInt(session.expiresAt.getTime()),
        ],
      );
    });
  }

  findSession(tokenHash: string): Promise<DashboardSession | null> {
    try {
      validateTokenHash('findSession', tokenHash);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.access.run('findSession', async (connection) => {
      const reader = await connection.runAndReadAll(
        `SELECT token_hash, org_id, subject, display_name, method, epoch_ms(created_at) AS created_ms, epoch_ms(expires_at) AS expires_ms
           FROM dashboard_sessions WHERE token_hash = $1`,
        [tokenHash],
      );
      const row = reader.getRowObjects()[0];
      return row === undefined ? null : toSession(row);
    });
  }

  deleteSession(tokenHash: string): Promise<boolean> {
    try {
      validateTokenHash('deleteSession', tokenHash);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.access.run('deleteSession', async (connection) => {
      const reader = await connection.runAndReadAll('DELETE FROM dashboard_sessions WHERE token_hash = $1 RETURNING token_hash', [tokenHash]);
      return reader.getRows().length > 0;
    });
  }
}

async function userByEmail(connection: DuckDBConnection, email: string): Promise<UserAccount | null> {
  const reader = await connection.runAndReadAll(`SELECT ${USER_COLUMNS} FROM user_accounts WHERE email = $1`, [email]);
  const row = reader.getRowObjects()[0];
  return row === undefined ? null : toUser(row);
}

function toUser(row: Record<string, DuckDBValue>): UserAccount {
  return {
    userId: String(row['user_id']),
    orgId: String(row['org_id']),
    email: String(row['email']),
    passwordHash: String(row['password_hash']),
    createdAt: new Date(Number(row['created_ms'])),
  };
}

function toSession(row: Record<string, DuckDBValue>): DashboardSession {
  return {
    tokenHash: String(row['token_hash']),
    orgId: String(row['org_id']),
    subject: String(row['subject']),
    displayName: String(row['display_name']),
    method: String(row['method']) as SessionMethod,
    createdAt: new Date(Number(row['created_ms'])),
    expiresAt: new Date(Number(row['expires_ms'])),
  };
}
