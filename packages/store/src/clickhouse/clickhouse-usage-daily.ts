// Usage per UTC day in ClickHouse: sums over store_usage_by_kind_daily and, unless only test keys
// are asked for, the older store_usage_daily (usage from before kinds were recorded was billed, so
// it counts as live), exactly as the store's `usageFor` reads them.
import { validateDailyUsageQuery, type DailyUsage, type DailyUsageQuery, type DailyUsageStore } from '../usage-daily.js';
import type { ClickHouseAccess } from './clickhouse-database.js';
import { sqlString } from './sql.js';

export class ClickHouseDailyUsageStore implements DailyUsageStore {
  constructor(
    private readonly access: ClickHouseAccess,
    private readonly tables: { readonly usageByKind: string; readonly usage: string },
  ) {}

  usageByDay(orgId: string, query: DailyUsageQuery): Promise<readonly DailyUsage[]> {
    return this.access.op('usageByDay', async (operation) => {
      validateDailyUsageQuery(query);
      const where = `org_id = ${sqlString(orgId, operation)} AND day >= toDate(${sqlString(query.fromDay, operation)}) AND day <= toDate(${sqlString(query.toDay, operation)})`;
      const kind = query.keyKind === undefined ? '' : ` AND key_kind = ${sqlString(query.keyKind, operation)}`;
      const parts = [`SELECT day, endpoint, points, calls FROM ${this.tables.usageByKind} WHERE ${where}${kind}`];
      if (query.keyKind !== 'test') parts.push(`SELECT day, endpoint, points, calls FROM ${this.tables.usage} WHERE ${where}`);
      const rows = await this.access.rows<{ the_day: string; endpoint: string; total_points: number | string; total_calls: number | string }>(
        operation,
        `SELECT toString(day) AS the_day, endpoint, sum(points) AS total_points, sum(calls) AS total_calls FROM (${parts.join(' UNION ALL ')})
          GROUP BY day, endpoint ORDER BY day, endpoint`,
      );
      return rows.map((row) => ({ day: row.the_day, endpoint: row.endpoint, points: Number(row.total_points), calls: Number(row.total_calls) }));
    });
  }
}
