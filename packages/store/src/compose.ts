// The one place the ports become a Store: each port by name, and their methods on the store
// itself, so that the embedded and the ClickHouse backends cannot disagree on the shape.
import type { AccountStore } from './accounts.js';
import type { AlertingStore } from './alerting.js';
import type { AuditStore } from './audit.js';
import type { BaselineActivityStore } from './baseline-activity.js';
import type { LeaseStore } from './leases.js';
import type { MeteringStore } from './metering.js';
import type { BaselineStore, MachineStore, Store, TenancyStore, UsageStore } from './types.js';
import type { DailyUsageStore } from './usage-daily.js';

export interface StorePorts {
  readonly tenancy: TenancyStore;
  readonly usage: UsageStore;
  readonly baselines: BaselineStore;
  readonly machines: MachineStore;
  readonly baselineActivity: BaselineActivityStore;
  readonly audit: AuditStore;
  readonly metering: MeteringStore;
  readonly accounts: AccountStore;
  readonly dailyUsage: DailyUsageStore;
  /** Named leases between replicas: the embedded store only (ClickHouse has no compare-and-set). */
  readonly leases?: LeaseStore;
  readonly alerting: AlertingStore;
}

/** What the database under the ports does itself. */
export interface StoreLifecycle {
  ping(): Promise<void>;
  close(): Promise<void>;
}

export function composeStore(ports: StorePorts, lifecycle: StoreLifecycle): Store {
  const { tenancy, usage, baselines, machines } = ports;
  return {
    ...ports,
    createOrganization: tenancy.createOrganization.bind(tenancy),
    ensureDefaultOrganization: tenancy.ensureDefaultOrganization.bind(tenancy),
    getOrganization: tenancy.getOrganization.bind(tenancy),
    findOrganizationByExternalId: tenancy.findOrganizationByExternalId.bind(tenancy),
    listOrganizations: tenancy.listOrganizations.bind(tenancy),
    disableOrganization: tenancy.disableOrganization.bind(tenancy),
    completeBootstrap: tenancy.completeBootstrap.bind(tenancy),
    createApiKey: tenancy.createApiKey.bind(tenancy),
    findApiKeyByHash: tenancy.findApiKeyByHash.bind(tenancy),
    listApiKeys: tenancy.listApiKeys.bind(tenancy),
    revokeApiKey: tenancy.revokeApiKey.bind(tenancy),
    expireApiKey: tenancy.expireApiKey.bind(tenancy),
    touchApiKey: tenancy.touchApiKey.bind(tenancy),
    recordUsage: usage.recordUsage.bind(usage),
    usageFor: usage.usageFor.bind(usage),
    upsertBaseline: baselines.upsertBaseline.bind(baselines),
    getBaseline: baselines.getBaseline.bind(baselines),
    listMachines: machines.listMachines.bind(machines),
    deleteMachine: machines.deleteMachine.bind(machines),
    recordDetection: machines.recordDetection.bind(machines),
    machineStatus: machines.machineStatus.bind(machines),
    ping: () => lifecycle.ping(),
    close: () => lifecycle.close(),
  };
}
