// A marketplace subscriber's organization: found by its external id, else created under an id
// derived from it, so that two visits (even at once, even on two replicas) land on one
// organization.
import { createHash } from 'node:crypto';
import type { Organization, Store } from '@adp/store';
import { AppError, ERRORS } from '../errors.js';
import type { IssuedKeyView, KeyManager } from '../tenancy/key-management.js';
import type { MarketplaceCustomer } from './client.js';
import type { ExportLease } from './lease.js';

/** How long one visit may hold the organization's key lease, and how long another waits for it. */
const KEY_LEASE_TTL_MS = 30_000;
const KEY_LEASE_WAIT_MS = 5_000;
const KEY_LEASE_RETRY_MS = 50;

export interface Provisioned {
  readonly organization: Organization;
  /** The live key issued on this visit (shown once), or null when the organization already had keys. */
  readonly liveKey: IssuedKeyView | null;
}

/** `aws:<CustomerIdentifier>`, or `aws:<CustomerAWSAccountId>` when the marketplace gave no identifier. */
export function marketplaceExternalId(customer: MarketplaceCustomer): string {
  return `aws:${customer.customerIdentifier ?? customer.customerAwsAccountId ?? ''}`;
}

/** The org_id a customer's organization is created under: the same on every visit and replica. */
export function marketplaceOrganizationId(externalId: string): string {
  return `org_mkt_${createHash('sha256').update(externalId).digest('hex').slice(0, 32)}`;
}

/**
 * The customer's `paid` organization, created when absent, and a live key when it has none yet.
 * A key is issued only while the organization has no unrevoked key, which also repairs a visit that
 * failed between creating the organization and issuing its key. Throws MarketplaceCustomerDisabled
 * for a disabled organization.
 */
export async function provisionCustomer(
  store: Store,
  keys: KeyManager,
  customer: MarketplaceCustomer,
  leaseNamed?: (name: string) => ExportLease | null,
): Promise<Provisioned> {
  const externalId = marketplaceExternalId(customer);
  const organization =
    (await store.findOrganizationByExternalId(externalId)) ??
    (await store.createOrganization(marketplaceOrganizationId(externalId), `AWS Marketplace customer ${externalId.slice(4)}`, {
      plan: 'paid',
      externalId,
    }));
  if (organization.disabledAt !== null) {
    throw new AppError(ERRORS.MarketplaceCustomerDisabled, 'This subscription\'s organization is disabled.');
  }
  // Every visit: a renewed subscription may come with a new license, used from the next hour computed.
  await store.metering?.putCustomer({
    orgId: organization.id,
    customerIdentifier: customer.customerIdentifier,
    awsAccountId: customer.customerAwsAccountId,
    licenseArn: customer.licenseArn,
    updatedAt: new Date(),
  });
  // All keys revoked (the subscription ended, then the customer subscribed again): a new one.
  const hasKey = async () => (await store.listApiKeys(organization.id)).some((key) => key.revokedAt === null);
  if (await hasKey()) return { organization, liveKey: null };
  // Two first visits at once (even on two replicas): one issues the key under the organization's
  // lease, the other waits for it and then finds the key. Without a lease both may issue one.
  const lease = leaseNamed?.(`marketplace-key:${organization.id}`) ?? null;
  if (lease === null) return { organization, liveKey: await keys.create(organization.id, 'live', 'marketplace') };
  const held = await acquireWithin(lease);
  try {
    if (await hasKey()) return { organization, liveKey: null };
    return { organization, liveKey: await keys.create(organization.id, 'live', 'marketplace') };
  } finally {
    await held.release().catch(() => undefined);
  }
}

async function acquireWithin(lease: ExportLease): Promise<{ release(): Promise<void> }> {
  const deadline = Date.now() + KEY_LEASE_WAIT_MS;
  for (;;) {
    let held;
    try {
      held = await lease.acquire(KEY_LEASE_TTL_MS);
    } catch (cause) {
      throw new AppError(ERRORS.ServiceUnavailable, 'The key lease could not be taken.', { cause });
    }
    if (held !== null) return held;
    if (Date.now() >= deadline) throw new AppError(ERRORS.ServiceUnavailable, 'Another visit is setting up this subscription; reload in a moment.');
    await new Promise((resolve) => setTimeout(resolve, KEY_LEASE_RETRY_MS));
  }
}
