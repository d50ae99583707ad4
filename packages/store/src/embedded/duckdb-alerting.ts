// Webhook targets, deliveries and feedback in the embedded database (table `alerting`, migration
// 12): the documents of ../alerting.ts, one row per (kind, org_id, id), replaced whole; a
// delivery's body is inserted once and never replaced.
import type { AlertingKind, AlertingRow } from '../alerting.js';
import { DocumentAlertingStore, type AlertingDocuments } from '../alerting-documents.js';
import type { EmbeddedAccess } from './duckdb-database.js';

class DuckDBAlertingDocuments implements AlertingDocuments {
  constructor(private readonly access: EmbeddedAccess) {}

  put(operation: string, rows: readonly AlertingRow[]): Promise<void> {
    return this.insert(operation, 'INSERT OR REPLACE', rows);
  }

  putOnce(operation: string, rows: readonly AlertingRow[]): Promise<void> {
    // A row already stored is neither replaced nor rewritten (a delivery's body, written once).
    return this.insert(operation, 'INSERT OR IGNORE', rows);
  }

  private insert(operation: string, verb: 'INSERT OR REPLACE' | 'INSERT OR IGNORE', rows: readonly AlertingRow[]): Promise<void> {
    return this.access.run(operation, async (connection) => {
      const values = rows.map((_, i) => `($${i * 7 + 1}, $${i * 7 + 2}, $${i * 7 + 3}, $${i * 7 + 4}, $${i * 7 + 5}, $${i * 7 + 6}, $${i * 7 + 7})`);
      await connection.run(
        `${verb} INTO alerting (kind, org_id, id, parent, status, created_ms, doc) VALUES ${values.join(', ')}`,
        rows.flatMap((row) => [row.kind, row.orgId, row.id, row.parent, row.status, BigInt(row.createdMs), row.doc]),
      );
    });
  }

  get(operation: string, kind: AlertingKind, orgId: string, id: string): Promise<string | null> {
    return this.access.run(operation, async (connection) => {
      const reader = await connection.runAndReadAll('SELECT doc FROM alerting WHERE kind = $1 AND org_id = $2 AND id = $3', [kind, orgId, id]);
      const row = reader.getRowObjects()[0];
      return row === undefined ? null : String(row['doc']);
    });
  }

  getMany(operation: string, kind: AlertingKind, orgId: string, ids: readonly string[]): Promise<string[]> {
    return this.access.run(operation, async (connection) => {
      const reader = await connection.runAndReadAll(
        `SELECT doc FROM alerting WHERE kind = $1 AND org_id = $2 AND id IN (${ids.map((_, i) => `$${i + 3}`).join(', ')})`,
        [kind, orgId, ...ids],
      );
      return reader.getRowObjects().map((row) => String(row['doc']));
    });
  }

  list(
    operation: string,
    query: { kind: AlertingKind; orgId?: string; parent?: string; status?: string; limit: number; newestFirst: boolean },
  ): Promise<string[]> {
    return this.access.run(operation, async (connection) => {
      const order = query.newestFirst ? 'DESC' : 'ASC';
      const reader = await connection.runAndReadAll(
        `SELECT doc FROM alerting
          WHERE kind = $1 AND ($2 = '' OR org_id = $2) AND ($3 = '' OR parent = $3) AND ($4 = '' OR status = $4)
          ORDER BY created_ms ${order}, id ${order} LIMIT ${query.limit}`,
        [query.kind, query.orgId ?? '', query.parent ?? '', query.status ?? ''],
      );
      return reader.getRowObjects().map((row) => String(row['doc']));
    });
  }

  remove(operation: string, kind: AlertingKind, orgId: string, id: string): Promise<boolean> {
    return this.access.run(operation, async (connection) => {
      const reader = await connection.runAndReadAll('DELETE FROM alerting WHERE kind = $1 AND org_id = $2 AND id = $3 RETURNING id', [kind, orgId, id]);
      return reader.getRowObjects().length > 0;
    });
  }

  removeChildren(operation: string, kind: AlertingKind, orgId: string, parent: string, parentPrefix: string | null): Promise<number> {
    return this.access.run(operation, async (connection) => {
      const reader = await connection.runAndReadAll(
        `DELETE FROM alerting WHERE kind = $1 AND org_id = $2 AND (parent = $3 OR ($4 <> '' AND starts_with(parent, $4))) RETURNING id`,
        [kind, orgId, parent, parentPrefix ?? ''],
      );
      return reader.getRowObjects().length;
    });
  }
}

export function duckDBAlertingStore(access: EmbeddedAccess): DocumentAlertingStore {
  return new DocumentAlertingStore(new DuckDBAlertingDocuments(access));
}
