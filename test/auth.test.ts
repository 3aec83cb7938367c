import crypto from 'node:crypto';
import { ApiKey } from '../entities/api-key.js';
import { generateApiKey } from '../src/auth/api-key-format.js';
import type { Permission } from '../src/auth/permissions.js';
import { signAccessToken } from '../src/auth/tokens.js';
import { passwordLoginPolicies } from '../src/services/identity/auth.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, createTestApp, type TestApp } from './support/app.js';
import { gql, loginOk, rest } from './support/clients.js';
import { sql } from './support/db.js';
import { buildOrg, buildRole, buildUser, type BuildUserOptions, type BuiltUser } from './support/factories.js';

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

const INVALID_LOGIN = { code: 'UNAUTHENTICATED', message: 'Invalid email or password' };

function jwtPayload(token: string): Record<string, any> {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8'));
}

/** A member of a new organization: signing in and managing one's own account take no permission, so a Viewer unless `can` asks for more. */
async function orgUser(target: TestApp = app, options: Omit<BuildUserOptions, 'orgId' | 'role' | 'can'> & { can?: Permission[] } = {}): Promise<BuiltUser> {
  const org = await buildOrg(target);
  const { can, ...fields } = options;
  return buildUser(target, { orgId: org.id, ...fields, ...(can ? { can } : { role: 'Organization Viewer' }) });
}

/** A password login that must be refused with the one answer that tells nothing about the account. */
async function loginRefused(target: TestApp, email: string, password: string, headers?: Record<string, string>): Promise<void> {
  const res = await rest(target).post('/auth/login', { email, password }, headers);
  expect({ email, status: res.status, body: res.body }).toEqual({ email, status: 401, body: INVALID_LOGIN });
}

// The test's own TOTP (RFC 6238: HMAC-SHA-1, 6 digits, 30 s), written independently of src/auth/totp.ts.
function base32ToBytes(text: string): Buffer {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  const bits = [...text.toUpperCase()].map((c) => alphabet.indexOf(c).toString(2).padStart(5, '0')).join('');
  return Buffer.from(bits.match(/.{8}/g)!.map((byte) => parseInt(byte, 2)));
}

function totp(secret: string, step: number): string {
  const counter = Buffer.alloc(8);
  counter.writeUInt32BE(Math.floor(step / 2 ** 32), 0);
  counter.writeUInt32BE(step % 2 ** 32, 4);
  const mac = crypto.createHmac('sha1', base32ToBytes(secret)).update(counter).digest();
  const offset = mac[19]! & 0x0f;
  return String((mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000).padStart(6, '0');
}

const currentStep = () => Math.floor(Date.now() / 30_000);

/** A six-digit code that is not valid for any step near now. */
function wrongCode(secret: string): string {
  const near = new Set(Array.from({ length: 7 }, (_, i) => totp(secret, currentStep() - 3 + i)));
  let n = 0;
  while (near.has(String(n).padStart(6, '0'))) n++;
  return String(n).padStart(6, '0');
}

/** An MFA access token outside any login session (as an API key's creator would hold after a second factor). */
async function tokenWithMfa(userId: string, membershipId: string, ver: number): Promise<string> {
  const [m] = await sql(app, `select scope, org_id, partner_id, role_id from membership where id = ?`, [membershipId]);
  return signAccessToken(app.server.runtime.config, { sub: userId, mid: membershipId, scope: m.scope, partnerId: m.partner_id, orgId: m.org_id, roleId: m.role_id, mfa: true, ver });
}

/** Sets up and enables MFA for a signed-in user; returns the secret, the step used and the recovery codes. */
async function enableMfaFor(target: TestApp, token: string) {
  const setup = await rest(target, { token }).post('/auth/mfa/setup');
  expect(setup.status).toBe(200);
  const step = currentStep();
  const enabled = await rest(target, { token }).post('/auth/mfa/enable', { code: totp(setup.body.secret, step) });
  expect(enabled.status).toBe(200);
  return { secret: setup.body.secret as string, step, recoveryCodes: enabled.body.recoveryCodes as string[] };
}

describe('password login', () => {
  test('REST: answers tokens and the user view; the access token works on a protected route', async () => {
    const u = await orgUser();
    const res = await rest(app).post('/auth/login', { email: u.user.email, password: u.password });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      accessToken: expect.any(String),
      refreshToken: expect.any(String),
      expiresIn: 900,
      user: {
        id: u.user.id,
        email: u.user.email,
        name: 'Test User',
        status: 'active',
        mfaEnabled: false,
        lastLoginAt: expect.any(String),
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
        scope: 'organization',
        partnerId: null,
        orgId: u.membership.orgId,
        roleId: u.membership.roleId,
      },
    });
    const claims = jwtPayload(res.body.accessToken);
    expect(claims).toMatchObject({ sub: u.user.id, scope: 'organization', orgId: u.membership.orgId, roleId: u.membership.roleId, mfa: false, ver: 0 });
    expect(claims.sid).toEqual(expect.any(String));
    expect(claims.exp - claims.iat).toBe(900);
    const [family] = await sql(app, 'select family_id, token_hash from refresh_token where user_id = ?', [u.user.id]);
    expect(family.family_id).toBe(claims.sid);
    // Only the hash of the refresh token is stored.
    expect(family.token_hash).toBe(crypto.createHash('sha256').update(res.body.refreshToken).digest('hex'));

    const setup = await rest(app, { token: res.body.accessToken }).post('/auth/mfa/setup');
    expect(setup.status).toBe(200);
    expect(setup.body.secret).toMatch(/^[A-Z2-7]{32}$/);
  });

  test('GraphQL: login returns the same session and the token works', async () => {
    const u = await orgUser();
    const res = await gql(
      app,
      null,
      `mutation($email: String!, $password: String!) { login(email: $email, password: $password) {
        accessToken refreshToken expiresIn mfaRequired mfaToken user { id email scope orgId mfaEnabled lastLoginAt } } }`,
      { email: u.user.email, password: u.password },
    );
    expect(res.body.errors).toBeUndefined();
    const result = res.body.data.login;
    expect(result).toMatchObject({ expiresIn: 900, mfaRequired: false, mfaToken: null, user: { id: u.user.id, email: u.user.email, scope: 'organization', orgId: u.membership.orgId, mfaEnabled: false } });
    expect(result.user.lastLoginAt).not.toBeNull();
    const setup = await gql(app, { token: result.accessToken }, 'mutation { setupMfa { secret otpauthUrl } }');
    expect(setup.body.errors).toBeUndefined();
    expect(setup.body.data.setupMfa.otpauthUrl).toContain(`otpauth://totp/rmm-service:${u.user.email}?secret=`);
  });

  test('the email is matched case-insensitively', async () => {
    const u = await orgUser(app, { email: `Mixed.Case-${crypto.randomUUID().slice(0, 8)}@Example.test` });
    const body = await loginOk(app, `  ${u.user.email.toUpperCase()} `, u.password);
    expect(body.user.email).toBe(u.user.email);
  });

  test('a user with several memberships signs in through the oldest one', async () => {
    const u = await orgUser();
    const other = await buildOrg(app);
    await sql(app, `insert into membership (id, created_at, updated_at, user_id, scope, org_id, role_id, org_access, org_ids, site_ids)
      values (?, now() + interval '1 minute', now(), ?, 'organization', ?, ?, 'all', '[]', '[]')`, [crypto.randomUUID(), u.user.id, other.id, u.membership.roleId]);
    const body = await loginOk(app, u.user.email, u.password);
    expect(body.user.orgId).toBe(u.membership.orgId);
  });

  test('every refusal answers the same 401, over REST and GraphQL', async () => {
    const active = await orgUser();
    const invited = await orgUser(app, { status: 'invited' });
    const disabled = await orgUser(app, { status: 'disabled' });
    const ssoOnly = await orgUser();
    const policy = async (_em: unknown, membership: { userId: string }) => membership.userId !== ssoOnly.user.id;
    passwordLoginPolicies.push(policy);
    try {
      const attempts = [
        { email: 'nobody-here@example.test', password: 'whatever password' },
        { email: active.user.email, password: 'wrong password' },
        { email: invited.user.email, password: invited.password },
        { email: disabled.user.email, password: disabled.password },
        { email: ssoOnly.user.email, password: ssoOnly.password },
      ];
      for (const attempt of attempts) {
        const res = await rest(app).post('/auth/login', attempt);
        expect({ attempt: attempt.email, status: res.status, body: res.body }).toEqual({ attempt: attempt.email, status: 401, body: INVALID_LOGIN });
        const viaGraphql = await gql(app, null, 'mutation($e: String!, $p: String!) { login(email: $e, password: $p) { accessToken } }', { e: attempt.email, p: attempt.password });
        expect(viaGraphql.body.errors?.[0]).toMatchObject({ message: INVALID_LOGIN.message, extensions: { code: 'UNAUTHENTICATED' } });
      }
    } finally {
      passwordLoginPolicies.splice(passwordLoginPolicies.indexOf(policy), 1);
    }
    // The policy was the only thing refusing that user.
    await loginOk(app, ssoOnly.user.email, ssoOnly.password);
  });

  test('unknown fields and missing values are validation errors, not login failures', async () => {
    const unknown = await rest(app).post('/auth/login', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD, mfa: true });
    expect({ status: unknown.status, body: unknown.body }).toEqual({ status: 400, body: { code: 'VALIDATION_ERROR', message: 'Unrecognized key: "mfa"', details: expect.any(Array) } });
    const missing = await rest(app).post('/auth/login', { email: ADMIN_EMAIL });
    expect({ status: missing.status, body: missing.body }).toEqual({ status: 400, body: { code: 'VALIDATION_ERROR', message: 'password: Invalid input: expected string, received undefined', details: expect.any(Array) } });
  });

  test('audit rows for success and failure (never the password) and a user.login event in the outbox', async () => {
    const u = await orgUser();
    await loginRefused(app, u.user.email, 'not-the-password-123');
    await loginOk(app, u.user.email, u.password);
    const rows = await sql(app, `select actor_type, actor_id, actor_email, result, org_id, resource_id, details from audit_log where action = 'auth.login' and resource_id = ? order by seq`, [u.user.id]);
    expect(rows).toEqual([
      expect.objectContaining({ actor_type: 'anonymous', actor_id: null, result: 'failure', org_id: u.membership.orgId, details: { email: u.user.email, reason: 'wrong_password' } }),
      expect.objectContaining({ actor_type: 'user', actor_id: u.user.id, actor_email: u.user.email, result: 'success', org_id: u.membership.orgId, details: { method: 'password', mfa: false } }),
    ]);
    expect(JSON.stringify(rows)).not.toContain('not-the-password-123');
    await loginRefused(app, 'ghost@example.test', 'x');
    expect(await sql(app, `select result, details from audit_log where action = 'auth.login' and details->>'email' = 'ghost@example.test'`)).toEqual([
      { result: 'failure', details: { email: 'ghost@example.test', reason: 'unknown_email' } },
    ]);

    const events = await sql(app, `select type, org_id, data from outbox_event where type = 'user.login' and data->>'userId' = ?`, [u.user.id]);
    expect(events).toEqual([{ type: 'user.login', org_id: u.membership.orgId, data: { userId: u.user.id, email: u.user.email, method: 'password' } }]);
  });
});

describe('lockout and throttling', () => {
  test('an email is locked after N failures, even for the right password, until the window passes', async () => {
    const locked = await createTestApp({ env: { LOGIN_MAX_FAILURES_PER_EMAIL: '3' } });
    try {
      const u = await orgUser(locked);
      const bystander = await orgUser(locked);
      for (let i = 0; i < 3; i++) await loginRefused(locked, u.user.email, `wrong-${i}`);
      await loginRefused(locked, u.user.email, u.password);
      const [audit] = await sql(locked, `select details from audit_log where action = 'auth.login' and resource_id = ? order by seq desc limit 1`, [u.user.id]);
      expect(audit.details.reason).toBe('locked_out');
      // Other accounts from the same address are unaffected.
      await loginOk(locked, bystander.user.email, bystander.password);

      // The failures leave the 15-minute window.
      await sql(locked, `update login_attempt set created_at = created_at - interval '16 minutes' where email = ?`, [u.user.email]);
      await loginOk(locked, u.user.email, u.password);
    } finally {
      await locked.stop();
    }
  });

  test('a successful login ends the run of failures', async () => {
    const locked = await createTestApp({ env: { LOGIN_MAX_FAILURES_PER_EMAIL: '3' } });
    try {
      const u = await orgUser(locked);
      for (let i = 0; i < 2; i++) await loginRefused(locked, u.user.email, 'wrong');
      await loginOk(locked, u.user.email, u.password);
      for (let i = 0; i < 2; i++) await loginRefused(locked, u.user.email, 'wrong');
      await loginOk(locked, u.user.email, u.password);
    } finally {
      await locked.stop();
    }
  });

  test('an IP with too many failures gets 429 with Retry-After; successes do not count', async () => {
    // The addresses come from X-Forwarded-For, believed only from a configured proxy.
    const limited = await createTestApp({ env: { LOGIN_MAX_FAILURES_PER_IP: '5', TRUST_PROXY: 'loopback' } });
    try {
      const u = await orgUser(limited);
      const from = { 'x-forwarded-for': '203.0.113.7' };
      for (let i = 0; i < 6; i++) await loginOk(limited, u.user.email, u.password, from);
      for (let i = 0; i < 5; i++) await loginRefused(limited, `spray-${i}@example.test`, 'guess', from);
      const throttled = await rest(limited).post('/auth/login', { email: u.user.email, password: 'guess' }, from);
      expect(throttled.status).toBe(429);
      const retryAfter = Number(throttled.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(800);
      expect(retryAfter).toBeLessThanOrEqual(900);
      expect(throttled.body).toEqual({ code: 'RATE_LIMITED', message: 'Too many failed login attempts', details: { retryAfterSeconds: retryAfter } });
      // Another address is not affected.
      await loginOk(limited, u.user.email, u.password, { 'x-forwarded-for': '203.0.113.8' });
      // Once the failures leave the window, the address may try again.
      await sql(limited, `update login_attempt set created_at = created_at - interval '16 minutes' where ip = '203.0.113.7'`);
      await loginOk(limited, u.user.email, u.password, from);
    } finally {
      await limited.stop();
    }
  });
});

describe('refresh tokens', () => {
  test('refresh rotates; the old token presented again ends the whole session', async () => {
    const u = await orgUser();
    const first = await loginOk(app, u.user.email, u.password);
    const rotated = await rest(app).post('/auth/refresh', { refreshToken: first.refreshToken });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({ accessToken: expect.any(String), refreshToken: expect.any(String), expiresIn: 900 });
    expect(rotated.body.refreshToken).not.toBe(first.refreshToken);
    expect(jwtPayload(rotated.body.accessToken).sid).toBe(jwtPayload(first.accessToken).sid);
    expect((await rest(app, { token: rotated.body.accessToken }).post('/auth/mfa/setup')).status).toBe(200);

    const reused = await rest(app).post('/auth/refresh', { refreshToken: first.refreshToken });
    expect(reused.status).toBe(401);
    expect(reused.body).toEqual({ code: 'UNAUTHENTICATED', message: 'Invalid or expired refresh token' });
    // The same family: the newer refresh token and the access tokens stop working too.
    expect((await rest(app).post('/auth/refresh', { refreshToken: rotated.body.refreshToken })).status).toBe(401);
    expect((await rest(app, { token: rotated.body.accessToken }).post('/auth/mfa/setup')).status).toBe(401);
    const [audit] = await sql(app, `select details from audit_log where action = 'auth.session.revoke' and resource_id = ?`, [u.user.id]);
    expect(audit.details).toMatchObject({ reason: 'refresh_token_reuse' });
  });

  test('GraphQL refreshToken rotates too; unknown and expired tokens are refused', async () => {
    const u = await orgUser();
    const session = await loginOk(app, u.user.email, u.password);
    const res = await gql(app, null, 'mutation($t: String!) { refreshToken(refreshToken: $t) { accessToken refreshToken expiresIn } }', { t: session.refreshToken });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.refreshToken.expiresIn).toBe(900);

    const unknown = await rest(app).post('/auth/refresh', { refreshToken: 'no-such-token' });
    expect(unknown.body).toEqual({ code: 'UNAUTHENTICATED', message: 'Invalid or expired refresh token' });

    const other = await loginOk(app, u.user.email, u.password);
    await sql(app, `update refresh_token set expires_at = now() - interval '1 second' where family_id = ?`, [jwtPayload(other.accessToken).sid]);
    expect((await rest(app).post('/auth/refresh', { refreshToken: other.refreshToken })).status).toBe(401);
  });
});

describe('logout', () => {
  test('ends the refresh token and the access token at once; audits and emits user.logout', async () => {
    const u = await orgUser();
    const session = await loginOk(app, u.user.email, u.password);
    const other = await loginOk(app, u.user.email, u.password);
    const res = await rest(app, { token: session.accessToken }).post('/auth/logout');
    expect(res.status).toBe(204);
    expect((await rest(app, { token: session.accessToken }).post('/auth/mfa/setup')).body).toEqual({ code: 'UNAUTHENTICATED', message: 'Invalid or expired access token' });
    expect((await rest(app).post('/auth/refresh', { refreshToken: session.refreshToken })).status).toBe(401);
    // Another session of the same user continues.
    expect((await rest(app, { token: other.accessToken }).post('/auth/mfa/setup')).status).toBe(200);

    const [audit] = await sql(app, `select actor_id, result from audit_log where action = 'auth.logout' and resource_id = ?`, [u.user.id]);
    expect(audit).toEqual({ actor_id: u.user.id, result: 'success' });
    const events = await sql(app, `select org_id, data from outbox_event where type = 'user.logout' and data->>'userId' = ?`, [u.user.id]);
    expect(events).toEqual([{ org_id: u.membership.orgId, data: { userId: u.user.id, email: u.user.email } }]);
  });

  test('a given refresh token of the caller is ended as well; without a session logout is 401', async () => {
    const u = await orgUser();
    const current = await loginOk(app, u.user.email, u.password);
    const older = await loginOk(app, u.user.email, u.password);
    const res = await gql(app, { token: current.accessToken }, 'mutation($t: String) { logout(refreshToken: $t) }', { t: older.refreshToken });
    expect(res.body).toEqual({ data: { logout: true } });
    expect((await rest(app).post('/auth/refresh', { refreshToken: older.refreshToken })).status).toBe(401);
    expect((await rest(app, { token: older.accessToken }).post('/auth/mfa/setup')).status).toBe(401);
    expect((await rest(app).post('/auth/logout')).status).toBe(401);
  });
});

describe('password change and disabled users', () => {
  test('change-password ends every other session at once and returns a new one', async () => {
    const u = await orgUser();
    const mine = await loginOk(app, u.user.email, u.password);
    const elsewhere = await loginOk(app, u.user.email, u.password);
    const newPassword = 'a much better passphrase';

    const short = await rest(app, { token: mine.accessToken }).post('/auth/change-password', { currentPassword: u.password, newPassword: 'short' });
    expect(short.status).toBe(400);
    expect(short.body.message).toBe('newPassword: must be at least 12 characters');
    const wrong = await rest(app, { token: mine.accessToken }).post('/auth/change-password', { currentPassword: 'not it', newPassword });
    expect(wrong.status).toBe(400);
    expect(wrong.body).toEqual({ code: 'VALIDATION_ERROR', message: 'Current password is incorrect' });

    const res = await rest(app, { token: mine.accessToken }).post('/auth/change-password', { currentPassword: u.password, newPassword });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ accessToken: expect.any(String), refreshToken: expect.any(String), expiresIn: 900, apiKeysRevoked: 0 });
    expect(jwtPayload(res.body.accessToken).ver).toBe(1);

    for (const token of [mine.accessToken, elsewhere.accessToken]) {
      expect((await rest(app, { token }).post('/auth/mfa/setup')).status).toBe(401);
    }
    for (const refreshToken of [mine.refreshToken, elsewhere.refreshToken]) {
      expect((await rest(app).post('/auth/refresh', { refreshToken })).status).toBe(401);
    }
    expect((await rest(app, { token: res.body.accessToken }).post('/auth/mfa/setup')).status).toBe(200);
    expect((await rest(app).post('/auth/refresh', { refreshToken: res.body.refreshToken })).status).toBe(200);
    await loginRefused(app, u.user.email, u.password);
    await loginOk(app, u.user.email, newPassword);
    const [audit] = await sql(app, `select actor_id from audit_log where action = 'auth.password.change' and result = 'success' and resource_id = ?`, [u.user.id]);
    expect(audit.actor_id).toBe(u.user.id);
  });

  test('API keys made under the old password are revoked by the change, unless the user keeps them', async () => {
    const keyMaker: Permission[] = ['api_keys:write', 'users:read'];
    const u = await orgUser(app, { can: keyMaker });
    const session = await loginOk(app, u.user.email, u.password);
    const makeKey = async (token: string) => (await rest(app, { token }).post('/api-keys', { name: 'script', scopes: ['users:read'] })).body.key as string;
    const mfaSession = { token: u.token };
    const revoked = await makeKey(mfaSession.token);
    expect((await rest(app, { apiKey: revoked }).get('/users/me')).status).toBe(200);

    const changed = await rest(app, { token: session.accessToken }).post('/auth/change-password', { currentPassword: u.password, newPassword: 'first new passphrase' });
    expect(changed.body.apiKeysRevoked).toBe(1);
    expect((await rest(app, { apiKey: revoked }).get('/users/me')).status).toBe(401);
    const [event] = await sql(app, `select data from outbox_event where type = 'user.password_changed' and data->>'userId' = ?`, [u.user.id]);
    expect(event.data).toEqual({ userId: u.user.id, apiKeysRevoked: 1 });

    const kept = await makeKey((await buildUser(app, { orgId: u.membership.orgId!, can: keyMaker, email: `k-${crypto.randomUUID()}@example.test` })).token);
    const own = await makeKey(await tokenWithMfa(u.user.id, u.membership.id, 1));
    const again = await rest(app, { token: changed.body.accessToken }).post('/auth/change-password', {
      currentPassword: 'first new passphrase',
      newPassword: 'second new passphrase',
      apiKeys: 'keep',
    });
    expect(again.body.apiKeysRevoked).toBe(0);
    expect((await rest(app, { apiKey: own }).get('/users/me')).status).toBe(200);
    expect((await rest(app, { apiKey: kept }).get('/users/me')).status).toBe(200);
    expect((await rest(app, { token: again.body.accessToken }).post('/auth/change-password', { currentPassword: 'x', newPassword: 'third new passphrase', apiKeys: 'maybe' })).status).toBe(400);
  });

  test('a session that signed in through SSO needs the account’s own password to enrol a second factor', async () => {
    const u = await orgUser(app, { mfa: false });
    const familyId = crypto.randomUUID();
    await sql(app, `insert into refresh_token (id, created_at, updated_at, user_id, membership_id, family_id, token_hash, mfa, method, token_version, expires_at)
      values (?, now(), now(), ?, ?, ?, ?, false, 'sso', 0, now() + interval '1 day')`, [crypto.randomUUID(), u.user.id, u.membership.id, familyId, crypto.randomBytes(32).toString('hex')]);
    const ssoToken = await signAccessToken(app.server.runtime.config, {
      sub: u.user.id, mid: u.membership.id, scope: 'organization', partnerId: null, orgId: u.membership.orgId, roleId: u.membership.roleId, mfa: false, ver: 0, sid: familyId,
    });
    const sso = rest(app, { token: ssoToken });
    expect(await sso.post('/auth/mfa/setup', {})).toMatchObject({ status: 403, body: { code: 'FORBIDDEN' } });
    expect(await sso.post('/auth/mfa/setup', { currentPassword: 'not the password' })).toMatchObject({ status: 400, body: { message: 'Current password is incorrect' } });
    expect((await sso.post('/auth/mfa/setup', { currentPassword: u.password })).status).toBe(200);
    // nor does it reach the account's other memberships
    expect((await sso.post('/auth/switch-membership', { membershipId: u.membership.id })).status).toBe(403);
  });

  test('a disabled user’s access and refresh tokens stop working', async () => {
    const u = await orgUser();
    const session = await loginOk(app, u.user.email, u.password);
    await sql(app, `update "user" set status = 'disabled' where id = ?`, [u.user.id]);
    const res = await rest(app, { token: session.accessToken }).post('/auth/mfa/setup');
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ code: 'UNAUTHENTICATED', message: 'Invalid or expired access token' });
    expect((await rest(app).post('/auth/refresh', { refreshToken: session.refreshToken })).status).toBe(401);
  });
});

describe('MFA', () => {
  test('the test’s own TOTP matches RFC 6238', () => {
    // RFC 6238 appendix B, SHA-1, T = 59 s; the last six of 94287082.
    expect(totp('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ', 1)).toBe('287082');
  });

  test('setup, enable, login with a TOTP code, recovery codes once each, refresh keeps the factor, disable', async () => {
    const u = await orgUser();
    const session = await loginOk(app, u.user.email, u.password);
    const as = { token: session.accessToken };

    const setup = await rest(app, as).post('/auth/mfa/setup');
    expect(setup.body).toEqual({
      secret: expect.stringMatching(/^[A-Z2-7]+$/),
      otpauthUrl: `otpauth://totp/rmm-service:${u.user.email}?secret=${setup.body.secret}&issuer=rmm-service`,
    });
    const [stored] = await sql(app, 'select mfa_secret, mfa_enabled from "user" where id = ?', [u.user.id]);
    expect(stored.mfa_enabled).toBe(false);
    expect(stored.mfa_secret).not.toContain(setup.body.secret);
    // Not on yet: login still answers tokens.
    await loginOk(app, u.user.email, u.password);

    expect((await rest(app, as).post('/auth/mfa/enable', { code: wrongCode(setup.body.secret) })).body).toEqual({
      code: 'VALIDATION_ERROR',
      message: 'Invalid MFA code',
    });
    expect((await rest(app, as).post('/auth/mfa/enable', {})).body).toEqual({ code: 'VALIDATION_ERROR', message: 'code: MFA code is required', details: expect.any(Array) });
    const step = currentStep();
    const enabled = await rest(app, as).post('/auth/mfa/enable', { code: totp(setup.body.secret, step) });
    expect(enabled.status).toBe(200);
    expect(Object.keys(enabled.body)).toEqual(['recoveryCodes']);
    const recoveryCodes: string[] = enabled.body.recoveryCodes;
    expect(recoveryCodes).toHaveLength(10);
    expect(new Set(recoveryCodes).size).toBe(10);
    const [after] = await sql(app, 'select mfa_recovery_codes from "user" where id = ?', [u.user.id]);
    expect(JSON.stringify(after.mfa_recovery_codes)).not.toContain(recoveryCodes[0]);

    const login = await rest(app).post('/auth/login', { email: u.user.email, password: u.password });
    expect(login.status).toBe(200);
    expect(login.body).toEqual({ mfaRequired: true, mfaToken: expect.any(String) });
    const { mfaToken } = login.body;
    // The MFA token is not an access token.
    expect((await rest(app, { token: mfaToken }).post('/auth/mfa/setup')).status).toBe(401);
    expect((await rest(app).post('/auth/mfa/verify', { mfaToken: session.accessToken, code: totp(setup.body.secret, step + 1) })).body).toEqual({
      code: 'UNAUTHENTICATED',
      message: 'Invalid or expired MFA token',
    });

    const later = await rest(app).post('/auth/mfa/verify', { mfaToken, code: totp(setup.body.secret, step + 5) });
    expect(later.status).toBe(401);
    expect(later.body).toEqual({ code: 'UNAUTHENTICATED', message: 'Invalid MFA code' });
    // The code that enabled MFA was spent: its time step cannot be used again.
    expect((await rest(app).post('/auth/mfa/verify', { mfaToken, code: totp(setup.body.secret, step) })).status).toBe(401);

    const verified = await rest(app).post('/auth/mfa/verify', { mfaToken, code: totp(setup.body.secret, step + 1) });
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({ expiresIn: 900, user: { id: u.user.id, mfaEnabled: true } });
    expect(jwtPayload(verified.body.accessToken)).toMatchObject({ sub: u.user.id, mfa: true });
    expect((await rest(app).post('/auth/mfa/verify', { mfaToken, code: totp(setup.body.secret, step + 1) })).status).toBe(401);
    expect(await sql(app, `select org_id, data from outbox_event where type = 'user.login' and data->>'userId' = ? and data->>'method' = 'mfa'`, [u.user.id])).toEqual([
      { org_id: u.membership.orgId, data: { userId: u.user.id, email: u.user.email, method: 'mfa' } },
    ]);

    const refreshed = await rest(app).post('/auth/refresh', { refreshToken: verified.body.refreshToken });
    expect(jwtPayload(refreshed.body.accessToken).mfa).toBe(true);

    // A recovery code (typed in upper case) works once, here through GraphQL.
    const second = await rest(app).post('/auth/login', { email: u.user.email, password: u.password });
    const viaRecovery = await gql(app, null, 'mutation($t: String!, $c: String!) { verifyMfa(mfaToken: $t, code: $c) { accessToken mfaRequired user { id } } }', {
      t: second.body.mfaToken,
      c: recoveryCodes[0]!.toUpperCase(),
    });
    expect(viaRecovery.body.errors).toBeUndefined();
    expect(viaRecovery.body.data.verifyMfa).toMatchObject({ mfaRequired: false, user: { id: u.user.id } });
    expect(jwtPayload(viaRecovery.body.data.verifyMfa.accessToken).mfa).toBe(true);
    const third = await rest(app).post('/auth/login', { email: u.user.email, password: u.password });
    expect((await rest(app).post('/auth/mfa/verify', { mfaToken: third.body.mfaToken, code: recoveryCodes[0] })).status).toBe(401);
    expect((await rest(app).post('/auth/mfa/verify', { mfaToken: third.body.mfaToken, code: recoveryCodes[1] })).status).toBe(200);

    const mfaSession = { token: verified.body.accessToken };
    expect((await rest(app, mfaSession).post('/auth/mfa/setup')).status).toBe(409);
    expect((await rest(app, mfaSession).post('/auth/mfa/disable', { code: 'zzzz-zzzz' })).body).toEqual({ code: 'VALIDATION_ERROR', message: 'Invalid MFA code' });
    expect((await rest(app, mfaSession).post('/auth/mfa/disable', { code: recoveryCodes[2] })).status).toBe(204);
    const [cleared] = await sql(app, 'select mfa_enabled, mfa_secret, mfa_recovery_codes from "user" where id = ?', [u.user.id]);
    expect(cleared).toEqual({ mfa_enabled: false, mfa_secret: null, mfa_recovery_codes: [] });
    await loginOk(app, u.user.email, u.password);

    const actions = (await sql(app, `select action from audit_log where resource_id = ? and action like 'auth.mfa.%' and result = 'success' order by seq`, [u.user.id])).map((r) => r.action);
    expect(actions).toEqual(['auth.mfa.setup', 'auth.mfa.enable', ...Array(3).fill('auth.mfa.recovery_code.use'), 'auth.mfa.disable']);
  });

  test('wrong MFA codes count towards the email lockout', async () => {
    const locked = await createTestApp({ env: { LOGIN_MAX_FAILURES_PER_EMAIL: '3' } });
    try {
      const u = await orgUser(locked);
      const { secret, step } = await enableMfaFor(locked, u.token);
      const { mfaToken } = (await rest(locked).post('/auth/login', { email: u.user.email, password: u.password })).body;
      const invalidCode = { status: 401, body: { code: 'UNAUTHENTICATED', message: 'Invalid MFA code' } };
      for (let i = 0; i < 3; i++) expect(await rest(locked).post('/auth/mfa/verify', { mfaToken, code: wrongCode(secret) })).toMatchObject(invalidCode);
      expect(await rest(locked).post('/auth/mfa/verify', { mfaToken, code: totp(secret, step + 1) })).toMatchObject(invalidCode);
      await loginRefused(locked, u.user.email, u.password);
    } finally {
      await locked.stop();
    }
  });

  test('a role that forces MFA: 403 MFA_REQUIRED on authorized routes until the user signs in with a second factor', async () => {
    const org = await buildOrg(app);
    const role = await buildRole(app, { scope: 'organization', orgId: org.id, permissions: ['organizations:read'], requireMfa: true });
    const u = await buildUser(app, { orgId: org.id, role: role.id });
    const session = await loginOk(app, u.user.email, u.password);

    const denied = await rest(app, { token: session.accessToken }).get(`/orgs/organizations/${org.id}`);
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ code: 'MFA_REQUIRED', message: 'Multi-factor authentication is required for this action' });

    // The MFA routes stay open to the session so the user can set a factor up.
    const { secret, step } = await enableMfaFor(app, session.accessToken);
    const { mfaToken } = (await rest(app).post('/auth/login', { email: u.user.email, password: u.password })).body;
    const verified = await rest(app).post('/auth/mfa/verify', { mfaToken, code: totp(secret, step + 1) });
    expect(verified.status).toBe(200);
    const allowed = await rest(app, { token: verified.body.accessToken }).get(`/orgs/organizations/${org.id}`);
    expect(allowed.status).toBe(200);
    expect(allowed.body.id).toBe(org.id);
  });

  test('an API key cannot manage the account’s password, second factor or sessions', async () => {
    const u = await orgUser();
    const { key, prefix, hash } = generateApiKey();
    const e = app.server.runtime.orm.em.fork();
    e.create(ApiKey, { name: 'script', prefix, keyHash: hash, scopes: ['*'], userId: u.user.id, membershipId: u.membership.id, orgId: u.membership.orgId });
    await e.flush();
    const bodies: Record<string, unknown> = {
      '/auth/mfa/setup': {},
      '/auth/mfa/enable': { code: '123456' },
      '/auth/mfa/disable': { code: '123456' },
      '/auth/change-password': { currentPassword: u.password, newPassword: 'a new long password' },
      '/auth/logout': {},
    };
    for (const [path, body] of Object.entries(bodies)) {
      const res = await rest(app, { apiKey: key }).post(path, body);
      expect({ path, status: res.status, body: res.body }).toEqual({
        path,
        status: 403,
        body: { code: 'FORBIDDEN', message: 'This operation needs a user session, not an API key' },
      });
    }
  });
});

describe('housekeeping and suspended tenants', () => {
  test('the hourly prune job removes old login attempts and long-expired refresh tokens only', async () => {
    const old = new Date(Date.now() - 3 * 24 * 3600_000);
    await sql(app, `insert into login_attempt (id, created_at, updated_at, email, ip, success) values (?, ?, ?, 'old@example.test', '10.0.0.1', false)`, [crypto.randomUUID(), old, old]);
    await loginRefused(app, 'fresh-prune@example.test', 'wrong password');

    const { sessionJobs } = await import('../src/jobs/sessions.js');
    await sessionJobs.find((j) => j.name === 'auth.prune')!.handler(app.server.runtime, undefined as never);

    const rows = await sql(app, `select email from login_attempt where email in ('old@example.test', 'fresh-prune@example.test')`);
    expect(rows.map((r) => r.email)).toEqual(['fresh-prune@example.test']);
  });

  test('members of a suspended organization are refused with 403', async () => {
    const org = await buildOrg(app);
    const member = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
    expect((await rest(app, member.as).get('/users/me')).status).toBe(200);
    await sql(app, `update organization set status = 'suspended' where id = ?`, [org.id]);
    const res = await rest(app, member.as).get('/users/me');
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ code: 'FORBIDDEN', message: 'Your organization is suspended' });
  });
});

test('a stale bearer token does not stop a public route such as login, but still fails a protected one', async () => {
  const headers = { authorization: 'Bearer expired.or.forged' };
  const login = await rest(app).post('/auth/login', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD }, headers);
  expect(login.status).toBe(200);
  expect(login.body.accessToken).toEqual(expect.any(String));
  const me = await rest(app).get('/users/me', headers);
  expect(me.status).toBe(401);
  expect(me.body).toEqual({ code: 'UNAUTHENTICATED', message: 'Invalid or expired access token' });

  // The same through GraphQL: the login mutation works, a field that needs a caller reports the refused token.
  const stale = { token: 'expired.or.forged' };
  const viaGraphql = await gql(app, stale, 'mutation($e: String!, $p: String!) { login(email: $e, password: $p) { accessToken } }', { e: ADMIN_EMAIL, p: ADMIN_PASSWORD });
  expect(viaGraphql.body.data?.login.accessToken).toEqual(expect.any(String));
  const meViaGraphql = await gql(app, stale, '{ me { id } }');
  expect(meViaGraphql.body.errors?.[0]).toMatchObject({ message: 'Invalid or expired access token', extensions: { code: 'UNAUTHENTICATED' } });
});
