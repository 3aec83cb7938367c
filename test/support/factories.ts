import crypto from 'node:crypto';
import { promisify } from 'node:util';
import { Organization } from '../../entities/organization.js';
import { Partner } from '../../entities/partner.js';
import { Role, type Scope } from '../../entities/role.js';
import { Site } from '../../entities/site.js';
import { Membership, User } from '../../entities/user.js';
import { SYSTEM_ROLES } from '../../src/auth/permissions.js';
import { signAccessToken } from '../../src/auth/tokens.js';
import type { TestApp } from './app.js';

/** Fixtures written straight to the database: the state a test starts from, not the behaviour it checks. */
function em(app: TestApp) {
  return app.server.runtime.orm.em.fork();
}

/** Eight hex characters, for names and emails that must not collide. */
export const unique = () => crypto.randomBytes(4).toString('hex');

// Fixture users get a cheap scrypt cost (N = 2^10, not the production 2^15, ~70x faster): verifyPassword reads the
// cost from the stored hash, so they sign in through the same code; hashes the server makes keep the production cost.
const scrypt = promisify(crypto.scrypt) as (password: string, salt: Buffer, keylen: number, options: crypto.ScryptOptions) => Promise<Buffer>;
const FIXTURE_SCRYPT = { N: 2 ** 10, r: 8, p: 1 };
async function fixturePasswordHash(password: string): Promise<string> {
  const salt = crypto.randomBytes(16);
  const hash = await scrypt(password, salt, 32, FIXTURE_SCRYPT);
  return ['scrypt', FIXTURE_SCRYPT.N, FIXTURE_SCRYPT.r, FIXTURE_SCRYPT.p, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

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
    passwordHash: await fixturePasswordHash(password),
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
