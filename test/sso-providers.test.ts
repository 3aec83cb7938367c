// SSO provider management over REST and GraphQL: validation, secrets, tenancy, MFA, one active provider,
// discovery, the test operation, audit and enforced SSO for password login (the public routes' rate limit: rate-limit.test.ts).
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import type { Permission } from '../src/auth/permissions.js';
import { buildOrg, buildPartner, buildRole, buildUser, permissionsOf, systemRole, type BuiltUser } from './support/factories.js';
import { startHttpsReceiver } from './support/https-receiver.js';
import { startOidcIdp, type TestOidcIdp } from './support/oidc-idp.js';
import { createSamlIdp } from './support/saml-idp.js';

let app: TestApp;
let idp: TestOidcIdp;
let db: pg.Client;
const samlIdp = createSamlIdp();
const SECRET = 'top-secret-client-secret-value';

beforeAll(async () => {
  idp = await startOidcIdp();
  app = await createTestApp({ env: { ALLOW_PRIVATE_NETWORK_TARGETS: 'true', SSO_RATE_LIMIT_PER_MINUTE: '100000' } });
  db = new pg.Client({ connectionString: app.databaseUrl });
  await db.connect();
});

afterAll(async () => {
  await db.end();
  await app.stop();
  await idp.close();
});

/** Providers are organization configuration: reading them takes `organizations:read`, changing them `organizations:write`. */
const SSO_MANAGER: Permission[] = ['organizations:read', 'organizations:write'];

/** An organization with the one member who manages its SSO providers; `can` when it does more. */
async function orgWithManager(can: Permission[] = SSO_MANAGER): Promise<{ orgId: string; manager: BuiltUser }> {
  const org = await buildOrg(app);
  return { orgId: org.id, manager: await buildUser(app, { orgId: org.id, can }) };
}

async function createOidc(manager: BuiltUser, fields: Record<string, unknown> = {}) {
  const res = await rest(app, manager.as).post('/sso/providers', { name: 'Corporate IdP', type: 'oidc', issuer: idp.issuer, clientId: 'client-1', clientSecret: SECRET, ...fields });
  expect(res.status).toBe(201);
  return res.body;
}

async function auditRows(resourceId: string) {
  return (await db.query(`select action, result, changes, details from audit_log where resource_id = $1 order by seq`, [resourceId])).rows;
}

const expectNoSecret = (body: unknown) => {
  const text = JSON.stringify(body);
  expect(text).not.toContain(SECRET);
  expect(text).not.toContain('"clientSecret"');
};

describe('presets', () => {
  test('nine presets, by kind of IdP, with scopes and attribute mappings', async () => {
    const { manager } = await orgWithManager();
    const res = await rest(app, manager.as).get('/sso/presets');
    expect(res.status).toBe(200);
    expect(res.body.data.map((p: { id: string; type: string }) => `${p.id}:${p.type}`)).toEqual([
      'cloud_directory_oidc:oidc',
      'workforce_identity_oidc:oidc',
      'workspace_suite_oidc:oidc',
      'identity_saas_oidc:oidc',
      'cloud_directory_saml:saml',
      'workforce_identity_saml:saml',
      'one_login_saml:saml',
      'directory_federation_saml:saml',
      'workspace_suite_saml:saml',
    ]);
    const byId = Object.fromEntries(res.body.data.map((p: { id: string }) => [p.id, p]));
    expect(byId.cloud_directory_oidc).toMatchObject({ issuerTemplate: 'https://{idp_host}/{tenant}/v2.0', scopes: 'openid profile email', attributeMapping: { email: 'email', name: 'name' } });
    expect(byId.workforce_identity_oidc).toMatchObject({ scopes: 'openid profile email groups', attributeMapping: { groups: 'groups' } });
    expect(byId.directory_federation_saml).toMatchObject({ ssoUrlTemplate: 'https://{adfs-server}/adfs/ls', scopes: null, issuerTemplate: null });
    expect(byId.workspace_suite_saml.ssoUrlTemplate).toBe('https://{idp_host}/o/saml2/idp?idpid={idpId}');
    expect((await rest(app).get('/sso/presets')).status).toBe(401);
  });

  test('a preset pre-fills scopes and the attribute mapping', async () => {
    const { manager } = await orgWithManager();
    const p = await createOidc(manager, { preset: 'workforce_identity_oidc', issuer: undefined });
    expect(p).toMatchObject({ preset: 'workforce_identity_oidc', scopes: 'openid profile email groups', attributeMapping: { email: 'email', name: 'name', groups: 'groups' } });
    const bad = await rest(app, manager.as).post('/sso/providers', { name: 'x', type: 'oidc', preset: 'cloud_directory_saml' });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('preset: cloud_directory_saml is a saml preset');
    expect((await rest(app, manager.as).post('/sso/providers', { name: 'x', type: 'oidc', preset: 'nope' })).body.message).toBe('preset: unknown preset "nope"');
  });
});

describe('create', () => {
  test('an OIDC provider: inactive, discovered endpoints, defaults, secret encrypted and never returned', async () => {
    const { orgId, manager } = await orgWithManager();
    const p = await createOidc(manager);
    expect(p).toMatchObject({
      orgId,
      name: 'Corporate IdP',
      type: 'oidc',
      status: 'inactive',
      issuer: idp.issuer,
      clientId: 'client-1',
      hasClientSecret: true,
      authorizationUrl: `${idp.issuer}/auth`,
      tokenUrl: `${idp.issuer}/token`,
      userInfoUrl: `${idp.issuer}/me`,
      jwksUrl: `${idp.issuer}/jwks`,
      scopes: 'openid profile email',
      attributeMapping: { email: 'email', name: 'name' },
      autoProvision: true,
      enforceSSO: false,
      defaultRoleId: null,
      allowedDomains: null,
      createdBy: manager.user.id,
    });
    expectNoSecret(p);
    const stored = await db.query(`select client_secret from sso_provider where id = $1`, [p.id]);
    expect(stored.rows[0].client_secret).toMatch(/^v1:/);
    expect(stored.rows[0].client_secret).not.toContain(SECRET);
    expect(await auditRows(p.id)).toEqual([
      { action: 'sso.provider.create', result: 'success', changes: [], details: { name: 'Corporate IdP', type: 'oidc', status: 'inactive' } },
    ]);
  });

  test('a failed discovery still creates the provider, without endpoints; given URLs win over discovered ones', async () => {
    const { manager } = await orgWithManager();
    const failed = await createOidc(manager, { issuer: 'https://127.0.0.1:1' });
    expect(failed).toMatchObject({ status: 'inactive', authorizationUrl: null, tokenUrl: null, jwksUrl: null });
    const explicit = await createOidc(manager, { authorizationUrl: 'https://login.example.test/authorize' });
    expect(explicit).toMatchObject({ authorizationUrl: 'https://login.example.test/authorize', tokenUrl: `${idp.issuer}/token` });
  });

  test('a SAML provider from its fields (certificate without PEM header lines) or from IdP metadata', async () => {
    const { manager } = await orgWithManager();
    const bare = samlIdp.certificate.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
    const fromFields = await rest(app, manager.as).post('/sso/providers', {
      name: 'SAML',
      type: 'saml',
      entityId: samlIdp.entityId,
      ssoUrl: samlIdp.ssoUrl,
      certificate: bare,
      allowIdpInitiated: true,
      forceAuthn: true,
      nameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
    });
    expect(fromFields.status).toBe(201);
    expect(fromFields.body).toMatchObject({ type: 'saml', status: 'inactive', entityId: samlIdp.entityId, ssoUrl: samlIdp.ssoUrl, allowIdpInitiated: true, forceAuthn: true, scopes: null, attributeMapping: { email: 'email', name: 'name' } });
    expect(fromFields.body.certificate).toMatch(/^-----BEGIN CERTIFICATE-----\n/);

    const fromMetadata = await rest(app, manager.as).post('/sso/providers', { name: 'SAML', type: 'saml', metadataXml: samlIdp.metadataXml });
    expect(fromMetadata.body).toMatchObject({ entityId: samlIdp.entityId, ssoUrl: samlIdp.ssoUrl, certificate: fromFields.body.certificate, allowIdpInitiated: false, forceAuthn: false });

    // Values read from metadata get the field rules too: an over-long SSO URL is a 400, not a database error.
    const longUrl = `${samlIdp.ssoUrl}?${'x'.repeat(600)}`;
    const tooLong = await rest(app, manager.as).post('/sso/providers', { name: 'SAML', type: 'saml', metadataXml: samlIdp.metadataXml.split(samlIdp.ssoUrl).join(longUrl) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.code).toBe('VALIDATION_ERROR');
  });

  test.each<[string, Record<string, unknown>, string]>([
    ['empty name', { name: '' }, 'name: Too small: expected string to have >=1 characters'],
    ['long name', { name: 'x'.repeat(256) }, 'name: Too big: expected string to have <=255 characters'],
    ['http issuer', { issuer: 'http://idp.example.test' }, 'issuer: must be an https URL'],
    ['long issuer', { issuer: `https://idp.example.test/${'x'.repeat(480)}` }, 'issuer: Too big: expected string to have <=500 characters'],
    ['long client id', { clientId: 'x'.repeat(256) }, 'clientId: Too big: expected string to have <=255 characters'],
    ['long token URL', { tokenUrl: `https://idp.example.test/${'x'.repeat(480)}` }, 'tokenUrl: Too big: expected string to have <=500 characters'],
    ['scopes without openid', { scopes: 'profile email' }, 'scopes: must include openid'],
    ['long scopes', { scopes: `openid ${'x'.repeat(500)}` }, 'scopes: Too big: expected string to have <=500 characters'],
    ['long allowed domains', { allowedDomains: 'a.example,'.repeat(101) }, 'allowedDomains: Too big: expected string to have <=1000 characters'],
    ['bad allowed domain', { allowedDomains: 'corp.test, not a domain' }, 'allowedDomains: "not a domain" is not a domain name'],
    ['mapping without email', { attributeMapping: { name: 'name' } }, 'attributeMapping.email: Invalid input: expected string, received undefined'],
    ['server-set status', { status: 'active' }, 'Unrecognized key: "status"'],
    ['SAML field on OIDC', { entityId: 'urn:x' }, 'entityId: does not apply to oidc providers'],
    ['unknown type', { type: 'ldap' }, 'type: Invalid option: expected one of "oidc"|"saml"'],
    ['partner role as default', { defaultRoleId: systemRole('Partner Admin') }, 'defaultRoleId: must be an organization-scoped role of the organization'],
    ['unknown role as default', { defaultRoleId: randomUUID() }, 'defaultRoleId: must be an organization-scoped role of the organization'],
  ])('400 for %s', async (_name, fields, message) => {
    const { manager } = await orgWithManager();
    const res = await rest(app, manager.as).post('/sso/providers', { name: 'x', type: 'oidc', ...fields });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'VALIDATION_ERROR', message });
  });

  test('400 for an invalid certificate, bad metadata, or OIDC fields on a SAML provider', async () => {
    const { manager } = await orgWithManager();
    const post = (fields: Record<string, unknown>) => rest(app, manager.as).post('/sso/providers', { name: 'x', type: 'saml', ...fields });
    expect((await post({ certificate: 'not a certificate!' })).body.message).toBe('certificate: certificate is neither PEM nor base64');
    expect((await post({ certificate: 'QUJD' })).body.message).toBe('certificate: certificate is not a valid X.509 certificate');
    expect((await post({ metadataXml: '<nope/>' })).body.message).toMatch(/^metadataXml: /);
    expect((await post({ clientSecret: 'x' })).body.message).toBe('clientSecret: does not apply to saml providers');
  });

  test("another organization's custom role is not a valid default role", async () => {
    const { manager } = await orgWithManager();
    const foreign = await buildRole(app, { scope: 'organization', orgId: (await buildOrg(app)).id, permissions: ['devices:read'] });
    const res = await rest(app, manager.as).post('/sso/providers', { name: 'x', type: 'oidc', defaultRoleId: foreign.id });
    expect(res.status).toBe(400);
  });
});

describe('access', () => {
  test('writes need MFA; reads do not', async () => {
    const { orgId, manager } = await orgWithManager();
    const p = await createOidc(manager);
    const noMfa = await buildUser(app, { orgId, can: SSO_MANAGER, mfa: false });
    const as = rest(app, noMfa.as);
    for (const res of [
      await as.post('/sso/providers', { name: 'x', type: 'oidc' }),
      await as.patch(`/sso/providers/${p.id}`, { name: 'y' }),
      await as.delete(`/sso/providers/${p.id}`),
      await as.post(`/sso/providers/${p.id}/status`, { status: 'active' }),
      await as.post(`/sso/providers/${p.id}/test`),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('MFA_REQUIRED');
    }
    expect((await as.get(`/sso/providers/${p.id}`)).status).toBe(200);
    expect((await as.get('/sso/providers')).body.data).toHaveLength(1);
  });

  test('writes need organizations:write', async () => {
    const { orgId, manager } = await orgWithManager();
    const p = await createOidc(manager);
    const viewer = await buildUser(app, { orgId, role: 'Organization Viewer' });
    expect((await rest(app, viewer.as).patch(`/sso/providers/${p.id}`, { name: 'y' })).body.code).toBe('FORBIDDEN');
    expect((await rest(app, viewer.as).get(`/sso/providers/${p.id}`)).status).toBe(200);
  });

  test("another organization's provider is not found, over REST and GraphQL", async () => {
    const a = await orgWithManager();
    const b = await orgWithManager();
    const p = await createOidc(a.manager);
    const as = rest(app, b.manager.as);
    for (const res of [
      await as.get(`/sso/providers/${p.id}`),
      await as.patch(`/sso/providers/${p.id}`, { name: 'mine' }),
      await as.delete(`/sso/providers/${p.id}`),
      await as.post(`/sso/providers/${p.id}/status`, { status: 'active' }),
      await as.post(`/sso/providers/${p.id}/test`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ code: 'NOT_FOUND', message: 'SSO provider not found' });
    }
    expect((await as.get(`/sso/providers?orgId=${a.orgId}`)).status).toBe(404);
    expect((await as.get('/sso/providers')).body.data).toEqual([]);
    const res = await gql(app, b.manager.as, `query($id: ID!) { ssoProvider(id: $id) { id } }`, { id: p.id });
    expect(res.body.errors?.[0].extensions?.code).toBe('NOT_FOUND');
    expect((await as.get('/sso/providers/not-a-uuid')).status).toBe(404);
    expect((await rest(app).get(`/sso/providers/${p.id}`)).status).toBe(401);
  });

  test('partner callers name the organization to create; without orgId the list covers their organizations', async () => {
    const partner = await buildPartner(app);
    const org = await buildOrg(app, { partnerId: partner.id });
    const partnerUser = await buildUser(app, { partnerId: partner.id, can: SSO_MANAGER });
    expect((await rest(app, partnerUser.as).post('/sso/providers', { name: 'x', type: 'oidc' })).body.message).toBe('Organization context required');
    const created = await rest(app, partnerUser.as).post('/sso/providers', { orgId: org.id, name: 'x', type: 'oidc' });
    expect(created.status).toBe(201);
    const across = await rest(app, partnerUser.as).get('/sso/providers');
    expect(across.body.data.map((p: { id: string }) => p.id)).toEqual([created.body.id]);
    const list = await rest(app, partnerUser.as).get(`/sso/providers?orgId=${org.id}`);
    expect(list.body).toEqual({ data: [expect.objectContaining({ id: created.body.id })], pagination: { page: 1, limit: 100, total: 1 } });
  });
});

describe('update, status, delete, test', () => {
  test('PATCH records the changed field names only, re-discovers on a new issuer, and clears the secret', async () => {
    // setting the Viewer role as default grants it: the manager holds what it grants
    const { manager } = await orgWithManager([...SSO_MANAGER, ...permissionsOf('Organization Viewer')]);
    const p = await createOidc(manager, { issuer: undefined });
    expect(p.tokenUrl).toBeNull();
    const patched = await rest(app, manager.as).patch(`/sso/providers/${p.id}`, {
      issuer: idp.issuer,
      clientSecret: 'another-secret-value',
      enforceSSO: true,
      name: 'Corporate IdP',
      allowedDomains: ' Corp.Test ,example.com ',
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ issuer: idp.issuer, tokenUrl: `${idp.issuer}/token`, enforceSSO: true, allowedDomains: 'corp.test,example.com', hasClientSecret: true });
    expect(JSON.stringify(patched.body)).not.toContain('another-secret-value');
    const update = (await auditRows(p.id)).find((r) => r.action === 'sso.provider.update')!;
    expect(update.changes.sort()).toEqual(['allowedDomains', 'authorizationUrl', 'clientSecret', 'enforceSSO', 'issuer', 'jwksUrl', 'tokenUrl', 'userInfoUrl']);
    expect(JSON.stringify(update)).not.toContain('another-secret-value');

    const cleared = await rest(app, manager.as).patch(`/sso/providers/${p.id}`, { clientSecret: null, defaultRoleId: systemRole('Organization Viewer') });
    expect(cleared.body).toMatchObject({ hasClientSecret: false, defaultRoleId: systemRole('Organization Viewer') });
    expect((await rest(app, manager.as).patch(`/sso/providers/${p.id}`, { type: 'saml' })).status).toBe(400);
    expect((await rest(app, manager.as).patch(`/sso/providers/${p.id}`, { status: 'active' })).status).toBe(400);
  });

  test('one active provider per organization', async () => {
    const { manager } = await orgWithManager();
    const first = await createOidc(manager);
    const second = await createOidc(manager);
    const as = rest(app, manager.as);
    const activated = await as.post(`/sso/providers/${first.id}/status`, { status: 'active' });
    expect(activated.status).toBe(200);
    expect(activated.body.status).toBe('active');
    expectNoSecret(activated.body);
    const refused = await as.post(`/sso/providers/${second.id}/status`, { status: 'active' });
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({ code: 'CONFLICT', message: 'Another SSO provider is already active for this organization' });
    expect((await as.post(`/sso/providers/${second.id}/status`, { status: 'testing' })).body.status).toBe('testing');
    expect((await as.post(`/sso/providers/${first.id}/status`, { status: 'inactive' })).status).toBe(200);
    expect((await as.post(`/sso/providers/${second.id}/status`, { status: 'active' })).status).toBe(200);
    expect((await as.post(`/sso/providers/${second.id}/status`, { status: 'on' })).status).toBe(400);
    // Two activations at once: the database decides.
    await as.post(`/sso/providers/${second.id}/status`, { status: 'inactive' });
    const race = await Promise.all([as.post(`/sso/providers/${first.id}/status`, { status: 'active' }), as.post(`/sso/providers/${second.id}/status`, { status: 'active' })]);
    expect(race.map((r) => r.status).sort()).toEqual([200, 409]);
    const statusAudit = (await auditRows(first.id)).filter((r) => r.action === 'sso.provider.status.update');
    expect(statusAudit.slice(0, 2)).toEqual([
      { action: 'sso.provider.status.update', result: 'success', changes: ['status'], details: { from: 'inactive', to: 'active' } },
      { action: 'sso.provider.status.update', result: 'success', changes: ['status'], details: { from: 'active', to: 'inactive' } },
    ]);
  });

  test('DELETE removes the provider with its sessions and identity links', async () => {
    const { orgId, manager } = await orgWithManager();
    const p = await createOidc(manager);
    const member = await buildUser(app, { orgId, role: 'Organization Viewer' });
    await db.query(
      `insert into sso_session (id, created_at, updated_at, provider_id, state, nonce, code_verifier, redirect_path, expires_at)
       values (gen_random_uuid(), now(), now(), $1, $2, 'n', 'v', '/', now() + interval '10 minutes')`,
      [p.id, randomUUID()],
    );
    await db.query(
      `insert into sso_identity (id, created_at, updated_at, user_id, provider_id, external_id, email, profile)
       values (gen_random_uuid(), now(), now(), $1, $2, 'sub-1', $3, '{}')`,
      [member.user.id, p.id, member.user.email],
    );
    const res = await rest(app, manager.as).delete(`/sso/providers/${p.id}`);
    expect(res.status).toBe(204);
    for (const table of ['sso_provider', 'sso_session', 'sso_identity']) {
      const column = table === 'sso_provider' ? 'id' : 'provider_id';
      expect((await db.query(`select count(*)::int as n from ${table} where ${column} = $1`, [p.id])).rows[0].n).toBe(0);
    }
    expect((await auditRows(p.id)).at(-1)).toEqual({
      action: 'sso.provider.delete',
      result: 'success',
      changes: [],
      details: { name: 'Corporate IdP', type: 'oidc', identitiesRemoved: 1, sessionsRemoved: 1 },
    });
    expect((await rest(app, manager.as).get(`/sso/providers/${p.id}`)).status).toBe(404);
  });

  test('the test operation reports the discovered endpoints, or fails with OIDC discovery failed; both are audited', async () => {
    const { manager } = await orgWithManager();
    const p = await createOidc(manager);
    const ok = await rest(app, manager.as).post(`/sso/providers/${p.id}/test`);
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({
      success: true,
      type: 'oidc',
      endpoints: { issuer: idp.issuer, authorizationUrl: `${idp.issuer}/auth`, tokenUrl: `${idp.issuer}/token`, userInfoUrl: `${idp.issuer}/me`, jwksUrl: `${idp.issuer}/jwks` },
      saml: null,
    });
    expectNoSecret(ok.body);

    await rest(app, manager.as).patch(`/sso/providers/${p.id}`, { issuer: `${idp.issuer}/no-such-tenant` });
    const failed = await rest(app, manager.as).post(`/sso/providers/${p.id}/test`);
    expect(failed.status).toBe(400);
    expect(failed.body).toMatchObject({ code: 'VALIDATION_ERROR', message: 'OIDC discovery failed', details: { reason: expect.stringContaining('OIDC discovery failed') } });
    expect((await auditRows(p.id)).filter((r) => r.action === 'sso.provider.test').map((r) => [r.result, r.details.type])).toEqual([
      ['success', 'oidc'],
      ['failure', 'oidc'],
    ]);

    const noIssuer = await createOidc(manager, { issuer: undefined });
    expect((await rest(app, manager.as).post(`/sso/providers/${noIssuer.id}/test`)).body).toMatchObject({ message: 'Provider is not fully configured', details: { missing: ['issuer'] } });
  });

  test('the test operation checks a SAML configuration', async () => {
    const { manager } = await orgWithManager();
    const p = (await rest(app, manager.as).post('/sso/providers', { name: 'SAML', type: 'saml', metadataXml: samlIdp.metadataXml })).body;
    const ok = await rest(app, manager.as).post(`/sso/providers/${p.id}/test`);
    expect(ok.body).toEqual({ success: true, type: 'saml', endpoints: null, saml: { entityId: samlIdp.entityId, ssoUrl: samlIdp.ssoUrl, certificateExpiresAt: expect.any(String) } });
    const empty = (await rest(app, manager.as).post('/sso/providers', { name: 'SAML', type: 'saml' })).body;
    expect((await rest(app, manager.as).post(`/sso/providers/${empty.id}/test`)).body.details).toEqual({ missing: ['entityId', 'ssoUrl', 'certificate'] });
  });
});

describe('enforced SSO and password login', () => {
  test('password login is refused with the generic 401 while an active provider enforces SSO', async () => {
    // the IdP would sign in the Viewer member: configuring it takes holding what the Viewer holds
    const { orgId, manager } = await orgWithManager([...SSO_MANAGER, ...permissionsOf('Organization Viewer')]);
    const member = await buildUser(app, { orgId, role: 'Organization Viewer' });
    const p = await createOidc(manager, { enforceSSO: true });
    const loginAs = () => rest(app).post('/auth/login', { email: member.user.email, password: member.password });

    expect((await loginAs()).status).toBe(200); // inactive provider: nothing enforced
    await rest(app, manager.as).post(`/sso/providers/${p.id}/status`, { status: 'active' });
    const refused = await loginAs();
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ code: 'UNAUTHENTICATED', message: 'Invalid email or password' });
    expect((await rest(app).get(`/sso/check/${orgId}`)).body.enforceSSO).toBe(true);

    await rest(app, manager.as).patch(`/sso/providers/${p.id}`, { enforceSSO: false });
    expect((await loginAs()).status).toBe(200);
  });
});

describe('GraphQL', () => {
  const FIELDS = 'id orgId name type status hasClientSecret issuer tokenUrl scopes attributeMapping { email name groups } enforceSSO';

  test('presets, create, list, get, update, status, test, check, delete; never the secret', async () => {
    const { orgId, manager } = await orgWithManager();
    const presets = await gql(app, manager.as, `{ ssoPresets { id type scopes attributeMapping { email } } }`);
    expect(presets.body.data.ssoPresets).toHaveLength(9);

    const created = await gql(app, manager.as, `mutation($input: CreateSsoProviderInput!) { createSsoProvider(input: $input) { ${FIELDS} } }`, {
      input: { name: 'GQL IdP', type: 'oidc', issuer: idp.issuer, clientId: 'c', clientSecret: SECRET, preset: 'workforce_identity_oidc' },
    });
    expect(created.body.errors).toBeUndefined();
    const p = created.body.data.createSsoProvider;
    expect(p).toMatchObject({ orgId, status: 'inactive', hasClientSecret: true, tokenUrl: `${idp.issuer}/token`, scopes: 'openid profile email groups', attributeMapping: { groups: 'groups' } });

    const responses = [created.body];
    responses.push((await gql(app, manager.as, `query($orgId: ID) { ssoProviders(orgId: $orgId) { data { ${FIELDS} } pagination { total } } }`, { orgId })).body);
    expect(responses[1].data.ssoProviders.pagination.total).toBe(1);
    responses.push((await gql(app, manager.as, `query($id: ID!) { ssoProvider(id: $id) { ${FIELDS} } }`, { id: p.id })).body);
    const updated = await gql(app, manager.as, `mutation($id: ID!, $input: UpdateSsoProviderInput!) { updateSsoProvider(id: $id, input: $input) { ${FIELDS} } }`, {
      id: p.id,
      input: { enforceSSO: true, attributeMapping: { email: 'mail', name: 'displayName', groups: null } },
    });
    expect(updated.body.data.updateSsoProvider).toMatchObject({ enforceSSO: true, attributeMapping: { email: 'mail', name: 'displayName', groups: null } });
    responses.push(updated.body);
    const status = await gql(app, manager.as, `mutation($id: ID!) { setSsoProviderStatus(id: $id, status: active) { ${FIELDS} } }`, { id: p.id });
    expect(status.body.data.setSsoProviderStatus.status).toBe('active');
    responses.push(status.body);
    const tested = await gql(app, manager.as, `mutation($id: ID!) { testSsoProvider(id: $id) { success type endpoints { tokenUrl } saml { entityId } } }`, { id: p.id });
    expect(tested.body.data.testSsoProvider).toEqual({ success: true, type: 'oidc', endpoints: { tokenUrl: `${idp.issuer}/token` }, saml: null });
    responses.push(tested.body);
    for (const body of responses) expectNoSecret(body);

    const check = await gql(app, null, `query($orgId: ID!) { ssoCheck(orgId: $orgId) { ssoEnabled enforceSSO loginUrl provider { id name type } } }`, { orgId });
    expect(check.body.data.ssoCheck).toEqual({ ssoEnabled: true, enforceSSO: true, loginUrl: `/api/v1/sso/login/${orgId}`, provider: { id: p.id, name: 'GQL IdP', type: 'oidc' } });
    const off = await gql(app, null, `query($orgId: ID!) { ssoCheck(orgId: $orgId) { ssoEnabled enforceSSO loginUrl provider { id } } }`, { orgId: randomUUID() });
    expect(off.body.data.ssoCheck).toEqual({ ssoEnabled: false, enforceSSO: null, loginUrl: null, provider: null });

    const noMfa = await buildUser(app, { orgId, can: ['organizations:write'], mfa: false });
    const denied = await gql(app, noMfa.as, `mutation($id: ID!) { deleteSsoProvider(id: $id) }`, { id: p.id });
    expect(denied.body.errors?.[0].extensions?.code).toBe('MFA_REQUIRED');
    const deleted = await gql(app, manager.as, `mutation($id: ID!) { deleteSsoProvider(id: $id) }`, { id: p.id });
    expect(deleted.body.data.deleteSsoProvider).toBe(true);
    expect((await auditRows(p.id)).map((r) => r.action)).toEqual([
      'sso.provider.create',
      'sso.provider.update',
      'sso.provider.status.update',
      'sso.provider.test',
      'sso.provider.delete',
    ]);
  });
});

describe('default role of provisioned users', () => {
  test('a caller sets only a default role it could grant itself', async () => {
    const org = await buildOrg(app);
    const ssoManager = await buildRole(app, { scope: 'organization', orgId: org.id, permissions: ['organizations:read', 'organizations:write'] });
    const manager = await buildUser(app, { orgId: org.id, role: ssoManager.id });
    const as = rest(app, manager.as);
    const escalate = await as.post('/sso/providers', { name: 'x', type: 'oidc', defaultRoleId: systemRole('Organization Admin') });
    expect(escalate.status).toBe(403);
    expect(escalate.body).toMatchObject({ code: 'FORBIDDEN', message: expect.stringMatching(/^You cannot grant permissions you do not hold: /) });
    expect((await db.query(`select 1 from sso_provider where org_id = $1`, [org.id])).rowCount).toBe(0);

    const created = await as.post('/sso/providers', { name: 'x', type: 'oidc', defaultRoleId: ssoManager.id });
    expect(created.status).toBe(201);
    const patched = await as.patch(`/sso/providers/${created.body.id}`, { defaultRoleId: systemRole('Organization Admin') });
    expect(patched.status).toBe(403);
    expect((await as.get(`/sso/providers/${created.body.id}`)).body.defaultRoleId).toBe(ssoManager.id);
  });
});

describe('who may configure the sign-in of an organization', () => {
  test('a role that cannot grant what the organization’s members hold cannot create, change or switch on their IdP', async () => {
    const org = await buildOrg(app);
    const ssoManager = await buildRole(app, { scope: 'organization', orgId: org.id, permissions: ['organizations:read', 'organizations:write'] });
    const manager = await buildUser(app, { orgId: org.id, role: ssoManager.id });
    const as = rest(app, manager.as);
    const created = await as.post('/sso/providers', { name: 'x', type: 'oidc' });
    expect(created.status).toBe(201);

    // an Organization Admin joins: an IdP the manager controls would sign in as that admin
    const admin = await buildUser(app, { orgId: org.id, role: 'Organization Admin' });
    const refusal = { status: 403, body: { code: 'FORBIDDEN', message: expect.stringMatching(/^An identity provider signs in the organization's members/) } };
    expect(await as.post('/sso/providers', { name: 'y', type: 'oidc' })).toMatchObject(refusal);
    expect(await as.patch(`/sso/providers/${created.body.id}`, { issuer: null })).toMatchObject(refusal);
    expect(await as.post(`/sso/providers/${created.body.id}/status`, { status: 'active' })).toMatchObject(refusal);
    expect((await as.post(`/sso/providers/${created.body.id}/status`, { status: 'inactive' })).status).toBe(200);
    expect((await rest(app, admin.as).patch(`/sso/providers/${created.body.id}`, { name: 'by the admin' })).status).toBe(200);
  });
});

describe('IdP URLs the browser is sent to', () => {
  test('an http authorizationUrl or ssoUrl is refused, typed or from SAML metadata; loopback http passes with ALLOW_PRIVATE_NETWORK_TARGETS', async () => {
    const { manager } = await orgWithManager();
    const as = rest(app, manager.as);
    const typed = await as.post('/sso/providers', { name: 'x', type: 'oidc', authorizationUrl: 'http://login.example.test/authorize' });
    expect(typed.status).toBe(400);
    expect(typed.body).toEqual({ code: 'VALIDATION_ERROR', message: 'authorizationUrl: must be an https URL' });
    const p = await createOidc(manager);
    expect((await as.patch(`/sso/providers/${p.id}`, { authorizationUrl: 'http://login.example.test/authorize' })).body.message).toBe('authorizationUrl: must be an https URL');
    expect((await as.post('/sso/providers', { name: 'x', type: 'saml', ssoUrl: 'http://idp.example.test/sso' })).body.message).toBe('ssoUrl: must be an https URL');
    const fromMetadata = await as.post('/sso/providers', { name: 'x', type: 'saml', metadataXml: samlIdp.metadataXml.split(samlIdp.ssoUrl).join('http://idp.example.test/sso') });
    expect(fromMetadata.body).toEqual({ code: 'VALIDATION_ERROR', message: 'ssoUrl: must be an https URL' });

    const local = await as.post('/sso/providers', { name: 'x', type: 'oidc', authorizationUrl: 'http://127.0.0.1:8080/authorize' });
    expect(local.status).toBe(201);
    expect(local.body.authorizationUrl).toBe('http://127.0.0.1:8080/authorize');
  });

  test('a discovery document naming an http authorization endpoint is not used', async () => {
    const receiver = await startHttpsReceiver();
    try {
      const issuer = receiver.url('').replace(/\/$/, '');
      receiver.script('/.well-known/openid-configuration', [
        {
          status: 200,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            issuer,
            authorization_endpoint: 'http://login.example.test/authorize',
            token_endpoint: `${issuer}/token`,
            jwks_uri: `${issuer}/jwks`,
            response_types_supported: ['code'],
            subject_types_supported: ['public'],
            id_token_signing_alg_values_supported: ['RS256'],
          }),
        },
      ]);
      const { manager } = await orgWithManager();
      const p = await createOidc(manager, { issuer });
      expect(receiver.to('/.well-known/openid-configuration')).toHaveLength(1);
      expect(p).toMatchObject({ issuer, authorizationUrl: null, tokenUrl: null, jwksUrl: null });
    } finally {
      await receiver.close();
    }
  });
});
