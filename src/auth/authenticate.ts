import { ApiKey } from '../../entities/api-key.js';
import { Organization } from '../../entities/organization.js';
import { Partner } from '../../entities/partner.js';
import { Role } from '../../entities/role.js';
import { Membership, User } from '../../entities/user.js';
import { forbidden, unauthenticated } from '../errors.js';
import type { Runtime } from '../runtime.js';
import { safeEqual } from '../secrets.js';
import { apiKeyPrefix, hashApiKey } from './api-key-format.js';
import type { Principal, SessionMethod } from './context.js';
import { expandPermissions } from './permissions.js';
import { verifyAccessToken } from './tokens.js';

export interface Credentials {
  authorization?: string | null;
  apiKey?: string | null;
}

// API keys are used by scripts in tight loops; writing last-used on every call would be a write per request.
const LAST_USED_GRANULARITY_MS = 60_000;

/**
 * Turns a Bearer token or an X-API-Key into a Principal, re-reading the user, membership and role
 * each time so that disabling a user, changing a password or editing a role takes effect at once.
 * No credentials → null (anonymous); bad credentials → 401.
 */
export async function authenticate(runtime: Runtime, credentials: Credentials): Promise<Principal | null> {
  const em = runtime.orm.em.fork();
  const bearer = /^Bearer\s+(.+)$/i.exec(credentials.authorization ?? '')?.[1]?.trim();
  if (bearer) {
    const claims = await verifyAccessToken(runtime.config, bearer);
    if (!claims) throw unauthenticated('Invalid or expired access token');
    const user = await em.findOne(User, { id: claims.sub });
    if (!user || user.status !== 'active' || user.tokenVersion !== claims.ver) throw unauthenticated('Invalid or expired access token');
    const membership = await em.findOne(Membership, { id: claims.mid, userId: user.id, status: 'active' });
    if (!membership) throw unauthenticated('Invalid or expired access token');
    const method = claims.sid ? await activeSessionMethod(em, claims.sid, user.id) : 'password';
    if (!method) throw unauthenticated('Invalid or expired access token');
    return principalFor(em, user, membership, { kind: 'user', id: user.id, mfa: claims.mfa, sessionId: claims.sid ?? null, sessionMethod: method });
  }
  if (credentials.apiKey) {
    const prefix = apiKeyPrefix(credentials.apiKey);
    const key = prefix ? await em.findOne(ApiKey, { prefix }) : null;
    const now = new Date();
    if (!key || key.revokedAt || (key.expiresAt && key.expiresAt <= now) || !safeEqual(key.keyHash, hashApiKey(credentials.apiKey))) {
      throw unauthenticated('Invalid or expired API key');
    }
    const user = await em.findOne(User, { id: key.userId });
    const membership = await em.findOne(Membership, { id: key.membershipId, status: 'active' });
    if (!user || user.status !== 'active' || !membership) throw unauthenticated('Invalid or expired API key');
    if (!key.lastUsedAt || now.getTime() - key.lastUsedAt.getTime() > LAST_USED_GRANULARITY_MS) {
      await em.nativeUpdate(ApiKey, { id: key.id }, { lastUsedAt: now });
    }
    // Creating a key already required MFA; a key cannot present a second factor itself.
    return principalFor(em, user, membership, { kind: 'apiKey', id: key.id, mfa: true, scopes: key.scopes });
  }
  return null;
}

/**
 * How the session of `familyId` signed in, or null when it has ended: a session ends when any token
 * of its family is revoked (logout, reuse detection, password change).
 */
async function activeSessionMethod(em: ReturnType<Runtime['orm']['em']['fork']>, familyId: string, userId: string): Promise<SessionMethod | null> {
  const [row] = (await em.execute(
    `select count(*)::int as tokens, bool_or(revoked_at is not null) as revoked, min(method) as method from refresh_token where family_id = ? and user_id = ?`,
    [familyId, userId],
  )) as { tokens: number; revoked: boolean | null; method: SessionMethod }[];
  return row && row.tokens > 0 && !row.revoked ? row.method : null;
}

/** The Principal of `user` acting through `membership` (also used to name a user as actor while their session is created). */
export async function principalFor(
  em: ReturnType<Runtime['orm']['em']['fork']>,
  user: User,
  membership: Membership,
  as: { kind: 'user' | 'apiKey'; id: string; mfa: boolean; scopes?: string[]; sessionId?: string | null; sessionMethod?: SessionMethod | null },
): Promise<Principal> {
  const role = await em.findOneOrFail(Role, { id: membership.roleId });
  const org = membership.orgId ? await em.findOne(Organization, { id: membership.orgId }) : null;
  const partnerId = membership.partnerId ?? org?.partnerId ?? null;
  const partner = partnerId ? await em.findOne(Partner, { id: partnerId }) : null;
  if (org?.status === 'suspended' || partner?.status === 'suspended') throw forbidden(`Your ${org?.status === 'suspended' ? 'organization' : 'partner'} is suspended`);
  // An API key holds only what both its scopes and its owner's current role grant.
  const permissions = as.scopes ? expandPermissions(role.permissions).filter((p) => expandPermissions(as.scopes!).includes(p)) : role.permissions;
  return {
    kind: as.kind,
    id: as.id,
    userId: user.id,
    email: user.email,
    membershipId: membership.id,
    scope: membership.scope,
    partnerId,
    orgId: membership.orgId,
    orgAccess: membership.orgAccess,
    orgIds: membership.orgIds,
    siteIds: membership.siteIds,
    roleId: role.id,
    permissions,
    mfa: as.mfa,
    mfaForced: role.requireMfa || !!org?.requireMfa || !!partner?.requireMfa,
    sessionId: as.sessionId ?? null,
    sessionMethod: as.sessionMethod ?? null,
  };
}
