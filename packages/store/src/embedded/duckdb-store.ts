// The embedded default: every port on one DuckDB file (see duckdb-database.ts for the connection,
// queue and migrations they share).
import { DEFAULT_ORGANIZATION_ID, DEFAULT_ORGANIZATION_NAME, RECENT_DETECTIONS_KEPT } from '../constants.js';
import { composeStore } from '../compose.js';
import type { Store } from '../types.js';
import { DuckDBAccountStore } from './duckdb-accounts.js';
import { duckDBAlertingStore } from './duckdb-alerting.js';
import { DuckDBAuditStore } from './duckdb-audit.js';
import { DuckDBBaselineActivityStore } from './duckdb-baseline-activity.js';
import { DuckDBBaselineStore } from './duckdb-baselines.js';
import { EMBEDDED_STORE_FILE_NAME, openEmbeddedDatabase, type EmbeddedAccess, type EmbeddedStoreOptions } from './duckdb-database.js';
import { DuckDBMachineStore } from './duckdb-machines.js';
import { DuckDBMeteringStore } from './duckdb-metering.js';
import { DuckDBTenancyStore } from './duckdb-tenancy.js';
import { DuckDBDailyUsageStore } from './duckdb-usage-daily.js';
import { DuckDBLeaseStore } from './duckdb-leases.js';
import { DuckDBUsageStore } from './duckdb-usage.js';

export { DEFAULT_ORGANIZATION_ID, DEFAULT_ORGANIZATION_NAME, EMBEDDED_STORE_FILE_NAME, RECENT_DETECTIONS_KEPT, type EmbeddedStoreOptions };

/** Opens (creating and migrating when needed) the embedded store under `options.dataDir`. */
export async function openEmbeddedStore(options: EmbeddedStoreOptions): Promise<Store> {
  const db = await openEmbeddedDatabase(options);
  const access: EmbeddedAccess = { run: (operation, task) => db.op(operation, () => task(db.connection)) };
  return composeStore(
    {
      tenancy: new DuckDBTenancyStore(db),
      usage: new DuckDBUsageStore(db),
      baselines: new DuckDBBaselineStore(db),
      machines: new DuckDBMachineStore(db),
      baselineActivity: new DuckDBBaselineActivityStore(db),
      audit: new DuckDBAuditStore(access),
      metering: new DuckDBMeteringStore(access),
      accounts: new DuckDBAccountStore(access),
      dailyUsage: new DuckDBDailyUsageStore(access),
      leases: new DuckDBLeaseStore(access),
      alerting: duckDBAlertingStore(access),
    },
    db,
  );
}
