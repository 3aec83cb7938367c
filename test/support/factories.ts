import crypto from 'node:crypto';
import { Organization } from '../../entities/organization.js';
import { Partner } from '../../entities/partner.js';
import { Role, type Scope } from '../../entities/role.js';
import { Site } from '../../entities/site.js';
import { Membership, User } from '../../entities/user.js';
import { hashPassword } from '../../src/auth/passwords.js';
import { SYSTEM_ROLES } from '../../src/auth/permissions.js';
import { signAccessToken } from '../../src/auth/tokens.js';
import type { TestApp } from './app.js';

/** Fixtures written straight to the database: the state a test starts from, not the behaviour it checks. */
function em(app: TestApp) {
  return app.server.runtime.orm.em.fork();
}

const unique = () => crypto.randomBytes(4).toString('hex');

export const systemRole = (name: string): string => {
  const role = SYSTEM_ROLES.find((r) => r.name === name);
  if (!role) throw new Error(`no system role ${name}`);
  return role.id;
};

export async function buildPartner(app: TestApp, fields: Partial<Partner> = {}): Promise<Partner> {
  const e = em(app);
  const partner = e.create(Partner, { name: `Partner ${unique()}`, ...fields });
  await e.flush();
  return partner;
}

export async function buildOrg(app: TestApp, fields: Partial<Organization> & { partnerId?: string } = {}): Promise<Organization> {
  const partnerId = fields.partnerId ?? (await buildPartner(app)).id;
  const e = em(app);
  const org = e.create(Organization, { name: `Org ${unique()}`, ...fields, partnerId });
  await e.flush();
  return org;
}

export async function buildSite(app: TestApp, orgId: string, fields: Partial<Site> = {}): Promise<Site> {
  const e = em(app);
  const site = e.create(Site, { name: `Site ${unique()}`, ...fields, orgId });
  await e.flush();
  return site;
}

export async function buildRole(app: TestApp, fields: Partial<Role> & { scope: Scope; permissions: string[] }): Promise<Role> {
  const e = em(app);
  const role = e.create(Role, { name: `Role ${unique()}`, ...fields });
  await e.flush();
  return role;
}

export interface BuiltUser {
  user: User;
  membership: Membership;
  password: string;
  /** an access token with the MFA claim as asked (default true) */
  token: string;
  as: { token: string };
}

/**
 * A user with one membership. Scope follows what is given: `orgId` → organization, `partnerId` →
 * partner, neither → system. `role` is a system role name or a role id.
 */
export async function buildUser(
  app: TestApp,
  options: {
    orgId?: string;
    partnerId?: string;
    role?: string;
    mfa?: boolean;
    email?: string;
    orgAccess?: 'all' | 'selected';
    orgIds?: string[];
    status?: User['status'];
  } = {},
): Promise<BuiltUser> {
  const scope: Scope = options.orgId ? 'organization' : options.partnerId ? 'partner' : 'system';
  const defaultRole = { organization: 'Organization Admin', partner: 'Partner Admin', system: 'Platform Admin' }[scope];
  const roleName = options.role ?? defaultRole;
  const roleId = SYSTEM_ROLES.some((r) => r.name === roleName) ? systemRole(roleName) : roleName;
  const password = `pw-${unique()}-${unique()}`;
  const e = em(app);
  const user = e.create(User, {
    email: (options.email ?? `user-${unique()}@example.test`).toLowerCase(),
    name: 'Test User',
    passwordHash: await hashPassword(password),
    status: options.status ?? 'active',
  });
  const membership = e.create(Membership, {
    userId: user.id,
    scope,
    orgId: options.orgId ?? null,
    partnerId: options.partnerId ?? null,
    roleId,
    orgAccess: options.orgAccess ?? 'all',
    orgIds: options.orgIds ?? [],
  });
  await e.flush();
  const token = await tokenFor(app, user, membership, options.mfa ?? true);
  return { user, membership, password, token, as: { token } };
}

export async function tokenFor(app: TestApp, user: User, membership: Membership, mfa: boolean): Promise<string> {
  return signAccessToken(app.server.runtime.config, {
    sub: user.id,
    mid: membership.id,
    scope: membership.scope,
    partnerId: membership.partnerId,
    orgId: membership.orgId,
    roleId: membership.roleId,
    mfa,
    ver: user.tokenVersion,
  });
}
