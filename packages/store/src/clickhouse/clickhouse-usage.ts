// The usage port in ClickHouse: one row per call into a SummingMergeTree per organization, key kind,
// endpoint and UTC day (store_usage_by_kind_daily), group-committed; read with sum().
import { StoreError } from '../errors.js';
import { organizationUsage, type ApiKeyKind, type OrganizationUsage, type UsageQuery, type UsageStore } from '../types.js';
import { closedError } from '../database.js';
import { ClickHouseAdapter, type ClickHouseDatabase } from './clickhouse-database.js';
import type { InsertBatcher } from './insert-batcher.js';
import { sqlString } from './sql.js';
import { epochMs } from './validation.js';

export class ClickHouseUsageStore extends ClickHouseAdapter implements UsageStore {
  private readonly usageInserts: InsertBatcher;

  constructor(db: ClickHouseDatabase) {
    super(db);
    this.usageInserts = db.batcher('recordUsage', db.t.usageByKind);
  }

  recordUsage(orgId: string, endpoint: string, points: number, keyKind: ApiKeyKind = 'live'): Promise<void> {
    if (this.db.closed) return Promise.reject(closedError('recordUsage'));
    const validIds = typeof orgId === 'string' && typeof endpoint === 'string' && orgId.length > 0 && endpoint.length > 0;
    if (!validIds || !Number.isSafeInteger(points) || points < 0 || (keyKind !== 'live' && keyKind !== 'test')) {
      return Promise.reject(
        new StoreError(
          'STORE_INVALID_ARGUMENT',
          'recordUsage',
          'orgId and endpoint must be non-empty, points a non-negative integer and keyKind live or test',
        ),
      );
    }
    let day: string;
    try {
      day = new Date(this.nowMs()).toISOString().slice(0, 10);
    } catch (cause) {
      return Promise.reject(cause);
    }
    // One row per call; SummingMergeTree folds them together when parts merge.
    return this.usageInserts.add({ org_id: orgId, key_kind: keyKind, endpoint, day, points, calls: 1 });
  }

  usageFor(orgId: string, query: UsageQuery = {}): Promise<OrganizationUsage> {
    return this.op('usageFor', async (operation) => {
      if (query.keyKind !== undefined && query.keyKind !== 'live' && query.keyKind !== 'test') {
        throw new StoreError('STORE_INVALID_ARGUMENT', operation, 'keyKind must be live or test');
      }
      const since = query.since === undefined ? '' : ` AND day >= toDate(${sqlString(new Date(epochMs(operation, query.since)).toISOString().slice(0, 10))})`;
      const org = `org_id = ${sqlString(orgId)}`;
      // Usage from before kinds were recorded (store_usage_daily) was billed: it counts as live.
      const parts = [`SELECT endpoint, points, calls FROM ${this.t.usageByKind} WHERE ${org}${since}${query.keyKind ? ` AND key_kind = ${sqlString(query.keyKind)}` : ''}`];
      if (query.keyKind !== 'test') parts.push(`SELECT endpoint, points, calls FROM ${this.t.usage} WHERE ${org}${since}`);
      const byEndpoint = (
        await this.rows<{ endpoint: string; total_points: number; total_calls: number }>(
          operation,
          `SELECT endpoint, sum(points) AS total_points, sum(calls) AS total_calls FROM (${parts.join(' UNION ALL ')})
            GROUP BY endpoint ORDER BY endpoint`,
        )
      ).map((row) => ({ endpoint: row.endpoint, points: Number(row.total_points), calls: Number(row.total_calls) }));
      return organizationUsage(orgId, byEndpoint);
    });
  }
}
