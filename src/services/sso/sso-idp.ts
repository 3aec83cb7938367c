import type { EntityManager } from '@mikro-orm/postgresql';
import { Organization } from '../../../entities/organization.js';
import { Role } from '../../../entities/role.js';
import { SsoProvider } from '../../../entities/sso.js';
import type { OidcFetch } from '../../auth/oidc-toolkit.js';
import { isUuid } from '../../auth/policy.js';
import type { Config } from '../../config.js';
import { badRequest } from '../../errors.js';
import { createGuardedFetch } from '../../net/outbound-guard.js';

// What the login flows (OIDC, SAML, account linking and provisioning) share with the providers' administration.

export const HTTPS_ONLY = 'must be an https URL';

/** Every server-side request to an IdP goes through the SSRF guard. */
export function idpFetch(config: Config): OidcFetch {
  return createGuardedFetch({ allowPrivateNetworkTargets: config.allowPrivateNetworkTargets, timeoutMs: 10_000 });
}

function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  return host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

/**
 * The IdP URLs the login sends browsers to (OIDC authorizationUrl, SAML ssoUrl) are https, like those the
 * service fetches itself; plain http only to a loopback IdP, and only with ALLOW_PRIVATE_NETWORK_TARGETS.
 * Applied to typed values, discovered and metadata values, and again at login for rows stored before.
 */
export function assertBrowserUrl(config: Config, field: 'authorizationUrl' | 'ssoUrl', url: string | null | undefined): void {
  if (!url) return;
  const { protocol, hostname } = new URL(url);
  if (protocol === 'https:' || (protocol === 'http:' && config.allowPrivateNetworkTargets && isLoopbackHost(hostname))) return;
  throw badRequest(`${field}: ${HTTPS_ONLY}`);
}

export async function findActiveProvider(em: EntityManager, orgId: string): Promise<SsoProvider | null> {
  return isUuid(orgId) ? em.findOne(SsoProvider, { orgId, status: 'active' }) : null;
}

/**
 * A default role must be organization-scoped and usable by this organization: a seeded system role
 * (`Organization Admin/Technician/Viewer`), a custom role of the organization, or one its partner
 * defined for all of its organizations.
 */
export async function usableDefaultRole(em: EntityManager, orgId: string, roleId: string | null): Promise<Role | null> {
  if (!roleId) return null;
  const role = await em.findOne(Role, { id: roleId });
  if (!role || role.scope !== 'organization') return null;
  if (role.isSystem || role.orgId === orgId) return role;
  if (role.orgId !== null || role.partnerId === null) return null;
  const org = await em.findOne(Organization, { id: orgId });
  return org?.partnerId === role.partnerId ? role : null;
}
