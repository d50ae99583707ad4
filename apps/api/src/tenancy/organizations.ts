// Which organization a sign-in names. The identity provider's token carries a claim
// (OIDC_ORG_CLAIM); this decides which of our organizations it means, and whether that
// organization may be used at all. Kept to one function so that every way of naming an
// organization (its org_id today; an external id given at creation, a disabled flag) is decided
// in one place.
import type { Organization, Store } from '@adp/store';

/** The organization `claim` names, or null when none may be used under that name. */
export async function resolveOrganization(store: Pick<Store, 'getOrganization'>, claim: string): Promise<Organization | null> {
  return store.getOrganization(claim);
}
