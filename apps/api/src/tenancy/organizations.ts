// Which organization a sign-in names. The identity provider's token carries a claim
// (OIDC_ORG_CLAIM); this decides which of our organizations it means, and whether that
// organization may be used at all. Kept to one function so that every way of naming an
// organization (its org_id, or the external id an operator gave it at creation) and whether a
// disabled one is refused is decided in one place.
import type { Organization, Store } from '@adp/store';

/** The organization `claim` names, or null when none may be used under that name. */
export async function resolveOrganization(
  store: Pick<Store, 'getOrganization' | 'findOrganizationByExternalId'>,
  claim: string,
): Promise<Organization | null> {
  const organization = (await store.getOrganization(claim)) ?? (await store.findOrganizationByExternalId(claim));
  return organization !== null && organization.disabledAt === null ? organization : null;
}
