// Usage per UTC day in the embedded database: a GROUP BY over usage_by_kind_daily, which the store
// keeps per (organization, key kind, endpoint, day). Runs on the store's queue.
import type { EmbeddedAccess } from './duckdb-database.js';
import { validateDailyUsageQuery, type DailyUsage, type DailyUsageQuery, type DailyUsageStore } from '../usage-daily.js';

export class DuckDBDailyUsageStore implements DailyUsageStore {
  constructor(private readonly access: EmbeddedAccess) {}

  usageByDay(orgId: string, query: DailyUsageQuery): Promise<readonly DailyUsage[]> {
    try {
      validateDailyUsageQuery(query);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.access.run('usageByDay', async (connection) => {
      const reader = await connection.runAndReadAll(
        `SELECT strftime(day, '%Y-%m-%d') AS the_day, endpoint, CAST(sum(points) AS BIGINT) AS points, CAST(sum(calls) AS BIGINT) AS calls
           FROM usage_by_kind_daily
          WHERE org_id = $1 AND ($2 = '' OR key_kind = $2) AND day >= CAST($3 AS DATE) AND day <= CAST($4 AS DATE)
          GROUP BY day, endpoint ORDER BY day, endpoint`,
        [orgId, query.keyKind ?? '', query.fromDay, query.toDay],
      );
      return reader.getRowObjects().map((row) => ({
        day: String(row['the_day']),
        endpoint: String(row['endpoint']),
        points: Number(row['points']),
        calls: Number(row['calls']),
      }));
    });
  }
}
