// OIDC login end to end: the cookie-jar browser drives the service and a real OpenID Provider (oidc-provider over
// HTTPS on loopback) through check, login, IdP sign-in, callback and code exchange.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { freePort } from '../src/db/embedded.js';
import { createTestApp, type TestApp } from './support/app.js';
import { Browser, errorOf, loginAtIdp, ssoCode } from './support/browser.js';
import { gql, rest } from './support/clients.js';
import type { Permission } from '../src/auth/permissions.js';
import { addMembership, buildOrg, buildRole, buildUser, permissionsOf, systemRole } from './support/factories.js';
import { startOidcIdp, type TestAccountClaims, type TestOidcIdp } from './support/oidc-idp.js';

let app: TestApp;
let idp: TestOidcIdp;
let db: pg.Client;
let publicUrl: string;

beforeAll(async () => {
  idp = await startOidcIdp();
  const port = await freePort();
  publicUrl = `http://127.0.0.1:${port}`;
  app = await createTestApp({
    env: { ALLOW_PRIVATE_NETWORK_TARGETS: 'true', PORT: String(port), PUBLIC_URL: publicUrl, SSO_RATE_LIMIT_PER_MINUTE: '100000' },
  });
  db = new pg.Client({ connectionString: app.databaseUrl });
  await db.connect();
});

afterAll(async () => {
  await db.end();
  await app.stop();
  await idp.close();
});

afterEach(() => idp.tamperIdToken(null));

const CALLBACK = () => `${publicUrl}/api/v1/sso/callback`;
const isIdp = (location: string) => location.startsWith(idp.issuer);
const isCallback = (location: string) => location.startsWith(`${CALLBACK()}?`);
const isDashboard = (location: string) => location.startsWith(publicUrl) && !location.startsWith(`${publicUrl}/api/`);

interface Setup {
  orgId: string;
  providerId: string;
  admin: Awaited<ReturnType<typeof buildUser>>;
}

/**
 * An organization with an active OIDC provider whose client is registered at the IdP. Its admin configures
 * the provider (`organizations:write`) and holds what its default role, Organization Technician, grants
 * (and `more`, for what a test has it do besides).
 */
async function setup(fields: Record<string, unknown> = {}, more: Permission[] = []): Promise<Setup> {
  const org = await buildOrg(app);
  const admin = await buildUser(app, { orgId: org.id, can: [...permissionsOf('Organization Technician'), 'organizations:write', ...more] });
  const clientId = `client-${randomUUID()}`;
  const clientSecret = randomUUID();
  idp.addClient({ clientId, clientSecret, redirectUris: [CALLBACK()] });
  const created = await rest(app, admin.as).post('/sso/providers', {
    name: 'Corporate IdP',
    type: 'oidc',
    issuer: idp.issuer,
    clientId,
    clientSecret,
    defaultRoleId: systemRole('Organization Technician'),
    scopes: 'openid profile email groups',
    attributeMapping: { email: 'email', name: 'name', firstName: 'given_name', lastName: 'family_name', groups: 'groups' },
    ...fields,
  });
  expect(created.status).toBe(201);
  const activated = await rest(app, admin.as).post(`/sso/providers/${created.body.id}/status`, { status: 'active' });
  expect(activated.status).toBe(200);
  return { orgId: org.id, providerId: created.body.id, admin };
}

function account(claims: TestAccountClaims = {}): { id: string; email: string } {
  const id = `acct-${randomUUID()}`;
  const email = claims.email ?? `${id}@corp.test`;
  idp.setAccount(id, { email, email_verified: true, name: 'Pat Example', given_name: 'Pat', family_name: 'Example', groups: ['admins', 'ops'], ...claims });
  return { id, email };
}

/** Login start and IdP sign-in; returns the callback URL the IdP sent the browser to (not yet visited). */
async function toCallback(browser: Browser, orgId: string, accountId: string, query = ''): Promise<string> {
  const start = await browser.get(`${app.url}/api/v1/sso/login/${orgId}${query}`, { stopAt: isIdp });
  expect(start.status).toBe(302);
  return loginAtIdp(browser, start.location!, accountId, isCallback);
}

/** Visits the callback; returns the service's redirect target. */
async function finish(browser: Browser, callbackUrl: string): Promise<string> {
  const page = await browser.get(callbackUrl, { stopAt: isDashboard });
  expect(page.status).toBe(302);
  return page.location!;
}

async function login(orgId: string, accountId: string, query = ''): Promise<{ browser: Browser; target: string }> {
  const browser = new Browser();
  return { browser, target: await finish(browser, await toCallback(browser, orgId, accountId, query)) };
}


async function exchange(code: string) {
  return rest(app).post('/sso/exchange', { code });
}

describe('check', () => {
  test('an organization without an active provider answers ssoEnabled false only', async () => {
    const org = await buildOrg(app);
    expect((await rest(app).get(`/sso/check/${org.id}`)).body).toEqual({ ssoEnabled: false });
    expect((await rest(app).get(`/sso/check/not-a-uuid`)).body).toEqual({ ssoEnabled: false });
  });

  test('an active provider is described with the login URL', async () => {
    const { orgId, providerId } = await setup({ enforceSSO: true });
    const res = await rest(app).get(`/sso/check/${orgId}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ssoEnabled: true,
      provider: { id: providerId, name: 'Corporate IdP', type: 'oidc' },
      enforceSSO: true,
      loginUrl: `/api/v1/sso/login/${orgId}`,
    });
  });
});

describe('login start', () => {
  test('redirects to the IdP with PKCE S256, state, nonce and the callback URI, and sets the state cookie', async () => {
    const { orgId } = await setup();
    const res = await rest(app).get(`/sso/login/${orgId}`);
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).toBe(`${idp.issuer}/auth`);
    const params = Object.fromEntries(location.searchParams);
    expect(params).toMatchObject({ response_type: 'code', redirect_uri: CALLBACK(), code_challenge_method: 'S256', scope: 'openid profile email groups' });
    expect(params.code_challenge).toMatch(/^[\w-]{43}$/);

    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('service_sso_state='))!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).toMatch(/Path=\/api\/v1\/sso\/callback/);
    expect(cookie).toMatch(/Max-Age=600/);
    expect(cookie).not.toMatch(/Secure/); // not production
    expect(cookie.split(';')[0]).toContain(`=${params.state}.`);

    const { rows } = await db.query(`select state, nonce, code_verifier, redirect_path, expires_at - created_at as ttl from sso_session where state = $1`, [params.state]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ nonce: params.nonce, redirect_path: '/' });
    expect(rows[0].ttl.minutes).toBe(10);
  });

  test('404 without an active provider', async () => {
    const org = await buildOrg(app);
    const res = await rest(app).get(`/sso/login/${org.id}`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ code: 'NOT_FOUND', message: 'No active SSO provider for this organization' });
  });

  test('400 when the provider lacks its client secret', async () => {
    const { orgId, providerId, admin } = await setup();
    await rest(app, admin.as).patch(`/sso/providers/${providerId}`, { clientSecret: null });
    const res = await rest(app).get(`/sso/login/${orgId}`);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'VALIDATION_ERROR', message: 'Provider is not fully configured', details: { missing: ['clientSecret'] } });
  });

  test.each(['https://evil.test/x', '//evil.test', '/\\evil.test', 'devices', '/a#b'])('the redirect %s is refused', async (redirect) => {
    const { orgId } = await setup();
    const res = await rest(app).get(`/sso/login/${orgId}?redirect=${encodeURIComponent(redirect)}`);
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^redirect: must be a path on this site/);
  });
});

describe('full login', () => {
  test('check, login, IdP sign-in, callback, exchange: the tokens work', async () => {
    const { orgId, providerId } = await setup();
    const member = await buildUser(app, { orgId, role: 'Organization Viewer', email: `member-${randomUUID()}@corp.test` });
    const acct = account({ email: member.user.email.toUpperCase() }); // emails match case-insensitively

    expect((await rest(app).get(`/sso/check/${orgId}`)).body.loginUrl).toBe(`/api/v1/sso/login/${orgId}`);
    const { target } = await login(orgId, acct.id, '?redirect=%2Fdevices%3Fview%3Dall');
    expect(target).toMatch(new RegExp(`^${publicUrl}/devices\\?view=all#ssoCode=[\\w-]{43}$`));

    const tokens = await exchange(ssoCode(target));
    expect(tokens.status).toBe(200);
    expect(tokens.body).toEqual({ accessToken: expect.any(String), refreshToken: expect.any(String) });
    const me = await rest(app, { token: tokens.body.accessToken }).get('/users/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: member.user.id, email: member.user.email });
    expect((await rest(app).post('/auth/refresh', { refreshToken: tokens.body.refreshToken })).status).toBe(200);

    // The identity link: sub, email, profile with groups, IdP tokens encrypted.
    const link = await db.query(`select * from sso_identity where user_id = $1 and provider_id = $2`, [member.user.id, providerId]);
    expect(link.rows).toHaveLength(1);
    expect(link.rows[0]).toMatchObject({ external_id: acct.id, email: member.user.email, refresh_token: null });
    expect(link.rows[0].profile).toMatchObject({ sub: acct.id, groups: ['admins', 'ops'] });
    expect(link.rows[0].access_token).toMatch(/^v1:/);
    expect(link.rows[0].token_expires_at.getTime()).toBeGreaterThan(Date.now());

    // The session is an SSO session without MFA.
    const session = await db.query(`select distinct method, mfa from refresh_token where user_id = $1`, [member.user.id]);
    expect(session.rows).toEqual([{ method: 'sso', mfa: false }]);

    // A second login updates the same link (the first is moved an hour back, so "later" needs no waiting).
    const firstLogin = (await db.query(`update sso_identity set last_login_at = last_login_at - interval '1 hour' where user_id = $1 returning last_login_at`, [member.user.id])).rows[0].last_login_at.getTime();
    expect(errorOf((await login(orgId, acct.id)).target)).toBeNull();
    const again = await db.query(`select last_login_at from sso_identity where user_id = $1`, [member.user.id]);
    expect(again.rows).toHaveLength(1);
    expect(again.rows[0].last_login_at.getTime()).toBeGreaterThan(firstLogin);
  });

  test('auto-provisioning creates a user without a password, with the default role in the organization', async () => {
    const { orgId } = await setup();
    const acct = account({ name: undefined, given_name: 'Robin', family_name: 'Doe' });
    const { target } = await login(orgId, acct.id);
    const tokens = await exchange(ssoCode(target));
    expect(tokens.status).toBe(200);

    const user = await db.query(`select id, name, password_hash, status from "user" where email = $1`, [acct.email]);
    expect(user.rows).toEqual([{ id: expect.any(String), name: 'Robin Doe', password_hash: null, status: 'active' }]);
    const membership = await db.query(`select scope, org_id, role_id from membership where user_id = $1`, [user.rows[0].id]);
    expect(membership.rows).toEqual([{ scope: 'organization', org_id: orgId, role_id: systemRole('Organization Technician') }]);
    expect((await rest(app, { token: tokens.body.accessToken }).get('/users/me')).body.email).toBe(acct.email);
  });

  test('a custom role of the organization is a valid default role', async () => {
    const org = await buildOrg(app);
    const role = await buildRole(app, { scope: 'organization', orgId: org.id, permissions: ['devices:read'] });
    const admin = await buildUser(app, { orgId: org.id, can: ['organizations:write', 'devices:read'] });
    const res = await rest(app, admin.as).post('/sso/providers', { name: 'x', type: 'oidc', defaultRoleId: role.id });
    expect(res.status).toBe(201);
    expect(res.body.defaultRoleId).toBe(role.id);
  });
});

describe('refusals', () => {
  test('a callback from another browser (no cookie, or another login\'s cookie) is refused without spending the session', async () => {
    const { orgId } = await setup();
    const acct = account();
    const browser = new Browser();
    const callbackUrl = await toCallback(browser, orgId, acct.id);

    expect(errorOf(await finish(new Browser(), callbackUrl))).toBe('session_expired');

    const state = new URL(callbackUrl).searchParams.get('state')!;
    const intruder = new Browser();
    await intruder.get(`${app.url}/api/v1/sso/login/${orgId}`, { stopAt: isIdp }); // a valid cookie for another state
    const intruderCookie = intruder.cookie('service_sso_state', CALLBACK());
    expect(intruderCookie).toMatch(/^[\w-]+\.[\w-]{43}$/);
    expect(intruderCookie!.split('.')[0]).not.toBe(state);
    expect(errorOf(await finish(intruder, callbackUrl))).toBe('session_expired');

    // The right state under a forged signature.
    const forged = await fetch(callbackUrl, { redirect: 'manual', headers: { cookie: `service_sso_state=${state}.${'A'.repeat(43)}` } });
    expect(errorOf(forged.headers.get('location')!)).toBe('session_expired');

    // The real browser still completes the login.
    const target = await finish(browser, callbackUrl);
    expect(target).toContain('#ssoCode=');
    expect((await exchange(ssoCode(target))).status).toBe(200);
  });

  test('a state is good once', async () => {
    const { orgId } = await setup();
    const browser = new Browser();
    const callbackUrl = await toCallback(browser, orgId, account().id);
    const cookie = browser.cookie('service_sso_state', callbackUrl)!;
    expect(await finish(browser, callbackUrl)).toContain('#ssoCode=');
    // The same browser binding replayed: the row is gone.
    const replay = await fetch(callbackUrl, { redirect: 'manual', headers: { cookie: `service_sso_state=${cookie}` } });
    expect(replay.status).toBe(302);
    expect(replay.headers.get('location')).toBe(`${publicUrl}/login?error=session_expired`);
  });

  test('an expired session is refused', async () => {
    const { orgId } = await setup();
    const browser = new Browser();
    const callbackUrl = await toCallback(browser, orgId, account().id);
    await db.query(`update sso_session set expires_at = now() - interval '1 second' where state = $1`, [new URL(callbackUrl).searchParams.get('state')]);
    expect(errorOf(await finish(browser, callbackUrl))).toBe('session_expired');
  });

  test.each(['nonce', 'audience'] as const)('an ID token with a wrong %s is an sso_error', async (mode) => {
    const { orgId } = await setup();
    const browser = new Browser();
    const callbackUrl = await toCallback(browser, orgId, account().id);
    idp.tamperIdToken(mode);
    expect(await finish(browser, callbackUrl)).toBe(`${publicUrl}/login?error=sso_error`);
  });

  test('a wrong client secret is an sso_error', async () => {
    const { orgId, providerId, admin } = await setup();
    await rest(app, admin.as).patch(`/sso/providers/${providerId}`, { clientSecret: 'not-the-secret' });
    const { target } = await login(orgId, account().id);
    expect(errorOf(target)).toBe('sso_error');
  });

  test('an email outside allowedDomains is refused', async () => {
    const { orgId } = await setup({ allowedDomains: 'Example.COM, corp.example' });
    const { target } = await login(orgId, account({ email: `x-${randomUUID()}@elsewhere.test` }).id);
    expect(errorOf(target)).toBe('domain_not_allowed');
    const allowed = await login(orgId, account({ email: `x-${randomUUID()}@CORP.example` }).id);
    expect(allowed.target).toContain('#ssoCode=');
  });

  test('an unknown user without auto-provisioning is refused', async () => {
    const { orgId } = await setup({ autoProvision: false });
    const acct = account();
    expect(errorOf((await login(orgId, acct.id)).target)).toBe('user_not_found');
    expect((await db.query(`select 1 from "user" where email = $1`, [acct.email])).rowCount).toBe(0);
  });

  test('auto-provisioning without a default role is refused', async () => {
    const { orgId } = await setup({ defaultRoleId: null });
    expect(errorOf((await login(orgId, account().id)).target)).toBe('default_role_required');
  });

  test('a user of another organization is refused, and nothing is written', async () => {
    const { orgId, providerId } = await setup();
    const outsider = await buildUser(app, { orgId: (await buildOrg(app)).id, role: 'Organization Viewer', email: `outsider-${randomUUID()}@corp.test` });
    expect(errorOf((await login(orgId, account({ email: outsider.user.email }).id)).target)).toBe('no_org_access');
    expect((await db.query(`select 1 from sso_identity where provider_id = $1`, [providerId])).rowCount).toBe(0);
    const audit = await db.query(`select details from audit_log where action = 'auth.login' and result = 'failure' and resource_id = $1`, [providerId]);
    expect(audit.rows.map((r) => r.details)).toEqual([{ method: 'sso', type: 'oidc', reason: 'no_org_access' }]);
  });

  test('an email the IdP marks unverified is refused', async () => {
    const { orgId } = await setup();
    expect(errorOf((await login(orgId, account({ email_verified: false }).id)).target)).toBe('email_not_verified');
  });

  test('a disabled user is refused', async () => {
    const { orgId } = await setup();
    const user = await buildUser(app, { orgId, role: 'Organization Viewer', status: 'disabled', email: `off-${randomUUID()}@corp.test` });
    expect(errorOf((await login(orgId, account({ email: user.user.email }).id)).target)).toBe('account_disabled');
  });

  test('a provider deactivated during the login is an sso_error', async () => {
    const { orgId, providerId, admin } = await setup();
    const browser = new Browser();
    const callbackUrl = await toCallback(browser, orgId, account().id);
    await rest(app, admin.as).post(`/sso/providers/${providerId}/status`, { status: 'inactive' });
    expect(errorOf(await finish(browser, callbackUrl))).toBe('sso_error');
  });
});

describe('exchange', () => {
  async function freshCode(): Promise<string> {
    const { orgId } = await setup();
    return ssoCode((await login(orgId, account().id)).target);
  }

  test('a code is good once', async () => {
    const code = await freshCode();
    expect((await exchange(code)).status).toBe(200);
    const again = await exchange(code);
    expect(again.status).toBe(400);
    expect(again.body).toEqual({ code: 'VALIDATION_ERROR', message: 'Invalid or expired token exchange code' });
  });

  test('another server instance on the same database redeems the code', async () => {
    const code = await freshCode();
    const other = await createTestApp({ databaseUrl: app.databaseUrl });
    try {
      const res = await rest(other).post('/sso/exchange', { code });
      expect(res.status).toBe(200);
      expect((await rest(other, { token: res.body.accessToken }).get('/users/me')).status).toBe(200);
    } finally {
      await other.stop();
    }
    expect((await exchange(code)).status).toBe(400);
  });

  test('two concurrent redemptions: exactly one succeeds', async () => {
    const code = await freshCode();
    const results = await Promise.all([exchange(code), exchange(code), exchange(code)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 400, 400]);
  });

  test('an expired code is refused', async () => {
    const code = await freshCode();
    await db.query(`update sso_exchange_code set expires_at = now() - interval '1 second'`);
    expect((await exchange(code)).body.message).toBe('Invalid or expired token exchange code');
  });

  test('a corrupted or unknown code is refused, and only the hash is stored', async () => {
    const code = await freshCode();
    for (const bad of [`${code}x`, '', undefined]) {
      const res = await rest(app).post('/sso/exchange', bad === undefined ? {} : { code: bad });
      expect(res.body).toEqual({ code: 'VALIDATION_ERROR', message: 'Invalid or expired token exchange code' });
    }
    const stored = await db.query(`select code_hash, tokens from sso_exchange_code`);
    expect(JSON.stringify(stored.rows)).not.toContain(code);
    expect(stored.rows.every((r) => r.tokens.startsWith('v1:'))).toBe(true);
    expect((await exchange(code)).status).toBe(200);
  });
});

describe('invitations in an organization that enforces SSO', () => {
  test('the invitation cannot set a password; signing in through the IdP accepts it', async () => {
    // inviting a Viewer takes holding what a Viewer holds
    const { orgId, admin } = await setup({ enforceSSO: true }, [...permissionsOf('Organization Viewer'), 'users:write']);
    const person = account();
    const invited = await rest(app, admin.as).post('/users/invite', { email: person.email, name: 'Pat Example', roleId: systemRole('Organization Viewer'), orgId });
    expect(invited.status).toBe(201);
    const token = new URL(invited.body.inviteUrl).searchParams.get('token');

    const accept = await rest(app).post('/auth/accept-invite', { token, password: 'a long enough password' });
    expect(accept.status).toBe(403);
    expect(accept.body.code).toBe('FORBIDDEN');

    const { target } = await login(orgId, person.id);
    const tokens = await exchange(ssoCode(target));
    expect(tokens.status).toBe(200);
    const me = await rest(app, { token: tokens.body.accessToken }).get('/users/me');
    expect(me.body).toMatchObject({ email: person.email, status: 'active' });
    // The invitation is spent: it cannot be used for a password afterwards either.
    expect((await rest(app).post('/auth/accept-invite', { token, password: 'a long enough password' })).status).toBe(400);
  });
});

async function signedInAs(target: string): Promise<string> {
  const tokens = await exchange(ssoCode(target));
  expect(tokens.status).toBe(200);
  return (await rest(app, { token: tokens.body.accessToken }).get('/users/me')).body.id;
}

const links = async (providerId: string) =>
  (await db.query(`select user_id, external_id, email from sso_identity where provider_id = $1 order by created_at`, [providerId])).rows;

describe('accounts the organization does not own', () => {
  test("an IdP asserting the email of a platform admin or of another tenant's user gets no session on that account", async () => {
    const { orgId, providerId } = await setup();
    const platformAdmin = await buildUser(app, { role: 'Platform Admin', email: `root-${randomUUID()}@corp.test` });
    const otherTenantUser = await buildUser(app, { orgId: (await buildOrg(app)).id, role: 'Organization Viewer', email: `other-${randomUUID()}@corp.test` });
    for (const victim of [platformAdmin, otherTenantUser]) {
      // Both hold a membership of this organization too: before, that was all the email match needed.
      await addMembership(app, victim.user.id, { orgId, role: 'Organization Viewer' });
      const { target } = await login(orgId, account({ email: victim.user.email }).id);
      expect(target).toBe(`${publicUrl}/login?error=account_link_required`);
    }
    expect(await links(providerId)).toEqual([]);
    const audit = await db.query(`select details from audit_log where action = 'auth.login' and result = 'failure' and resource_id = $1`, [providerId]);
    expect(audit.rows.map((r) => r.details.reason)).toEqual(['account_link_required', 'account_link_required']);
  });

  test("a pending membership of the provider's organization lets no login in", async () => {
    const { orgId } = await setup();
    const invitee = await buildUser(app, { orgId: (await buildOrg(app)).id, role: 'Organization Viewer', email: `invitee-${randomUUID()}@corp.test` });
    await db.query(`delete from membership where user_id = $1`, [invitee.user.id]);
    await addMembership(app, invitee.user.id, { orgId, role: 'Organization Viewer', status: 'pending' });
    expect(errorOf((await login(orgId, account({ email: invitee.user.email }).id)).target)).toBe('no_org_access');
  });
});

describe('identities are matched by (provider, subject)', () => {
  test('a linked subject signs in its user whatever email it asserts later; another subject cannot take over a linked account', async () => {
    const { orgId, providerId } = await setup();
    const member = await buildUser(app, { orgId, role: 'Organization Viewer', email: `member-${randomUUID()}@corp.test` });
    const colleague = await buildUser(app, { orgId, role: 'Organization Viewer', email: `colleague-${randomUUID()}@corp.test` });
    const acct = account({ email: member.user.email });
    expect(await signedInAs((await login(orgId, acct.id)).target)).toBe(member.user.id);
    const linked = await db.query(`select details from audit_log where action = 'sso.identity.link' and org_id = $1`, [orgId]);
    expect(linked.rows.map((r) => r.details)).toEqual([
      { userId: member.user.id, providerId, externalId: acct.id, email: member.user.email, ownerConfirmed: false },
    ]);

    // The IdP now asserts the colleague's email for the same subject: still the member, and the link follows the claim.
    idp.setAccount(acct.id, { email: colleague.user.email, email_verified: true, name: 'Pat Example' });
    expect(await signedInAs((await login(orgId, acct.id)).target)).toBe(member.user.id);
    expect(await links(providerId)).toEqual([{ user_id: member.user.id, external_id: acct.id, email: colleague.user.email }]);

    // A second subject asserting the member's email is refused; the member's link is untouched.
    const impostor = account({ email: member.user.email });
    expect(errorOf((await login(orgId, impostor.id)).target)).toBe('account_link_required');
    expect(await links(providerId)).toEqual([{ user_id: member.user.id, external_id: acct.id, email: colleague.user.email }]);
  });
});

describe('confirming a link while signed in', () => {
  /** A user of another tenant who is also an active member of the provider's organization. */
  async function outsideUser(orgId: string) {
    const user = await buildUser(app, { orgId: (await buildOrg(app)).id, role: 'Organization Viewer', email: `linker-${randomUUID()}@corp.test` });
    await addMembership(app, user.user.id, { orgId, role: 'Organization Viewer' });
    return user;
  }

  /** Opens the link URL in `browser`, signs in at the IdP as `accountId`, and returns the service's redirect target. */
  async function followLink(browser: Browser, url: string, accountId: string): Promise<string> {
    const open = await browser.get(url, { stopAt: isIdp });
    expect(open.status).toBe(302);
    return finish(browser, await loginAtIdp(browser, open.location!, accountId, isCallback));
  }

  test('the owner links the identity, signs in, and the link then serves plain logins; the URL is good once', async () => {
    const { orgId, providerId } = await setup();
    const owner = await outsideUser(orgId);
    const acct = account({ email: owner.user.email });
    expect(errorOf((await login(orgId, acct.id)).target)).toBe('account_link_required');

    const started = await rest(app, owner.as).post(`/sso/link/${orgId}`, { redirect: '/settings/sso' });
    expect(started.status).toBe(200);
    expect(started.body).toEqual({ url: expect.stringMatching(new RegExp(`^${publicUrl}/api/v1/sso/link\\?token=`)) });
    const url = started.body.url.replace(publicUrl, app.url);
    const browser = new Browser();
    const target = await followLink(browser, url, acct.id);
    expect(target).toMatch(new RegExp(`^${publicUrl}/settings/sso#ssoCode=`));
    expect(await signedInAs(target)).toBe(owner.user.id);
    expect(await links(providerId)).toEqual([{ user_id: owner.user.id, external_id: acct.id, email: owner.user.email }]);
    const audit = await db.query(`select action, details from audit_log where action like 'sso.identity.link%' and org_id = $1 order by seq`, [orgId]);
    expect(audit.rows).toEqual([
      { action: 'sso.identity.link.start', details: { userId: owner.user.id, type: 'oidc' } },
      { action: 'sso.identity.link', details: { userId: owner.user.id, providerId, externalId: acct.id, email: owner.user.email, ownerConfirmed: true } },
    ]);

    expect(await signedInAs((await login(orgId, acct.id)).target)).toBe(owner.user.id);
    // The link URL started one login: opened again, by anyone, it starts none.
    const again = await new Browser().get(url, { stopAt: (location) => isIdp(location) || isDashboard(location) });
    expect(again.location).toBe(`${publicUrl}/login?error=session_expired`);
  });

  test('a link URL found by someone else is worthless once opened, or after two minutes', async () => {
    const { orgId } = await setup();
    const owner = await outsideUser(orgId);
    const stopped = (location: string) => isIdp(location) || isDashboard(location);
    const opened = (await rest(app, owner.as).post(`/sso/link/${orgId}`)).body.url.replace(publicUrl, app.url);
    expect((await new Browser().get(opened, { stopAt: stopped })).location).toMatch(new RegExp(`^${idp.issuer}`));
    expect((await new Browser().get(opened, { stopAt: stopped })).location).toBe(`${publicUrl}/login?error=session_expired`);

    const stale = (await rest(app, owner.as).post(`/sso/link/${orgId}`)).body.url.replace(publicUrl, app.url);
    await db.query(`update sso_session set expires_at = now() - interval '1 second' where link_user_id = $1`, [owner.user.id]);
    expect((await new Browser().get(stale, { stopAt: stopped })).location).toBe(`${publicUrl}/login?error=session_expired`);

    const fresh = new URL((await rest(app, owner.as).post(`/sso/link/${orgId}`)).body.url.replace(publicUrl, app.url));
    const token = fresh.searchParams.get('token')!;
    fresh.searchParams.set('token', `${token.slice(0, token.lastIndexOf('.'))}.${'A'.repeat(43)}`);
    expect((await new Browser().get(fresh.href, { stopAt: stopped })).location).toBe(`${publicUrl}/login?error=session_expired`);
  });

  test('a subject linked to another account is not linked to the signed-in one', async () => {
    const { orgId, providerId } = await setup();
    const member = await buildUser(app, { orgId, role: 'Organization Viewer', email: `member-${randomUUID()}@corp.test` });
    const acct = account({ email: member.user.email });
    expect(await signedInAs((await login(orgId, acct.id)).target)).toBe(member.user.id);

    const other = await outsideUser(orgId);
    const url = (await rest(app, other.as).post(`/sso/link/${orgId}`)).body.url.replace(publicUrl, app.url);
    expect(errorOf(await followLink(new Browser(), url, acct.id))).toBe('account_link_required');
    expect(await links(providerId)).toEqual([{ user_id: member.user.id, external_id: acct.id, email: member.user.email }]);
  });

  test('only a user session with an active membership of the organization starts a link; GraphQL too', async () => {
    const { orgId, admin } = await setup({}, ['api_keys:write']);
    const key = await rest(app, admin.as).post('/api-keys', { name: 'automation', scopes: ['organizations:read'] });
    expect(key.status).toBe(201);
    const byKey = await rest(app, { apiKey: key.body.key }).post(`/sso/link/${orgId}`);
    expect(byKey.status).toBe(403);
    expect(byKey.body).toEqual({ code: 'FORBIDDEN', message: 'This operation needs a user session, not an API key' });

    const invitee = await buildUser(app, { orgId: (await buildOrg(app)).id, role: 'Organization Viewer' });
    await addMembership(app, invitee.user.id, { orgId, role: 'Organization Viewer', status: 'pending' });
    for (const path of [`/sso/link/${orgId}`, `/sso/link/${(await buildOrg(app)).id}`, '/sso/link/not-a-uuid']) {
      const res = await rest(app, invitee.as).post(path);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ code: 'NOT_FOUND', message: 'Organization not found' });
    }
    expect((await rest(app).post(`/sso/link/${orgId}`)).status).toBe(401);
    expect((await rest(app, admin.as).post(`/sso/link/${orgId}`, { redirect: 'https://evil.test/' })).status).toBe(400);

    const viaGql = await gql(app, admin.as, `mutation($orgId: ID!) { startSsoLink(orgId: $orgId, redirect: "/devices") { url } }`, { orgId });
    expect(viaGql.body.errors).toBeUndefined();
    const opened = await new Browser().get(viaGql.body.data!.startSsoLink.url.replace(publicUrl, app.url), { stopAt: isIdp });
    expect(opened.location).toMatch(new RegExp(`^${idp.issuer}/auth\\?`));
  });

  test('a session signed in through one organization\'s IdP starts no link in another organization', async () => {
    const a = await setup();
    const b = await setup();
    const member = await buildUser(app, { orgId: a.orgId, role: 'Organization Viewer', email: `member-${randomUUID()}@corp.test` });
    const viaA = await exchange(ssoCode((await login(a.orgId, account({ email: member.user.email }).id)).target));
    expect(viaA.status).toBe(200);
    await addMembership(app, member.user.id, { orgId: b.orgId, role: 'Organization Viewer' });
    expect((await rest(app, { token: viaA.body.accessToken }).post(`/sso/link/${b.orgId}`)).status).toBe(404);
    expect((await rest(app, { token: viaA.body.accessToken }).post(`/sso/link/${a.orgId}`)).status).toBe(200);
  });
});
