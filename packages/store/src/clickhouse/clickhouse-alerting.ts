// Webhook targets, deliveries and feedback in ClickHouse (schemas/clickhouse/0013_alerting.sql):
// the documents of ../alerting.ts, each write a row with a new version, reads the latest row per
// key (argMax), removals a row with deleted = 1; a delivery's body is inserted only when absent.
// Values reach SQL only through sqlString/sqlInteger.
import type { AlertingKind, AlertingRow } from '../alerting.js';
import { DocumentAlertingStore, type AlertingDocuments } from '../alerting-documents.js';
import type { ClickHouseAccess } from './clickhouse-database.js';
import { sqlInteger, sqlString } from './sql.js';

interface LatestRow {
  the_doc: string;
  the_deleted: number | string;
}

class ClickHouseAlertingDocuments implements AlertingDocuments {
  constructor(
    private readonly access: ClickHouseAccess,
    private readonly table: string,
  ) {}

  put(operation: string, rows: readonly AlertingRow[]): Promise<void> {
    return this.access.op(operation, (op) => this.write(op, rows, 0));
  }

  /** One read of which rows are stored (per organization and kind), then one insert of the others. */
  putOnce(operation: string, rows: readonly AlertingRow[]): Promise<void> {
    return this.access.op(operation, async (op) => {
      const groups = new Map<string, AlertingRow[]>();
      for (const row of rows) {
        const key = `${row.kind}\u0000${row.orgId}`;
        const group = groups.get(key);
        if (group) group.push(row);
        else groups.set(key, [row]);
      }
      const missing: AlertingRow[] = [];
      for (const group of groups.values()) {
        const { kind, orgId } = group[0]!;
        const stored = await this.access.rows<{ id: string }>(
          op,
          `SELECT id FROM ${this.table}
            WHERE kind = ${sqlString(kind, op)} AND org_id = ${sqlString(orgId, op)} AND id IN (${group.map((row) => sqlString(row.id, op)).join(', ')})
            GROUP BY id HAVING argMax(deleted, version) = 0`,
        );
        const present = new Set(stored.map((row) => row.id));
        missing.push(...group.filter((row) => !present.has(row.id)));
      }
      if (missing.length > 0) await this.write(op, missing, 0);
    });
  }

  private write(operation: string, rows: readonly AlertingRow[], deleted: 0 | 1): Promise<void> {
    return this.access.insert(
      operation,
      this.table,
      rows.map((row) => ({
        kind: row.kind,
        org_id: row.orgId,
        id: row.id,
        parent: row.parent,
        status: row.status,
        created_ms: row.createdMs,
        doc: row.doc,
        deleted,
        version: this.access.nextVersion(),
      })),
    );
  }

  get(operation: string, kind: AlertingKind, orgId: string, id: string): Promise<string | null> {
    return this.access.op(operation, async (op) => {
      const rows = await this.access.rows<LatestRow>(
        op,
        `SELECT argMax(doc, version) AS the_doc, argMax(deleted, version) AS the_deleted FROM ${this.table}
          WHERE kind = ${sqlString(kind, op)} AND org_id = ${sqlString(orgId, op)} AND id = ${sqlString(id, op)} GROUP BY id`,
      );
      const row = rows[0];
      return row === undefined || Number(row.the_deleted) !== 0 ? null : row.the_doc;
    });
  }

  getMany(operation: string, kind: AlertingKind, orgId: string, ids: readonly string[]): Promise<string[]> {
    return this.access.op(operation, async (op) => {
      const rows = await this.access.rows<LatestRow>(
        op,
        `SELECT argMax(doc, version) AS the_doc, argMax(deleted, version) AS the_deleted FROM ${this.table}
          WHERE kind = ${sqlString(kind, op)} AND org_id = ${sqlString(orgId, op)} AND id IN (${ids.map((id) => sqlString(id, op)).join(', ')}) GROUP BY id`,
      );
      return rows.filter((row) => Number(row.the_deleted) === 0).map((row) => row.the_doc);
    });
  }

  list(
    operation: string,
    query: { kind: AlertingKind; orgId?: string; parent?: string; status?: string; limit: number; newestFirst: boolean },
  ): Promise<string[]> {
    return this.access.op(operation, async (op) => {
      const where = [`kind = ${sqlString(query.kind, op)}`];
      if (query.orgId !== undefined) where.push(`org_id = ${sqlString(query.orgId, op)}`);
      // The latest row decides parent and status too: filter after the argMax.
      const outer = ['the_deleted = 0'];
      if (query.parent !== undefined) outer.push(`the_parent = ${sqlString(query.parent, op)}`);
      if (query.status !== undefined) outer.push(`the_status = ${sqlString(query.status, op)}`);
      const order = query.newestFirst ? 'DESC' : 'ASC';
      const rows = await this.access.rows<{ the_doc: string }>(
        op,
        `SELECT the_doc FROM (
           SELECT org_id, id, argMax(doc, version) AS the_doc, argMax(deleted, version) AS the_deleted,
                  argMax(parent, version) AS the_parent, argMax(status, version) AS the_status, argMax(created_ms, version) AS the_created_ms
             FROM ${this.table} WHERE ${where.join(' AND ')} GROUP BY org_id, id)
          WHERE ${outer.join(' AND ')} ORDER BY the_created_ms ${order}, id ${order} LIMIT ${sqlInteger(query.limit, op)}`,
      );
      return rows.map((row) => row.the_doc);
    });
  }

  remove(operation: string, kind: AlertingKind, orgId: string, id: string): Promise<boolean> {
    return this.access.op(operation, async (op) => {
      const rows = await this.access.rows<LatestRow & { the_parent: string; the_status: string; the_created_ms: number | string }>(
        op,
        `SELECT argMax(doc, version) AS the_doc, argMax(deleted, version) AS the_deleted, argMax(parent, version) AS the_parent,
                argMax(status, version) AS the_status, argMax(created_ms, version) AS the_created_ms FROM ${this.table}
          WHERE kind = ${sqlString(kind, op)} AND org_id = ${sqlString(orgId, op)} AND id = ${sqlString(id, op)} GROUP BY id`,
      );
      const row = rows[0];
      if (row === undefined || Number(row.the_deleted) !== 0) return false;
      await this.write(op, [{ kind, orgId, id, parent: row.the_parent, status: row.the_status, createdMs: Number(row.the_created_ms), doc: row.the_doc }], 1);
      return true;
    });
  }

  /**
   * Two statements whatever the count: the live documents counted, then their tombstones written
   * by one INSERT ... SELECT inside ClickHouse. Not an ALTER TABLE ... DELETE: a mutation runs in the
   * background (on 18.16 nothing waits for it), so a read right after would still see the rows.
   */
  removeChildren(operation: string, kind: AlertingKind, orgId: string, parent: string, parentPrefix: string | null): Promise<number> {
    return this.access.op(operation, async (op) => {
      const owned =
        parentPrefix === null
          ? `the_parent = ${sqlString(parent, op)}`
          : `(the_parent = ${sqlString(parent, op)} OR substring(the_parent, 1, ${sqlInteger(Buffer.byteLength(parentPrefix), op)}) = ${sqlString(parentPrefix, op)})`;
      const live = `SELECT id, argMax(parent, version) AS the_parent, argMax(status, version) AS the_status, argMax(created_ms, version) AS the_created_ms,
                          argMax(doc, version) AS the_doc, argMax(deleted, version) AS the_deleted
                     FROM ${this.table} WHERE kind = ${sqlString(kind, op)} AND org_id = ${sqlString(orgId, op)} GROUP BY id`;
      const counted = await this.access.rows<{ n: number | string }>(op, `SELECT count() AS n FROM (${live}) WHERE the_deleted = 0 AND ${owned}`);
      const n = Number(counted[0]?.n ?? 0);
      if (n === 0) return 0;
      await this.access.command(
        op,
        `INSERT INTO ${this.table} (kind, org_id, id, parent, status, created_ms, doc, deleted, version)
         SELECT ${sqlString(kind, op)}, ${sqlString(orgId, op)}, id, the_parent, the_status, the_created_ms, the_doc, 1, ${sqlInteger(this.access.nextVersion(), op)}
           FROM (${live}) WHERE the_deleted = 0 AND ${owned}`,
      );
      return n;
    });
  }
}

export function clickHouseAlertingStore(access: ClickHouseAccess, table: string): DocumentAlertingStore {
  return new DocumentAlertingStore(new ClickHouseAlertingDocuments(access, table));
}
