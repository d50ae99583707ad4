// The audit log in ClickHouse (schemas/clickhouse/0005_audit.sql). Each event is one inserted row;
// a page is one SELECT on the organization's slice of the sorting key. Values reach SQL only
// through `sqlString` and `sqlInteger`; the table name comes from the store, whose database name
// `sqlIdentifier` checked.
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
import type { ClickHouseAccess } from './clickhouse-database.js';
import { sqlInteger, sqlString } from './sql.js';

interface AuditRow {
  event_id: string;
  org_id: string;
  at_ms: number;
  the_actor_kind: string;
  actor_id: string;
  action: string;
  target: string;
  source_ip: string | null;
}

export class ClickHouseAuditStore implements AuditStore {
  constructor(
    private readonly access: ClickHouseAccess,
    /** `<database>.store_audit_events`. */
    private readonly table: string,
  ) {}

  record(event: AuditEvent): Promise<void> {
    return this.access.op('recordAudit', async (operation) => {
      validateAuditEvent(event);
      await this.access.insert(operation, this.table, [
        {
          org_id: event.orgId,
          at_ms: event.at.getTime(),
          event_id: event.eventId,
          actor_kind: event.actor.kind,
          actor_id: event.actor.id,
          action: event.action,
          target: event.target,
          source_ip: event.sourceIp,
        },
      ]);
    });
  }

  list(orgId: string, options: AuditListOptions): Promise<AuditPage> {
    return this.access.op('listAudit', async (operation) => {
      const { fromMs, toMs, limit, after } = auditQuery(orgId, options);
      const conditions = [`org_id = ${sqlString(orgId, operation)}`];
      if (fromMs !== null) conditions.push(`at_ms >= ${sqlInteger(fromMs, operation)}`);
      if (toMs !== null) conditions.push(`at_ms < ${sqlInteger(toMs, operation)}`);
      if (after !== null) {
        const at = sqlInteger(after.atMs, operation);
        conditions.push(`(at_ms < ${at} OR (at_ms = ${at} AND event_id < ${sqlString(after.eventId, operation)}))`);
      }
      // The alias differs from the column's name: the old analyzer would substitute it into WHERE.
      const rows = await this.access.rows<AuditRow>(
        operation,
        `SELECT event_id, org_id, at_ms, toString(actor_kind) AS the_actor_kind, actor_id, action, target, source_ip
           FROM ${this.table} WHERE ${conditions.join(' AND ')}
          ORDER BY at_ms DESC, event_id DESC LIMIT ${sqlInteger(limit + 1, operation)}`,
      );
      return auditPage(rows.map(toAuditEvent), limit);
    });
  }
}

function toAuditEvent(row: AuditRow): AuditEvent {
  return {
    eventId: row.event_id,
    orgId: row.org_id,
    at: new Date(Number(row.at_ms)),
    actor: { kind: row.the_actor_kind as AuditActorKind, id: row.actor_id },
    action: row.action,
    target: row.target,
    sourceIp: row.source_ip,
  };
}
