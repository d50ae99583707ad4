// Every port's contract, for one backend: the embedded store's test file and the ClickHouse
// integration test call this, so both backends pass the same suites.
import { describeAccountsContract } from './accounts.js';
import { describeAlertingContract } from './alerting.js';
import { describeAuditContract } from './audit.js';
import type { StoreBackend } from './backend.js';
import { describeBaselineActivityContract } from './baseline-activity.js';
import { describeBaselineContract } from './baselines.js';
import { describeLifecycleContract } from './lifecycle.js';
import { describeMachineContract } from './machines.js';
import { describeMeteringContract } from './metering.js';
import { describeTenancyContract } from './tenancy.js';
import { describeUsageContract } from './usage.js';

export { baselineFor, newKey, regimes, sha256, type StoreBackend } from './backend.js';

export function describeStoreContracts(name: string, backend: StoreBackend): void {
  describeTenancyContract(name, backend);
  describeUsageContract(name, backend);
  describeBaselineContract(name, backend);
  describeMachineContract(name, backend);
  describeBaselineActivityContract(name, backend);
  describeAuditContract(name, backend);
  describeMeteringContract(name, backend);
  describeAccountsContract(name, backend);
  describeAlertingContract(name, backend);
  describeLifecycleContract(name, backend);
}
