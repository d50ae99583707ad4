// Dashboard accounts and sessions in ClickHouse (schemas/clickhouse/0007_accounts.sql). Every write
// is an inserted row with a new version; reads take each key's latest row with argMax. Values
// reach SQL only through `sqlString` and `sqlInteger`.
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
import type { ClickHouseAccess } from './clickhouse-database.js';
import { sqlString } from './sql.js';

interface UserRow {
  the_email: string;
  the_user_id: string;
  the_org_id: string;
  the_password_hash: string;
  the_created_ms: number | string;
}

interface SessionRow {
  the_token_hash: string;
  the_org_id: string;
  the_subject: string;
  the_display_name: string;
  the_method: string;
  the_created_ms: number | string;
  the_expires_ms: number | string;
  the_deleted: number;
}

export class ClickHouseAccountStore implements AccountStore {
  constructor(
    private readonly access: ClickHouseAccess,
    private readonly tables: { readonly users: string; readonly sessions: string },
  ) {}

  createUser(user: NewUserAccount, now: Date): Promise<{ user: UserAccount; created: boolean }> {
    return this.access.op('createUser', async (operation) => {
      validateNewUser(user);
      const existing = await this.userByEmail(operation, user.email);
      if (existing) return { user: existing, created: false };
      const row = { email: user.email, user_id: user.userId, org_id: user.orgId, password_hash: user.passwordHash, created_ms: now.getTime() };
      await this.access.insert(operation, this.tables.users, [{ ...row, version: this.access.nextVersion() }]);
      return { user: { ...user, createdAt: new Date(now.getTime()) }, created: true };
    });
  }

  findUserByEmail(email: string): Promise<UserAccount | null> {
    return this.access.op('findUserByEmail', (operation) => this.userByEmail(operation, normaliseEmail(email)));
  }

  countUsers(orgId: string): Promise<number> {
    return this.access.op('countUsers', async (operation) => {
      // Latest row per email first: an email's latest row decides its organization.
      const rows = await this.access.rows<{ n: number | string }>(
        operation,
        `SELECT count() AS n FROM (SELECT argMax(org_id, version) AS the_org_id FROM ${this.tables.users} GROUP BY email)
          WHERE the_org_id = ${sqlString(orgId, operation)}`,
      );
      return Number(rows[0]?.n ?? 0);
    });
  }

  createSession(session: DashboardSession): Promise<void> {
    return this.access.op('createSession', async (operation) => {
      validateSession(session);
      await this.access.insert(operation, this.tables.sessions, [sessionRecord(session, false, this.access.nextVersion())]);
    });
  }

  findSession(tokenHash: string): Promise<DashboardSession | null> {
    return this.access.op('findSession', async (operation) => {
      validateTokenHash(operation, tokenHash);
      const row = await this.sessionRow(operation, tokenHash);
      return row === null || Number(row.the_deleted) !== 0 ? null : toSession(row);
    });
  }

  deleteSession(tokenHash: string): Promise<boolean> {
    return this.access.op('deleteSession', async (operation) => {
      validateTokenHash(operation, tokenHash);
      const row = await this.sessionRow(operation, tokenHash);
      if (row === null || Number(row.the_deleted) !== 0) return false;
      await this.access.insert(operation, this.tables.sessions, [sessionRecord(toSession(row), true, this.access.nextVersion())]);
      return true;
    });
  }

  private async userByEmail(operation: string, email: string): Promise<UserAccount | null> {
    // Aliases differ from the columns' names: the old analyzer would substitute them into the aggregates.
    const rows = await this.access.rows<UserRow>(
      operation,
      `SELECT email AS the_email, argMax(user_id, version) AS the_user_id, argMax(org_id, version) AS the_org_id,
              argMax(password_hash, version) AS the_password_hash, argMax(created_ms, version) AS the_created_ms
         FROM ${this.tables.users} WHERE email = ${sqlString(email, operation)} GROUP BY email`,
    );
    const row = rows[0];
    if (row === undefined) return null;
    return {
      userId: row.the_user_id,
      orgId: row.the_org_id,
      email: row.the_email,
      passwordHash: row.the_password_hash,
      createdAt: new Date(Number(row.the_created_ms)),
    };
  }

  private async sessionRow(operation: string, tokenHash: string): Promise<SessionRow | null> {
    const rows = await this.access.rows<SessionRow>(
      operation,
      `SELECT token_hash AS the_token_hash, argMax(org_id, version) AS the_org_id, argMax(subject, version) AS the_subject,
              argMax(display_name, version) AS the_display_name, argMax(method, version) AS the_method,
              argMax(created_ms, version) AS the_created_ms, argMax(expires_ms, version) AS the_expires_ms,
              argMax(deleted, version) AS the_deleted
         FROM ${this.tables.sessions} WHERE token_hash = ${sqlString(tokenHash, operation)} GROUP BY token_hash`,
    );
    return rows[0] ?? null;
  }
}

function toSession(row: SessionRow): DashboardSession {
  return {
    tokenHash: row.the_token_hash,
    orgId: row.the_org_id,
    subject: row.the_subject,
    displayName: row.the_display_name,
    method: row.the_method as SessionMethod,
    createdAt: new Date(Number(row.the_created_ms)),
    expiresAt: new Date(Number(row.the_expires_ms)),
  };
}

/** A session's row in store_dashboard_sessions: a deletion is the same session again, marked deleted. */
function sessionRecord(session: DashboardSession, deleted: boolean, version: number): Record<string, unknown> {
  return {
    token_hash: session.tokenHash,
    org_id: session.orgId,
    subject: session.subject,
    display_name: session.displayName,
    method: session.method,
    created_ms: session.createdAt.getTime(),
    expires_ms: session.expiresAt.getTime(),
    deleted: deleted ? 1 : 0,
    version,
  };
}
