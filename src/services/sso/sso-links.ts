// An account's owner links it to their identity at an organization's IdP while signed in: the confirmation a
// first SSO login needs for an account the organization does not own alone (see resolveAccount).
import { z } from 'zod';
import { Membership } from '../../../entities/user.js';
import type { RequestContext } from '../../auth/context.js';
import { authenticated, isUuid, skipAuthorization } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { AppError, forbidden, notFound } from '../../errors.js';
import { parseInput } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { RedirectPath, SsoLoginError, failedLoginUrl, seal, unseal, type LoginRedirect } from './sso-accounts.js';
import { openOidcLink, prepareOidcLink } from './sso-oidc.js';
import { findActiveProvider } from './sso-idp.js';
import { openSamlLink, prepareSamlLink } from './sso-saml.js';

export const LINK_PATH = '/api/v1/sso/link';
const LINK_PURPOSE = 'sso-link';

export const SsoLinkInput = z.object({ redirect: RedirectPath.nullish() }).strict();

export const SsoLinkStartSchema = z
  .object({ url: z.string().describe('single-use, valid for two minutes') })
  .meta({ title: 'SsoLinkStart', description: 'Open url in the browser: it starts the IdP login that links the signed-in account.' });

/**
 * `POST /sso/link/:orgId`: a URL on this service for the browser, which opens the IdP login of the
 * organization's active provider bound to the signed-in user; that login links its subject to this user.
 */
export async function startSsoLink(ctx: RequestContext, orgId: string, body: z.input<typeof SsoLinkInput>): Promise<{ url: string }> {
  const principal = authenticated(ctx);
  const { redirect } = parseInput(SsoLinkInput, body);
  // Only the account's owner confirms: an API key acts for its creator but is not them.
  if (principal.kind !== 'user' || !principal.userId) throw forbidden('This operation needs a user session, not an API key');
  const userId = principal.userId;
  // A session started through an organization's provider acts in that organization only.
  const reachable = isUuid(orgId) && (principal.sessionMethod !== 'sso' || principal.orgId === orgId);
  const member = reachable && (await ctx.em.findOne(Membership, { userId, orgId, scope: 'organization', status: 'active' }));
  if (!member) throw notFound('Organization');
  const provider = await findActiveProvider(ctx.em, orgId);
  if (!provider) throw new AppError(404, 'NOT_FOUND', 'No active SSO provider for this organization');

  const key = await withTransaction(ctx, async (tx) => {
    const prepared = provider.type === 'oidc' ? await prepareOidcLink(tx, provider, redirect ?? '/', userId) : await prepareSamlLink(tx, provider, redirect ?? '/', userId);
    await recordAudit(tx, {
      action: 'sso.identity.link.start',
      resourceType: 'sso_provider',
      resourceId: provider.id,
      orgId,
      details: { userId, type: provider.type },
    });
    return prepared;
  });
  // Sealed and naming the pending row that opening it claims: one browser, once, within LINK_START_TTL_MS.
  return { url: `${ctx.runtime.config.publicUrl}${LINK_PATH}?token=${encodeURIComponent(seal(ctx, LINK_PURPOSE, `${provider.type}:${key}`))}` };
}

/** `GET /sso/link?token=`: where to send the browser (and the login's binding cookie); never throws. */
export async function openSsoLink(ctx: RequestContext, token: string | undefined): Promise<LoginRedirect> {
  skipAuthorization(ctx, 'the sealed one-time link token is the credential');
  try {
    const value = unseal(ctx, LINK_PURPOSE, token) ?? '';
    const key = value.slice(value.indexOf(':') + 1);
    const opened = value.startsWith('oidc:') ? await openOidcLink(ctx, key) : value.startsWith('saml:') ? await openSamlLink(ctx, key) : null;
    if (!opened) throw new SsoLoginError('session_expired', 'link token unknown, used or expired');
    return opened;
  } catch (error) {
    return { url: await failedLoginUrl(ctx, error, null), cookie: null };
  }
}
