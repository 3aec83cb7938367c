// SAML login end to end: the service sends a signed AuthnRequest, a test IdP (samlify) signs real responses,
// including tampered ones, and the browser posts them to the ACS.
import { randomUUID, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { Permission } from '../src/auth/permissions.js';
import { freePort } from '../src/db/embedded.js';
import { createTestApp, type TestApp } from './support/app.js';
import { Browser, errorOf, ssoCode } from './support/browser.js';
import { rest } from './support/clients.js';
import { addMembership, buildOrg, buildUser, permissionsOf, systemRole } from './support/factories.js';
import { createSamlIdp, type BuildResponseInput, type TestAuthnRequest } from './support/saml-idp.js';

const URI = {
  email: 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress',
  givenName: 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/givenname',
  surname: 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/surname',
  groups: 'http://schemas.microsoft.com/ws/2008/06/identity/claims/groups',
};
const MINUTE = 60_000;

let app: TestApp;
let db: pg.Client;
let publicUrl: string;
const idp = createSamlIdp();

beforeAll(async () => {
  const port = await freePort();
  publicUrl = `http://127.0.0.1:${port}`;
  app = await createTestApp({ env: { PORT: String(port), PUBLIC_URL: publicUrl, SSO_RATE_LIMIT_PER_MINUTE: '100000' } });
  db = new pg.Client({ connectionString: app.databaseUrl });
  await db.connect();
});

afterAll(async () => {
  await db.end();
  await app.stop();
});

const acsUrl = () => `${publicUrl}/api/v1/sso/saml/acs`;
const spEntityId = () => `${publicUrl}/api/v1/sso/saml/metadata`;
const isIdp = (location: string) => location.startsWith(idp.ssoUrl);
const isDashboard = (location: string) => location.startsWith(publicUrl) && !location.startsWith(`${publicUrl}/api/`);

/** The SP signing certificate published in the metadata, as PEM. */
async function spCertificate(): Promise<string> {
  const xml = (await rest(app).get('/sso/saml/metadata')).body as string;
  const der = Buffer.from(/<(?:ds:)?X509Certificate>([^<]+)</.exec(xml)![1], 'base64');
  return new X509Certificate(der).toString();
}

/** Configuring a provider whose default role is the Viewer takes holding what the Viewer holds. */
const VIEWER_DEFAULT_CONFIGURER: Permission[] = [...permissionsOf('Organization Viewer'), 'organizations:write'];

/** An organization with an active SAML provider configured from the IdP's metadata. */
async function setup(fields: Record<string, unknown> = {}): Promise<{ orgId: string; providerId: string }> {
  const org = await buildOrg(app);
  const admin = await buildUser(app, { orgId: org.id, can: VIEWER_DEFAULT_CONFIGURER });
  const created = await rest(app, admin.as).post('/sso/providers', {
    name: 'SAML IdP',
    type: 'saml',
    metadataXml: idp.metadataXml,
    defaultRoleId: systemRole('Organization Viewer'),
    ...fields,
  });
  expect(created.status).toBe(201);
  expect((await rest(app, admin.as).post(`/sso/providers/${created.body.id}/status`, { status: 'active' })).status).toBe(200);
  return { orgId: org.id, providerId: created.body.id };
}

/** `GET /sso/login` in `browser`: the AuthnRequest the IdP receives, its signature checked with the SP metadata certificate. */
async function startLogin(browser: Browser, orgId: string, query = ''): Promise<TestAuthnRequest> {
  const start = await browser.get(`${app.url}/api/v1/sso/login/${orgId}${query}`, { stopAt: isIdp });
  expect(start.status).toBe(302);
  return idp.readAuthnRequest(start.location!, await spCertificate());
}

function response(request: { id: string } | null, overrides: Partial<BuildResponseInput> = {}): string {
  return idp.buildResponse({
    inResponseTo: request?.id ?? null,
    audience: spEntityId(),
    recipient: acsUrl(),
    nameId: `saml-${randomUUID()}@corp.test`,
    ...overrides,
  });
}

async function postToAcs(browser: Browser, samlResponse: string, relayState: string | null): Promise<string> {
  const page = await browser.post(`${app.url}/api/v1/sso/saml/acs`, { SAMLResponse: samlResponse, ...(relayState === null ? {} : { RelayState: relayState }) }, { stopAt: isDashboard });
  expect(page.status).toBe(303);
  return page.location!;
}

/** A complete SP-initiated login answered with `overrides`; returns the service's redirect target. */
async function loginWith(orgId: string, overrides: Partial<BuildResponseInput> = {}): Promise<string> {
  const browser = new Browser();
  const request = await startLogin(browser, orgId);
  return postToAcs(browser, response(request, overrides), request.relayState);
}

describe('SP metadata', () => {
  test('entity id, ACS URL, NameID format, signed assertions and the generated SP certificate', async () => {
    const res = await fetch(`${app.url}/api/v1/sso/saml/metadata`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/samlmetadata\+xml/);
    const xml = await res.text();
    expect(xml).toContain(`entityID="${spEntityId()}"`);
    expect(xml).toMatch(new RegExp(`<(\\w+:)?AssertionConsumerService[^>]*Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"[^>]*Location="${acsUrl()}"`));
    expect(xml).toContain('urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress');
    expect(xml).toContain('WantAssertionsSigned="true"');

    const certFile = path.join(app.server.runtime.config.dataDir, 'saml-sp.crt');
    const keyFile = path.join(app.server.runtime.config.dataDir, 'saml-sp.key');
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(new X509Certificate(await spCertificate()).fingerprint256).toBe(new X509Certificate(fs.readFileSync(certFile)).fingerprint256);
  });
});

describe('login', () => {
  test('happy path with auto-provisioning: AuthnRequest, signed response, ACS, #ssoCode, exchange', async () => {
    const { orgId, providerId } = await setup({ forceAuthn: true, nameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent' });
    const browser = new Browser();
    const request = await startLogin(browser, orgId, '?redirect=%2Falerts');
    expect(request).toMatchObject({ acsUrl: acsUrl(), forceAuthn: true, nameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent' });
    expect(Buffer.byteLength(request.relayState!)).toBeLessThanOrEqual(80);
    expect((await db.query(`select redirect_path from saml_request where request_id = $1`, [request.id])).rows).toEqual([{ redirect_path: '/alerts' }]);

    const email = `New.Person-${randomUUID()}@Corp.test`;
    const samlResponse = response(request, {
      nameId: `persistent-${randomUUID()}`,
      attributes: { [URI.email]: email, [URI.givenName]: 'New', [URI.surname]: 'Person', [URI.groups]: ['staff', 'ops'] },
    });
    const target = await postToAcs(browser, samlResponse, request.relayState);
    expect(target).toMatch(new RegExp(`^${publicUrl}/alerts#ssoCode=[\\w-]{43}$`));

    const tokens = await rest(app).post('/sso/exchange', { code: ssoCode(target) });
    expect(tokens.status).toBe(200);
    const me = await rest(app, { token: tokens.body.accessToken }).get('/users/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ email: email.toLowerCase(), name: 'New Person' });

    const membership = await db.query(`select org_id, role_id from membership where user_id = $1`, [me.body.id]);
    expect(membership.rows).toEqual([{ org_id: orgId, role_id: systemRole('Organization Viewer') }]);
    const link = await db.query(`select external_id, profile, access_token from sso_identity where provider_id = $1`, [providerId]);
    expect(link.rows).toHaveLength(1);
    expect(link.rows[0].external_id).toMatch(/^persistent-/);
    expect(link.rows[0].profile).toMatchObject({ nameId: link.rows[0].external_id, groups: ['staff', 'ops'] });
    expect(link.rows[0].access_token).toBeNull();
    // The request id is spent.
    expect((await db.query(`select 1 from saml_request where request_id = $1`, [request.id])).rowCount).toBe(0);
  });

  test('an existing member signs in with an email-shaped NameID', async () => {
    const { orgId } = await setup({ autoProvision: false });
    const member = await buildUser(app, { orgId, role: 'Organization Viewer', email: `member-${randomUUID()}@corp.test` });
    const target = await loginWith(orgId, { nameId: member.user.email.toUpperCase() });
    const tokens = await rest(app).post('/sso/exchange', { code: ssoCode(target) });
    expect((await rest(app, { token: tokens.body.accessToken }).get('/users/me')).body.id).toBe(member.user.id);
  });

  test('account mapping refusals apply to SAML too', async () => {
    const { orgId } = await setup({ autoProvision: false, allowedDomains: 'corp.test' });
    expect(errorOf(await loginWith(orgId, { nameId: 'someone@other.test' }))).toBe('domain_not_allowed');
    expect(errorOf(await loginWith(orgId))).toBe('user_not_found');
  });
});

describe('rejected responses', () => {
  let orgId: string;
  beforeAll(async () => {
    ({ orgId } = await setup());
  });

  test.each<[string, Partial<BuildResponseInput>]>([
    ['unsigned', { signing: 'none' }],
    ['signed with another key', { signWith: 'other-key' }],
    ['wrapped: an unsigned assertion before the signed one', { tamper: 'wrap-extra-assertion' }],
    ['wrapped: the signature moved to an attacker assertion', { tamper: 'move-signature' }],
    ['edited after signing', { tamper: 'edit-after-signing' }],
    ['signed with SHA-1', { digest: 'sha1' }],
    ['expired', { notBefore: new Date(Date.now() - 20 * MINUTE), notOnOrAfter: new Date(Date.now() - 10 * MINUTE) }],
    ['for another audience', { audience: 'https://other-sp.example/metadata' }],
    ['for another recipient', { recipient: 'https://other-sp.example/acs' }],
    ['an answer to an unknown request', { inResponseTo: '_unknown-request' }],
    ['unsolicited, with the RelayState of a pending request', { inResponseTo: null }],
  ])('%s → sso_error', async (_name, overrides) => {
    expect(await loginWith(orgId, overrides)).toBe(`${publicUrl}/login?error=sso_error`);
  });

  test('a replayed POST finds its request spent; a replayed assertion id is refused for a new request', async () => {
    const browser = new Browser();
    const request = await startLogin(browser, orgId);
    const assertionId = `_${randomUUID()}`;
    const samlResponse = response(request, { assertionId });
    expect(await postToAcs(browser, samlResponse, request.relayState)).toContain('#ssoCode=');
    expect(errorOf(await postToAcs(browser, samlResponse, request.relayState))).toBe('session_expired');

    expect(errorOf(await loginWith(orgId, { assertionId }))).toBe('sso_error');
  });

  test('an expired request is refused', async () => {
    const browser = new Browser();
    const request = await startLogin(browser, orgId);
    await db.query(`update saml_request set expires_at = now() - interval '1 second' where request_id = $1`, [request.id]);
    expect(errorOf(await postToAcs(browser, response(request), request.relayState))).toBe('session_expired');
  });

  test('a forged RelayState or a missing SAMLResponse is refused', async () => {
    const browser = new Browser();
    const request = await startLogin(browser, orgId);
    const forged = `${request.relayState!.split('.')[0]}.${'A'.repeat(43)}`;
    expect(errorOf(await postToAcs(browser, response(request), forged))).toBe('sso_error');
    const page = await browser.post(`${app.url}/api/v1/sso/saml/acs`, { RelayState: request.relayState! }, { stopAt: isDashboard });
    expect(errorOf(page.location!)).toBe('sso_error');
  });
});

describe('IdP-initiated login', () => {
  test('refused unless the provider allows it; then RelayState names the organization', async () => {
    const closed = await setup();
    expect(errorOf(await postToAcs(new Browser(), response(null), closed.orgId))).toBe('sso_error');

    const open = await setup({ allowIdpInitiated: true });
    const target = await postToAcs(new Browser(), response(null), open.orgId);
    expect(target).toMatch(new RegExp(`^${publicUrl}/#ssoCode=`));
    // Without RelayState the provider is unknown.
    expect(errorOf(await postToAcs(new Browser(), response(null), null))).toBe('sso_error');
  });
});

describe('browser binding when PUBLIC_URL is https', () => {
  // PUBLIC_URL names an https origin the server does not listen on: requests go to the http port directly.
  const httpsPublicUrl = 'https://sp.example.test';
  let secureApp: TestApp;
  beforeAll(async () => {
    secureApp = await createTestApp({ env: { PUBLIC_URL: httpsPublicUrl, SSO_RATE_LIMIT_PER_MINUTE: '100000' } });
  });
  afterAll(() => secureApp.stop());

  test('the ACS needs the SameSite=None cookie of the browser that started the login', async () => {
    const org = await buildOrg(secureApp);
    const admin = await buildUser(secureApp, { orgId: org.id, can: VIEWER_DEFAULT_CONFIGURER });
    const created = await rest(secureApp, admin.as).post('/sso/providers', { name: 'x', type: 'saml', metadataXml: idp.metadataXml, defaultRoleId: systemRole('Organization Viewer') });
    await rest(secureApp, admin.as).post(`/sso/providers/${created.body.id}/status`, { status: 'active' });

    const start = await fetch(`${secureApp.url}/api/v1/sso/login/${org.id}`, { redirect: 'manual' });
    const setCookie = start.headers.getSetCookie().find((c) => c.startsWith('service_saml_state='))!;
    expect(setCookie).toMatch(/; Path=\/api\/v1\/sso\/saml\/acs/);
    expect(setCookie).toMatch(/; HttpOnly/);
    expect(setCookie).toMatch(/; Secure/);
    expect(setCookie).toMatch(/; SameSite=None/);
    expect(setCookie).toMatch(/; Max-Age=600/);
    const request = idp.readAuthnRequest(start.headers.get('location')!);
    const samlResponse = idp.buildResponse({
      inResponseTo: request.id,
      audience: `${httpsPublicUrl}/api/v1/sso/saml/metadata`,
      recipient: `${httpsPublicUrl}/api/v1/sso/saml/acs`,
      nameId: `bound-${randomUUID()}@corp.test`,
    });
    const post = (cookie?: string) =>
      fetch(`${secureApp.url}/api/v1/sso/saml/acs`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
        body: new URLSearchParams({ SAMLResponse: samlResponse, RelayState: request.relayState! }),
      });

    expect((await post()).headers.get('location')).toBe(`${httpsPublicUrl}/login?error=session_expired`);
    const bound = await post(setCookie.split(';')[0]);
    expect(bound.headers.get('location')).toMatch(new RegExp(`^${httpsPublicUrl}/#ssoCode=`));
  });
});

describe('accounts the organization does not own', () => {
  test("another tenant's user is refused by email; linked while signed in, the same NameID signs them in", async () => {
    const { orgId, providerId } = await setup();
    const owner = await buildUser(app, { orgId: (await buildOrg(app)).id, role: 'Organization Viewer', email: `linker-${randomUUID()}@corp.test` });
    await addMembership(app, owner.user.id, { orgId, role: 'Organization Viewer' });
    const nameId = `persistent-${randomUUID()}`;
    const asOwner = { nameId, attributes: { [URI.email]: owner.user.email } };
    expect(errorOf(await loginWith(orgId, asOwner))).toBe('account_link_required');

    const started = await rest(app, owner.as).post(`/sso/link/${orgId}`);
    expect(started.status).toBe(200);
    const browser = new Browser();
    const opened = await browser.get(started.body.url.replace(publicUrl, app.url), { stopAt: isIdp });
    expect(opened.status).toBe(302);
    const request = idp.readAuthnRequest(opened.location!, await spCertificate());
    const target = await postToAcs(browser, response(request, asOwner), request.relayState);
    const tokens = await rest(app).post('/sso/exchange', { code: ssoCode(target) });
    expect((await rest(app, { token: tokens.body.accessToken }).get('/users/me')).body.id).toBe(owner.user.id);
    expect((await db.query(`select user_id, external_id from sso_identity where provider_id = $1`, [providerId])).rows).toEqual([{ user_id: owner.user.id, external_id: nameId }]);

    // The link URL started one AuthnRequest; opened again it starts none.
    const again = await new Browser().get(started.body.url.replace(publicUrl, app.url), { stopAt: (l) => isIdp(l) || isDashboard(l) });
    expect(again.location).toBe(`${publicUrl}/login?error=session_expired`);
    expect(ssoCode(await loginWith(orgId, asOwner))).not.toBe('');
  });
});

describe('SSO URL over plain http', () => {
  test('refused typed or read from metadata, loopback too while ALLOW_PRIVATE_NETWORK_TARGETS is off', async () => {
    const admin = await buildUser(app, { orgId: (await buildOrg(app)).id, can: ['organizations:write'] });
    const post = (fields: Record<string, unknown>) => rest(app, admin.as).post('/sso/providers', { name: 'x', type: 'saml', ...fields });
    for (const fields of [
      { ssoUrl: 'http://idp.test.example/sso' },
      { ssoUrl: 'http://127.0.0.1:8443/sso' },
      { metadataXml: idp.metadataXml.split(idp.ssoUrl).join('http://localhost:8443/sso') },
    ]) {
      const res = await post(fields);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ code: 'VALIDATION_ERROR', message: 'ssoUrl: must be an https URL' });
    }
  });
});
