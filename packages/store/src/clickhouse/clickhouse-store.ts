// The scale-out store: every port on one ClickHouse database (see clickhouse-database.ts for the
// client, migrations and group commit they share, and what having no transactions means).
import { composeStore } from '../compose.js';
import type { Store } from '../types.js';
import { ClickHouseAccountStore } from './clickhouse-accounts.js';
import { clickHouseAlertingStore } from './clickhouse-alerting.js';
import { ClickHouseAuditStore } from './clickhouse-audit.js';
import { ClickHouseBaselineActivityStore } from './clickhouse-baseline-activity.js';
import { ClickHouseBaselineStore } from './clickhouse-baselines.js';
import { closedError } from '../database.js';
import { openClickHouseDatabase, type ClickHouseStoreOptions } from './clickhouse-database.js';
import { ClickHouseMachineStore } from './clickhouse-machines.js';
import { ClickHouseMeteringStore } from './clickhouse-metering.js';
import { ClickHouseTenancyStore } from './clickhouse-tenancy.js';
import { ClickHouseDailyUsageStore } from './clickhouse-usage-daily.js';
import { ClickHouseUsageStore } from './clickhouse-usage.js';

export type { ClickHouseStoreOptions };
export { BOOTSTRAP_CLAIM_WINDOW_MS, apiKeyIdFor } from './clickhouse-tenancy.js';

/** Opens the store on `options.database`, creating and migrating it when needed. */
export async function openClickHouseStore(options: ClickHouseStoreOptions): Promise<Store> {
  const db = await openClickHouseDatabase(options);
  const meteringCallInserts = db.batcher('countCall', db.t.meteringCalls);
  return composeStore(
    {
      tenancy: new ClickHouseTenancyStore(db),
      usage: new ClickHouseUsageStore(db),
      baselines: new ClickHouseBaselineStore(db),
      machines: new ClickHouseMachineStore(db),
      baselineActivity: new ClickHouseBaselineActivityStore(db),
      audit: new ClickHouseAuditStore(db, db.t.audit),
      metering: new ClickHouseMeteringStore(
        db,
        (row) => (db.closed ? Promise.reject(closedError('countCall')) : meteringCallInserts.add(row)),
        { calls: db.t.meteringCalls, ledger: db.t.meteringLedger, customers: db.t.marketplaceCustomers },
      ),
      accounts: new ClickHouseAccountStore(db, { users: db.t.users, sessions: db.t.sessions }),
      dailyUsage: new ClickHouseDailyUsageStore(db, db.t),
      alerting: clickHouseAlertingStore(db, db.t.alerting),
    },
    db,
  );
}
