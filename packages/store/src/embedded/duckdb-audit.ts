// The audit log in the embedded database (table `audit_events`, migration 5). It shares the
// embedded store's connection and queue: DuckDB has one writer per file, and a statement must not
// run beside another on one connection.
import type { DuckDBValue } from '@duckdb/node-api';
import type { EmbeddedAccess } from './duckdb-database.js';
import {
  auditPage,
  auditQuery,
  validateAuditEvent,
  type AuditActorKind,
  type AuditEvent,
  type AuditListOptions,
  type AuditPage,
  type AuditStore,
} from '../audit.js';

export class DuckDBAuditStore implements AuditStore {
  constructor(private readonly access: EmbeddedAccess) {}

  record(event: AuditEvent): Promise<void> {
    try {
      validateAuditEvent(event);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.access.run('recordAudit', async (connection) => {
      await connection.run(
        `INSERT INTO audit_events (event_id, org_id, occurred_at, actor_kind, actor_id, action, target, source_ip)
           VALUES ($1, $2, epoch_ms(CAST($3 AS BIGINT)), $4, $5, $6, $7, $8)`,
        [event.eventId, event.orgId, BigInt(event.at.getTime()), event.actor.kind, event.actor.id, event.action, event.target, event.sourceIp],
      );
    });
  }

  list(orgId: string, options: AuditListOptions): Promise<AuditPage> {
    let query;
    try {
      query = auditQuery(orgId, options);
    } catch (err) {
      return Promise.reject(err);
    }
    const { fromMs, toMs, limit, after } = query;
    return this.access.run('listAudit', async (connection) => {
      const conditions = ['org_id = $1'];
      const values: DuckDBValue[] = [orgId];
      const bind = (value: DuckDBValue): string => {
        values.push(value);
        return `$${values.length}`;
      };
      if (fromMs !== null) conditions.push(`occurred_at >= epoch_ms(CAST(${bind(BigInt(fromMs))} AS BIGINT))`);
      if (toMs !== null) conditions.push(`occurred_at < epoch_ms(CAST(${bind(BigInt(toMs))} AS BIGINT))`);
      if (after !== null) {
        const at = bind(BigInt(after.atMs));
        const id = bind(after.eventId);
        conditions.push(`(occurred_at < epoch_ms(CAST(${at} AS BIGINT)) OR (occurred_at = epoch_ms(CAST(${at} AS BIGINT)) AND event_id < ${id}))`);
      }
      const reader = await connection.runAndReadAll(
        `SELECT event_id, org_id, epoch_ms(occurred_at) AS at_ms, actor_kind, actor_id, action, target, source_ip
           FROM audit_events WHERE ${conditions.join(' AND ')}
           ORDER BY occurred_at DESC, event_id DESC LIMIT ${bind(BigInt(limit + 1))}`,
        values,
      );
      return auditPage(reader.getRowObjects().map(toAuditEvent), limit);
    });
  }
}

function toAuditEvent(row: Record<string, DuckDBValue>): AuditEvent {
  const sourceIp = row['source_ip'];
  return {
    eventId: String(row['event_id']),
    orgId: String(row['org_id']),
    at: new Date(Number(row['at_ms'])),
    actor: { kind: String(row['actor_kind']) as AuditActorKind, id: String(row['actor_id']) },
    action: String(row['action']),
    target: String(row['target']),
    sourceIp: sourceIp === null || sourceIp === undefined ? null : String(sourceIp),
  };
}
