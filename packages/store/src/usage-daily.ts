// Usage per UTC day: the calls and points of each endpoint label on each day, read from the same
// per-day tables `usageFor` sums (embedded: usage_by_kind_daily; ClickHouse: store_usage_by_kind_daily
// plus the older store_usage_daily, which counts as live). Adapters: embedded/duckdb-usage-daily.ts,
// clickhouse/clickhouse-usage-daily.ts.
import { StoreError } from './errors.js';
import type { ApiKeyKind } from './types.js';

export interface DailyUsage {
  /** `YYYY-MM-DD`, UTC. */
  readonly day: string;
  readonly endpoint: string;
  readonly points: number;
  readonly calls: number;
}

export interface DailyUsageQuery {
  /** First day, `YYYY-MM-DD` (included). */
  readonly fromDay: string;
  /** Last day, `YYYY-MM-DD` (included). */
  readonly toDay: string;
  /** Only calls made with keys of this kind; absent: both. */
  readonly keyKind?: ApiKeyKind;
}

export interface DailyUsageStore {
  /** The organization's usage on each day of the range that had any, sorted by day, then endpoint. */
  usageByDay(orgId: string, query: DailyUsageQuery): Promise<readonly DailyUsage[]>;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

export function validateDailyUsageQuery(query: DailyUsageQuery): void {
  const operation = 'usageByDay';
  for (const [name, day] of [['fromDay', query.fromDay], ['toDay', query.toDay]] as const) {
    if (typeof day !== 'string' || !DAY.test(day) || Number.isNaN(Date.parse(`${day}T00:00:00Z`))) {
      throw new StoreError('STORE_INVALID_ARGUMENT', operation, `${name} must be a YYYY-MM-DD day`);
    }
  }
  if (query.keyKind !== undefined && query.keyKind !== 'live' && query.keyKind !== 'test') {
    throw new StoreError('STORE_INVALID_ARGUMENT', operation, 'keyKind must be live or test');
  }
}
