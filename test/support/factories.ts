import crypto from 'node:crypto';
import { promisify } from 'node:util';
import { Organization } from '../../entities/organization.js';
import { Partner } from '../../entities/partner.js';
import { Role, type Scope } from '../../entities/role.js';
import { Site } from '../../entities/site.js';
import { Membership, User } from '../../entities/user.js';
import { systemRoles, expandPermissions, type Permission } from '../../src/auth/permissions.js';
import { signAccessToken } from '../../src/auth/tokens.js';
import { installDomains } from '../../src/domains.js';
import type { TestApp } from './app.js';

// The catalogs a server installs at start, here too: tests read the seeded roles before their app starts.
installDomains();

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

/** The roles seeded on every start (systemRoles() in src/auth/permissions.ts), widest first. */
export type SeededRole =
  | 'Platform Admin'
  | 'Partner Admin'
  | 'Partner Technician'
  | 'Partner Viewer'
  | 'Organization Admin'
  | 'Organization Technician'
  | 'Organization Viewer';

/**
 * The catalog permissions a seeded role grants, wildcards expanded. Nobody grants, assigns or manages a role
 * that grants more than they hold: a `can` list that must invite, outrank or set as default a seeded role spreads it.
 */
export function permissionsOf(name: SeededRole): Permission[] {
  return expandPermissions(systemRoles().find((r) => r.name === name)!.permissions);
}

export const systemRole = (name: SeededRole): string => {
  const role = systemRoles().find((r) => r.name === name);
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
 * What the user may do, always said (there is no default role, so a test acting as an admin is one
 * that chose to): `role`, a seeded role by name or any role by id, or `can`, a custom role in the
 * membership's scope holding exactly these permissions. Pick the least that lets the test do its work.
 */
export type RoleChoice = { role: SeededRole | (string & {}); can?: never } | { can: Permission[]; role?: never };

export type BuildUserOptions = RoleChoice & {
  orgId?: string;
  partnerId?: string;
  mfa?: boolean;
  email?: string;
  orgAccess?: 'all' | 'selected';
  orgIds?: string[];
  status?: User['status'];
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

async function roleIdFor(app: TestApp, scope: Scope, options: BuildUserOptions): Promise<string> {
  if (options.can) {
    if (options.can.length === 0) throw new Error('buildUser: `can` needs at least one permission (use a seeded Viewer role for a bystander)');
    const tenant = { organization: { orgId: options.orgId }, partner: { partnerId: options.partnerId }, system: {} }[scope];
    return (await buildRole(app, { scope, ...tenant, permissions: options.can })).id;
  }
  const seeded = systemRoles().find((r) => r.name === options.role);
  if (seeded && seeded.scope !== scope) throw new Error(`buildUser: ${seeded.name} is a ${seeded.scope} role, the membership is ${scope}-scoped`);
  if (seeded) return seeded.id;
  if (!UUID.test(options.role)) throw new Error(`buildUser: ${options.role} is neither a seeded role name nor a role id`);
  return options.role;
}

/**
 * A user with one membership. Scope follows what is given: `orgId` → organization, `partnerId` →
 * partner, neither → system.
 */
export async function buildUser(app: TestApp, options: BuildUserOptions): Promise<BuiltUser> {
  const scope: Scope = options.orgId ? 'organization' : options.partnerId ? 'partner' : 'system';
  const roleId = await roleIdFor(app, scope, options);
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

/** A further organization membership for an existing user (`buildUser` makes users with one), with a seeded role by name or any role by id. */
export async function addMembership(
  app: TestApp,
  userId: string,
  options: { orgId: string; role: SeededRole | (string & {}); status?: Membership['status'] },
): Promise<Membership> {
  const e = em(app);
  const seeded = systemRoles().find((r) => r.name === options.role);
  const membership = e.create(Membership, { userId, scope: 'organization', orgId: options.orgId, roleId: seeded?.id ?? options.role, status: options.status ?? 'active' });
  await e.flush();
  return membership;
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
