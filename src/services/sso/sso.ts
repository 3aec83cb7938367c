// Public entry points of SSO login: the check a front end asks first, the start of a login for either protocol,
// and the refusal of password logins for organizations that enforce SSO.
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { SsoProviderType } from '../../../entities/sso.js';
import type { Membership } from '../../../entities/user.js';
import type { RequestContext } from '../../auth/context.js';
import { skipAuthorization } from '../../auth/policy.js';
import { AppError } from '../../errors.js';
import { parseInput, uuid } from '../../validation.js';
import { passwordLoginPolicies } from '../identity/api.js';
import { RedirectPath, type LoginRedirect } from './sso-accounts.js';
import { startOidcLogin } from './sso-oidc.js';
import { findActiveProvider } from './sso-idp.js';
import { SsoProviderTypeSchema } from './sso-presets.js';
import { startSamlLogin } from './sso-saml.js';

export type SsoCheck =
  | { ssoEnabled: false }
  | { ssoEnabled: true; provider: { id: string; name: string; type: SsoProviderType }; enforceSSO: boolean; loginUrl: string };

/** Both answers of the check in one shape (GraphQL has no anonymous unions): the other fields are absent without SSO. */
export const SsoCheckSchema = z
  .object({
    ssoEnabled: z.boolean().describe('Whether the organization has an active identity provider.'),
    provider: z
      .object({ id: uuid().describe('The provider’s ID.'), name: z.string().describe('Its display name.'), type: SsoProviderTypeSchema.describe('Its protocol.') })
      .meta({ title: 'SsoCheckProvider', description: 'The identity provider users sign in with.' })
      .optional()
      .describe('The active identity provider; null without SSO.'),
    enforceSSO: z.boolean().optional().describe('Whether password sign-in is refused for the organization’s users; null without SSO.'),
    loginUrl: z.string().optional().describe('Where to send the browser to sign in through the IdP; null without SSO.'),
  })
  .meta({ title: 'SsoCheck', description: 'Whether an organization signs in through SSO; the other fields are null when it does not.' });

/** `GET /sso/check/:orgId`: an unknown organization answers like one without SSO, so ids cannot be probed. */
export async function checkSso(ctx: RequestContext, orgId: string): Promise<SsoCheck> {
  skipAuthorization(ctx, 'the login page asks before anyone is signed in');
  const provider = await findActiveProvider(ctx.em, orgId);
  if (!provider) return { ssoEnabled: false };
  return {
    ssoEnabled: true,
    provider: { id: provider.id, name: provider.name, type: provider.type },
    enforceSSO: provider.enforceSSO,
    loginUrl: `/api/v1/sso/login/${provider.orgId}`,
  };
}

// Not strict: links from portals and emails often carry tracking parameters.
export const LoginQuery = z.object({ redirect: RedirectPath.optional() });

/** `GET /sso/login/:orgId`: where to send the browser (and the cookie to set) for the organization's active provider. */
export async function startSsoLogin(ctx: RequestContext, orgId: string, query: z.input<typeof LoginQuery>): Promise<LoginRedirect> {
  skipAuthorization(ctx, 'starting an SSO login needs no credentials');
  const { redirect = '/' } = parseInput(LoginQuery, query);
  const provider = await findActiveProvider(ctx.em, orgId);
  if (!provider) throw new AppError(404, 'NOT_FOUND', 'No active SSO provider for this organization');
  await sweepExpired(ctx.em);
  return provider.type === 'oidc' ? startOidcLogin(ctx, provider, redirect) : startSamlLogin(ctx, provider, redirect);
}

/** Login state is short-lived; starting a login clears what has expired (sessions, requests, codes, assertion ids). */
async function sweepExpired(em: EntityManager): Promise<void> {
  for (const table of ['sso_session', 'saml_request', 'sso_exchange_code', 'saml_assertion']) {
    await em.execute(`delete from ${table} where expires_at < now()`);
  }
}

/**
 * Password login is refused when the organization it signs into has an active provider that enforces
 * SSO. Another tenant that adds the same person cannot lock them out of their own organization this way.
 */
async function passwordLoginAllowed(em: EntityManager, membership: Membership): Promise<boolean> {
  if (!membership.orgId) return true;
  const enforced = await em.execute(`select 1 from sso_provider where org_id = ? and status = 'active' and enforce_sso limit 1`, [membership.orgId]);
  return enforced.length === 0;
}

passwordLoginPolicies.push(passwordLoginAllowed);
