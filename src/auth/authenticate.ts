import { ApiKey } from '../../entities/api-key.js';
import { Organization } from '../../entities/organization.js';
import { Partner } from '../../entities/partner.js';
import { Role } from '../../entities/role.js';
import { Membership, User } from '../../entities/user.js';
import { lookupCoalescer } from '../db/coalesce.js';
import { preparedRows, statement } from '../db/prepared.js';
import { forbidden, unauthenticated } from '../errors.js';
import { onePer } from '../memo.js';
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

/** The principal's rows, read in one statement: membership, role, organization and partner (and the session, for a token). */
interface AccessRow {
  user_id: string;
  user_status: string;
  email: string;
  membership_id: string;
  scope: Principal['scope'];
  org_id: string | null;
  partner_id: string | null;
  org_access: Principal['orgAccess'];
  org_ids: string[];
  site_ids: string[];
  role_id: string;
  permissions: string[];
  role_requires_mfa: boolean;
  org_status: string | null;
  org_requires_mfa: boolean | null;
  partner_status: string | null;
  partner_requires_mfa: boolean | null;
}

// The membership's role, organization and partner (the membership's own, else its organization's), by primary key.
const ACCESS_COLUMNS = `u.id as user_id, u.status as user_status, u.email, m.id as membership_id, m.scope, m.org_id,
  coalesce(m.partner_id, o.partner_id) as partner_id, m.org_access, m.org_ids, m.site_ids, r.id as role_id, r.permissions,
  r.require_mfa as role_requires_mfa, o.status as org_status, o.require_mfa as org_requires_mfa, p.status as partner_status,
  p.require_mfa as partner_requires_mfa`;
const ACCESS_JOINS = `join role r on r.id = m.role_id
  left join organization o on o.id = m.org_id
  left join partner p on p.id = coalesce(m.partner_id, o.partner_id)`;

/**
 * Bearer tokens' users (by id), their active memberships and their sessions (the family's token
 * count, whether any is revoked, how it signed in), for the tokens of every request that arrived
 * together: row `n` answers the n-th token.
 */
const BEARER_ACCESS = statement(`select t.n, ${ACCESS_COLUMNS}, u.token_version, s.tokens, s.revoked, s.method
  from unnest(?::uuid[], ?::uuid[], ?::uuid[]) with ordinality as t(user_id, membership_id, family_id, n)
  join "user" u on u.id = t.user_id
  join membership m on m.id = t.membership_id and m.user_id = u.id and m.status = 'active'
  ${ACCESS_JOINS}
  cross join lateral (select count(*)::int as tokens, bool_or(revoked_at is not null) as revoked, min(method) as method
    from refresh_token where family_id = t.family_id and user_id = u.id) s`);

type BearerRow = AccessRow & { token_version: number; tokens: number; revoked: boolean | null; method: SessionMethod | null };
interface BearerKeys {
  userId: string;
  membershipId: string;
  familyId: string | null;
}

/** The bearer lookups of this instance's concurrent requests, one statement for all that arrived together (src/db/coalesce.ts). */
const bearerAccess = onePer((runtime: Runtime) =>
  lookupCoalescer<BearerKeys, BearerRow>(runtime.orm, BEARER_ACCESS, (keys) => [keys.map((k) => k.userId), keys.map((k) => k.membershipId), keys.map((k) => k.familyId)]),
);

/** An API key by its prefix, with its owner and the owner's active membership it acts through. */
const API_KEY_ACCESS = statement(`select ${ACCESS_COLUMNS}, k.id as key_id, k.key_hash, k.scopes, k.revoked_at, k.expires_at, k.last_used_at
  from api_key k
  join "user" u on u.id = k.user_id
  join membership m on m.id = k.membership_id and m.status = 'active'
  ${ACCESS_JOINS}
  where k.prefix = ?`);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Turns a Bearer token or an X-API-Key into a Principal. Nothing is cached: each request reads the
 * user, membership, role, organization, partner and session again, in one prepared statement by
 * primary keys and the session-family index (shared with the requests that arrived with it, and sent
 * after this one arrived), so a logout, password change, disabled user, edited
 * role or suspended tenant committed on any instance refuses the very next request everywhere.
 * No credentials → null (anonymous); bad credentials → 401.
 */
export async function authenticate(runtime: Runtime, credentials: Credentials): Promise<Principal | null> {
  const bearer = /^Bearer\s+(.+)$/i.exec(credentials.authorization ?? '')?.[1]?.trim();
  if (bearer) {
    const claims = await verifyAccessToken(runtime.config, bearer);
    if (!claims || !UUID.test(claims.sub) || !UUID.test(claims.mid) || (claims.sid !== undefined && !UUID.test(claims.sid))) {
      throw unauthenticated('Invalid or expired access token');
    }
    const row = await bearerAccess(runtime).submit({ userId: claims.sub, membershipId: claims.mid, familyId: claims.sid ?? null });
    if (!row || row.user_status !== 'active' || row.token_version !== claims.ver) throw unauthenticated('Invalid or expired access token');
    // A session ends when any token of its family is revoked (logout, reuse detection, password change).
    const method = claims.sid ? (row.tokens > 0 && !row.revoked ? row.method : null) : 'password';
    if (!method) throw unauthenticated('Invalid or expired access token');
    return principalOf(row, { kind: 'user', id: row.user_id, mfa: claims.mfa, sessionId: claims.sid ?? null, sessionMethod: method });
  }
  if (credentials.apiKey) {
    const prefix = apiKeyPrefix(credentials.apiKey);
    const [row] = prefix
      ? await preparedRows<AccessRow & { key_id: string; key_hash: string; scopes: string[]; revoked_at: string | null; expires_at: string | null; last_used_at: string | null }>(
          runtime.orm,
          API_KEY_ACCESS,
          [prefix],
        )
      : [];
    const now = new Date();
    // Timestamps arrive as PostgreSQL's text (the ORM's driver settings), which Date parses.
    const expired = row?.expires_at && new Date(row.expires_at) <= now;
    // Also refused when the owner is gone or inactive, or the membership it acts through is no longer active.
    if (!row || row.revoked_at || expired || !safeEqual(row.key_hash, hashApiKey(credentials.apiKey)) || row.user_status !== 'active') {
      throw unauthenticated('Invalid or expired API key');
    }
    if (!row.last_used_at || now.getTime() - new Date(row.last_used_at).getTime() > LAST_USED_GRANULARITY_MS) {
      await runtime.orm.em.fork().nativeUpdate(ApiKey, { id: row.key_id }, { lastUsedAt: now });
    }
    // Creating a key already required MFA; a key cannot present a second factor itself.
    return principalOf(row, { kind: 'apiKey', id: row.key_id, mfa: true, scopes: row.scopes });
  }
  return null;
}

/** The one place a principal is made from its rows: a suspended organization or partner refuses it, its role (and an API key's scopes) give its permissions. */
function principalOf(row: AccessRow, as: { kind: 'user' | 'apiKey'; id: string; mfa: boolean; scopes?: string[]; sessionId?: string | null; sessionMethod?: SessionMethod | null }): Principal {
  if (row.org_status === 'suspended' || row.partner_status === 'suspended') throw forbidden(`Your ${row.org_status === 'suspended' ? 'organization' : 'partner'} is suspended`);
  return {
    kind: as.kind,
    id: as.id,
    userId: row.user_id,
    email: row.email,
    membershipId: row.membership_id,
    scope: row.scope,
    partnerId: row.partner_id,
    orgId: row.org_id,
    orgAccess: row.org_access,
    orgIds: row.org_ids,
    siteIds: row.site_ids,
    roleId: row.role_id,
    permissions: as.scopes ? keyPermissions(row.permissions, as.scopes) : row.permissions,
    mfa: as.mfa,
    mfaForced: row.role_requires_mfa || !!row.org_requires_mfa || !!row.partner_requires_mfa,
    sessionId: as.sessionId ?? null,
    sessionMethod: as.sessionMethod ?? null,
  };
}

/** An API key holds only what both its scopes and its owner's current role grant. */
function keyPermissions(granted: string[], scopes: string[]): string[] {
  const allowed = new Set<string>(expandPermissions(scopes));
  return expandPermissions(granted).filter((p) => allowed.has(p));
}

/** The Principal of `user` acting through `membership` (also used to name a user as actor while their session is created). */
export async function principalFor(
  em: ReturnType<Runtime['orm']['em']['fork']>,
  user: User,
  membership: Membership,
  as: { kind: 'user' | 'apiKey'; id: string; mfa: boolean; scopes?: string[]; sessionId?: string | null; sessionMethod?: SessionMethod | null },
): Promise<Principal> {
  // Read through the caller's EntityManager (its transaction and identity map), then decided as a request's rows are.
  const role = await em.findOneOrFail(Role, { id: membership.roleId });
  const org = membership.orgId ? await em.findOne(Organization, { id: membership.orgId }) : null;
  const partnerId = membership.partnerId ?? org?.partnerId ?? null;
  const partner = partnerId ? await em.findOne(Partner, { id: partnerId }) : null;
  return principalOf(
    {
      user_id: user.id,
      user_status: user.status,
      email: user.email,
      membership_id: membership.id,
      scope: membership.scope,
      org_id: membership.orgId,
      partner_id: partnerId,
      org_access: membership.orgAccess,
      org_ids: membership.orgIds,
      site_ids: membership.siteIds,
      role_id: role.id,
      permissions: role.permissions,
      role_requires_mfa: role.requireMfa,
      org_status: org?.status ?? null,
      org_requires_mfa: org?.requireMfa ?? null,
      partner_status: partner?.status ?? null,
      partner_requires_mfa: partner?.requireMfa ?? null,
    },
    as,
  );
}
