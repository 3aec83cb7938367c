// SAML toolkit against a test IdP that signs real XML-DSig responses (test/support/saml-idp.ts). Every
// rejection test starts from an otherwise valid SP-initiated login, so it fails if its check goes missing.
import { inflateRawSync } from 'node:zlib';
import { validate as validateSamlSchema } from '@authenio/samlify-node-xmllint';
import {
  SAML_NAMEID_EMAIL,
  SamlValidationError,
  buildAuthnRequestRedirect,
  generateSpMetadata,
  mapSamlAttributes,
  normalizeCertificate,
  parseIdpMetadata,
  validateSamlResponse,
  type SamlIdpSettings,
  type SamlReplayStore,
  type SamlRequestStore,
  type SamlSpSettings,
} from '../src/auth/saml-toolkit.js';
import { createSamlIdp, createTestKeyPair, type BuildResponseInput } from './support/saml-idp.js';

class MemoryRequestStore implements SamlRequestStore {
  readonly pending = new Map<string, Date>();
  async save(requestId: string, expiresAt: Date): Promise<void> {
    this.pending.set(requestId, expiresAt);
  }
  async consume(requestId: string): Promise<boolean> {
    const expiresAt = this.pending.get(requestId);
    this.pending.delete(requestId);
    return expiresAt !== undefined && expiresAt.getTime() > Date.now();
  }
}

class MemoryReplayStore implements SamlReplayStore {
  readonly seen = new Map<string, Date>();
  async remember(assertionId: string, expiresAt: Date): Promise<boolean> {
    if (this.seen.has(assertionId)) return false;
    this.seen.set(assertionId, expiresAt);
    return true;
  }
}

const URI = {
  email: 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress',
  name: 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name',
  givenName: 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/givenname',
  surname: 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/surname',
  groups: 'http://schemas.microsoft.com/ws/2008/06/identity/claims/groups',
  mail: 'urn:oid:0.9.2342.19200300.100.1.3',
  oidGivenName: 'urn:oid:2.5.4.42',
  oidSurname: 'urn:oid:2.5.4.4',
  displayName: 'urn:oid:2.16.840.1.113730.3.1.241',
};
const MINUTE = 60_000;

const spKeys = createTestKeyPair('Test SP');
const sp: SamlSpSettings = {
  entityId: 'https://rmm.test.example/auth/saml/metadata',
  acsUrl: 'https://rmm.test.example/auth/saml/acs',
  privateKey: spKeys.privateKey,
  certificate: spKeys.certificate,
};
const idp = createSamlIdp();
const idpSettings: SamlIdpSettings = { entityId: idp.entityId, ssoUrl: idp.ssoUrl, certificate: idp.certificate };
const pemBody = (pem: string) => pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');

function authnRequestXml(redirectUrl: string): string {
  return inflateRawSync(Buffer.from(new URL(redirectUrl).searchParams.get('SAMLRequest')!, 'base64')).toString('utf8');
}

function freshStores() {
  return { requestStore: new MemoryRequestStore(), replayStore: new MemoryReplayStore() };
}

/** An SP-initiated login: the AuthnRequest id is pending in `stores.requestStore`. */
async function startLogin(stores: ReturnType<typeof freshStores>, spSettings = sp): Promise<string> {
  const { requestId } = await buildAuthnRequestRedirect(spSettings, idpSettings, { relayState: 'r1', requestStore: stores.requestStore });
  return requestId;
}

function response(input: Partial<BuildResponseInput> & Pick<BuildResponseInput, 'inResponseTo'>): string {
  return idp.buildResponse({ audience: sp.entityId, recipient: sp.acsUrl, nameId: 'alice@example.com', ...input });
}

async function expectRejected(validation: Promise<unknown>, reason: RegExp): Promise<void> {
  const error = await validation.then(() => null, (e: unknown) => e);
  expect(error).toBeInstanceOf(SamlValidationError);
  expect((error as Error).message).toMatch(reason);
}

/** Validates a response built for a fresh SP-initiated login with `input` applied. */
async function validateFresh(input: Partial<BuildResponseInput> = {}, settings = { sp, idp: idpSettings }) {
  const stores = freshStores();
  const requestId = await startLogin(stores, settings.sp);
  return validateSamlResponse(settings.sp, settings.idp, response({ inResponseTo: requestId, ...input }), stores);
}

describe('certificates and metadata', () => {
  test('normalizeCertificate accepts PEM, bare base64 and re-wrapped base64 alike', () => {
    const canonical = normalizeCertificate(idp.certificate);
    expect(canonical).toMatch(/^-----BEGIN CERTIFICATE-----\n([A-Za-z0-9+/=]{64}\n)+[A-Za-z0-9+/=]{1,64}\n-----END CERTIFICATE-----\n$/);
    const body = pemBody(idp.certificate);
    expect(normalizeCertificate(body)).toBe(canonical);
    expect(normalizeCertificate(`  ${body.match(/.{1,76}/g)!.join('\r\n  ')}\t\n`)).toBe(canonical);
    expect(() => normalizeCertificate('certificate: none')).toThrow(/neither PEM nor base64/);
    expect(() => normalizeCertificate(Buffer.from('hello world').toString('base64'))).toThrow(/not a valid X.509/);
    expect(() => normalizeCertificate(idp.certificate + spKeys.certificate)).toThrow(/exactly one certificate/);
  });

  test('IdP metadata round-trip: entity id, the HTTP-Redirect SSO location and the signing certificate', () => {
    expect(parseIdpMetadata(idp.metadataXml)).toEqual({
      entityId: idp.entityId,
      ssoUrl: idp.ssoUrl,
      certificate: normalizeCertificate(idp.certificate),
    });
    const inGroup = `<EntitiesDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata">${idp.metadataXml}</EntitiesDescriptor>`;
    expect(parseIdpMetadata(inGroup).entityId).toBe(idp.entityId);
  });

  test('IdP metadata without an HTTP-Redirect endpoint yields the HTTP-POST location', () => {
    const postOnly = idp.metadataXml.replace(/<SingleSignOnService Binding="[^"]*HTTP-Redirect"[^>]*>(<\/SingleSignOnService>)?/, '');
    expect(postOnly).not.toBe(idp.metadataXml);
    expect(parseIdpMetadata(postOnly).ssoUrl).toBe(`${idp.ssoUrl}/post`);
  });

  test('bad IdP metadata throws a clear error', () => {
    expect(() => parseIdpMetadata('<EntityDescriptor')).toThrow(/not well-formed XML/);
    expect(() => parseIdpMetadata('<html><body>login</body></html>')).toThrow(/not a SAML 2.0 EntityDescriptor/);
    expect(() => parseIdpMetadata(generateSpMetadata(sp))).toThrow(/exactly one identity provider, found 0/);
    const noCert = idp.metadataXml.replace(/<KeyDescriptor[\s\S]*<\/KeyDescriptor>/, '');
    expect(() => parseIdpMetadata(noCert)).toThrow(/no signing certificate/);
  });

  test('SP metadata: entityID, ACS (HTTP-POST), NameIDFormat, signing flags and the SP certificate', () => {
    const xml = generateSpMetadata(sp);
    expect(xml).toContain(`entityID="${sp.entityId}"`);
    expect(xml).toMatch(new RegExp(`<AssertionConsumerService [^>]*Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${sp.acsUrl}"`));
    expect(xml).toContain(`<NameIDFormat>${SAML_NAMEID_EMAIL}</NameIDFormat>`);
    expect(xml).toContain('WantAssertionsSigned="true"');
    expect(xml).toContain('AuthnRequestsSigned="true"');
    const signingKey = xml.match(/<KeyDescriptor use="signing">[\s\S]*?<ds:X509Certificate>([^<]+)<\/ds:X509Certificate>/);
    expect(signingKey?.[1].replace(/\s+/g, '')).toBe(pemBody(sp.certificate));
  });
});

describe('AuthnRequest (HTTP-Redirect)', () => {
  test('is signed with RSA-SHA256 by the SP key and its id is saved in the request store', async () => {
    const stores = freshStores();
    const before = Date.now();
    const { url, requestId } = await buildAuthnRequestRedirect(sp, idpSettings, {
      relayState: 'state-123', requestStore: stores.requestStore, ttlMs: 5 * MINUTE,
    });
    expect(url.startsWith(`${idp.ssoUrl}?SAMLRequest=`)).toBe(true);
    expect(new URL(url).searchParams.get('SigAlg')).toBe('http://www.w3.org/2001/04/xmldsig-more#rsa-sha256');
    expect(idp.readAuthnRequest(url, sp.certificate)).toEqual({
      id: requestId, acsUrl: sp.acsUrl, relayState: 'state-123', forceAuthn: false, nameIdFormat: SAML_NAMEID_EMAIL,
    });
    expect(() => idp.readAuthnRequest(url, idp.certificate)).toThrow(/does not verify/);
    expect(() => idp.readAuthnRequest(url.replace('state-123', 'state-124'), sp.certificate)).toThrow(/does not verify/);
    const expiresAt = stores.requestStore.pending.get(requestId)!.getTime();
    expect(expiresAt).toBeGreaterThanOrEqual(before + 5 * MINUTE);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 5 * MINUTE);
  });

  test('carries ForceAuthn when configured, the configured NameIDPolicy format and no RequestedAuthnContext', async () => {
    const format = 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent';
    const { url } = await buildAuthnRequestRedirect({ ...sp, forceAuthn: true, nameIdFormat: format }, idpSettings, {
      relayState: 'x', requestStore: new MemoryRequestStore(),
    });
    expect(idp.readAuthnRequest(url, sp.certificate)).toMatchObject({ forceAuthn: true, nameIdFormat: format });
    // an "exact PasswordProtectedTransport" request makes IdPs refuse users who signed in with MFA
    expect(authnRequestXml(url)).not.toContain('RequestedAuthnContext');
  });

  test('the signature covers the query octets as sent, whatever the RelayState holds', async () => {
    // querystring and URLSearchParams escape these characters differently
    const relayState = "/devices?id=1&q=a b (c)!~'*";
    const { url } = await buildAuthnRequestRedirect(sp, idpSettings, { relayState, requestStore: new MemoryRequestStore() });
    expect(idp.readAuthnRequest(url, sp.certificate).relayState).toBe(relayState);
  });

  test('keeps query parameters already present in the IdP SSO URL out of the signed part', async () => {
    const { url } = await buildAuthnRequestRedirect(sp, { ...idpSettings, ssoUrl: `${idp.ssoUrl}?tenant=acme` }, {
      relayState: 'x', requestStore: new MemoryRequestStore(),
    });
    expect(url.startsWith(`${idp.ssoUrl}?tenant=acme&SAMLRequest=`)).toBe(true);
    expect(idp.readAuthnRequest(url, sp.certificate).relayState).toBe('x');
  });

  test('refuses a RelayState over 80 bytes (SAML bindings limit)', async () => {
    const requestStore = new MemoryRequestStore();
    await expect(buildAuthnRequestRedirect(sp, idpSettings, { relayState: 'é'.repeat(41), requestStore })).rejects.toThrow(/80 bytes/);
    expect(requestStore.pending.size).toBe(0);
  });

  test('the AuthnRequest and the test IdP response are schema-valid SAML 2.0 (xmllint)', async () => {
    const { url, requestId } = await buildAuthnRequestRedirect(sp, idpSettings, { relayState: 'x', requestStore: new MemoryRequestStore() });
    const request = authnRequestXml(url);
    const signed = Buffer.from(response({ inResponseTo: requestId, signing: 'both', attributes: { [URI.email]: 'a@b.c' } }), 'base64');
    const bogus = request.replace('<samlp:NameIDPolicy', '<samlp:Bogus/><samlp:NameIDPolicy');
    // node-xmllint prints its exit status and schema errors through console
    const { log, error } = console;
    console.log = console.error = () => {};
    try {
      await expect(validateSamlSchema(request)).resolves.toBe('SUCCESS_VALIDATE_XML');
      await expect(validateSamlSchema(signed.toString('utf8'))).resolves.toBe('SUCCESS_VALIDATE_XML');
      await expect(validateSamlSchema(bogus)).rejects.toBe('ERR_EXCEPTION_VALIDATE_XML');
    } finally {
      Object.assign(console, { log, error });
    }
  });
});

describe('validateSamlResponse accepts', () => {
  test('a signed assertion and maps its attributes through the URI table', async () => {
    const stores = freshStores();
    const requestId = await startLogin(stores);
    const result = await validateSamlResponse(sp, idpSettings, response({
      inResponseTo: requestId,
      assertionId: '_assertion-1',
      attributes: {
        [URI.email]: 'Alice.Smith@example.com',
        [URI.name]: 'Alice Smith',
        [URI.givenName]: 'Alice',
        [URI.surname]: 'Smith',
        [URI.groups]: ['admins', 'technicians'],
      },
    }), stores);
    expect(result).toMatchObject({
      nameId: 'alice@example.com',
      nameIdFormat: SAML_NAMEID_EMAIL,
      inResponseTo: requestId,
      assertionId: '_assertion-1',
      attributes: { [URI.email]: 'Alice.Smith@example.com', [URI.groups]: ['admins', 'technicians'] },
    });
    expect(result.sessionIndex).toMatch(/^_/);
    expect(result.profile).toMatchObject({ issuer: idp.entityId, nameID: 'alice@example.com' });
    expect(Object.values(result.profile).some((v) => typeof v === 'function')).toBe(false);
    expect(result.profile).not.toHaveProperty('inResponseTo');
    expect(mapSamlAttributes(result)).toEqual({
      email: 'Alice.Smith@example.com', name: 'Alice Smith', firstName: 'Alice', lastName: 'Smith', groups: ['admins', 'technicians'],
    });
    expect(stores.replayStore.seen.has('_assertion-1')).toBe(true);
  });

  test('a signed response wrapping a signed assertion', async () => {
    await expect(validateFresh({ signing: 'both' })).resolves.toMatchObject({ nameId: 'alice@example.com' });
  });

  test('RSA-SHA512 signatures', async () => {
    await expect(validateFresh({ digest: 'sha512' })).resolves.toMatchObject({ nameId: 'alice@example.com' });
  });

  test('the IdP certificate given without PEM header lines', async () => {
    const settings = { sp, idp: { ...idpSettings, certificate: pemBody(idp.certificate) } };
    await expect(validateFresh({}, settings)).resolves.toMatchObject({ nameId: 'alice@example.com' });
  });

  test('an assertion that expired within the default clock skew (2 minutes)', async () => {
    await expect(validateFresh({ notOnOrAfter: new Date(Date.now() - MINUTE) })).resolves.toMatchObject({ nameId: 'alice@example.com' });
  });

  test('with a non-finite clockSkewMs, using the default skew instead', async () => {
    const settings = { sp: { ...sp, clockSkewMs: Number.NaN }, idp: idpSettings };
    await expect(validateFresh({ notOnOrAfter: new Date(Date.now() - MINUTE) }, settings)).resolves.toMatchObject({ nameId: 'alice@example.com' });
  });

  test('an IdP-initiated response (no InResponseTo) when allowIdpInitiated', async () => {
    const result = await validateSamlResponse(sp, { ...idpSettings, allowIdpInitiated: true }, response({ inResponseTo: null }), freshStores());
    expect(result.inResponseTo).toBeNull();
  });
});

describe('validateSamlResponse rejects', () => {
  test('an unsigned response', async () => {
    await expectRejected(validateFresh({ signing: 'none' }), /signature/i);
  });

  test('a signed response around an unsigned assertion', async () => {
    await expectRejected(validateFresh({ signing: 'response' }), /signature/i);
  });

  test('an assertion signed with another key (its certificate in KeyInfo)', async () => {
    await expectRejected(validateFresh({ signWith: 'other-key' }), /signature/i);
  });

  test('an RSA-SHA1 signature', async () => {
    await expectRejected(validateFresh({ digest: 'sha1' }), /signature algorithm .*rsa-sha1 is not accepted/);
  });

  test('an RSA-SHA256 signature over SHA-1 digests', async () => {
    await expectRejected(validateFresh({ digest: 'sha1', signatureAlgorithm: 'rsa-sha256' }), /digest algorithm .*sha1 is not accepted/);
  });

  test('signature wrapping: an extra unsigned assertion', async () => {
    await expectRejected(validateFresh({ tamper: 'wrap-extra-assertion' }), /multiple assertions/);
  });

  test('signature wrapping: the signature moved to an attacker assertion', async () => {
    await expectRejected(validateFresh({ tamper: 'move-signature' }), /Referenced node does not refer to it's parent/);
  });

  test('an assertion edited after signing', async () => {
    await expectRejected(validateFresh({ tamper: 'edit-after-signing' }), /Invalid signature/);
  });

  test('a response edited outside the assertion after signing, when the response is signed', async () => {
    await expectRejected(validateFresh({ signing: 'both', tamper: 'edit-response-after-signing' }), /Invalid document signature/);
  });

  test('an expired assertion', async () => {
    await expectRejected(
      validateFresh({ notBefore: new Date(Date.now() - 20 * MINUTE), notOnOrAfter: new Date(Date.now() - 10 * MINUTE) }),
      /expired/,
    );
  });

  test('an expired assertion even with a huge clockSkewMs (capped at 5 minutes)', async () => {
    const lenient = { ...sp, clockSkewMs: 60 * MINUTE };
    await expectRejected(
      validateFresh({ notBefore: new Date(Date.now() - 20 * MINUTE), notOnOrAfter: new Date(Date.now() - 10 * MINUTE) }, { sp: lenient, idp: idpSettings }),
      /expired/,
    );
  });

  test('an expired bearer SubjectConfirmation under valid Conditions', async () => {
    await expectRejected(validateFresh({ subjectNotOnOrAfter: new Date(Date.now() - 10 * MINUTE) }), /SubjectConfirmation is expired/);
  });

  test('a not-yet-valid assertion', async () => {
    await expectRejected(validateFresh({ notBefore: new Date(Date.now() + 10 * MINUTE) }), /not yet valid/);
  });

  test('a wrong Audience', async () => {
    await expectRejected(validateFresh({ audience: 'https://other-sp.example/metadata' }), /audience mismatch/);
  });

  test('a wrong Recipient', async () => {
    await expectRejected(validateFresh({ recipient: 'https://evil.example/acs', destination: sp.acsUrl }), /Recipient/);
  });

  test('a wrong Destination', async () => {
    await expectRejected(validateFresh({ destination: 'https://evil.example/acs' }), /Destination/);
  });

  test('a wrong Issuer (another IdP signing with a trusted key)', async () => {
    const impostor = createSamlIdp({ entityId: 'https://impostor.test.example/saml' });
    const stores = freshStores();
    const requestId = await startLogin(stores);
    const forged = impostor.buildResponse({ inResponseTo: requestId, audience: sp.entityId, recipient: sp.acsUrl, nameId: 'alice@example.com' });
    await expectRejected(validateSamlResponse(sp, idpSettings, forged, stores), /Issuer/);
  });

  test('an unknown InResponseTo', async () => {
    const stores = freshStores();
    await startLogin(stores);
    await expectRejected(validateSamlResponse(sp, idpSettings, response({ inResponseTo: '_never-issued' }), stores), /InResponseTo is unknown/);
  });

  test('an InResponseTo that was already used', async () => {
    const stores = freshStores();
    const requestId = await startLogin(stores);
    await validateSamlResponse(sp, idpSettings, response({ inResponseTo: requestId }), stores);
    await expectRejected(validateSamlResponse(sp, idpSettings, response({ inResponseTo: requestId }), stores), /InResponseTo is unknown/);
  });

  test('a replayed assertion id, even for a fresh request', async () => {
    const stores = freshStores();
    const first = await startLogin(stores);
    await validateSamlResponse(sp, idpSettings, response({ inResponseTo: first, assertionId: '_same' }), stores);
    const second = await startLogin(stores);
    await expectRejected(validateSamlResponse(sp, idpSettings, response({ inResponseTo: second, assertionId: '_same' }), stores), /replay/);
  });

  test('the same IdP-initiated response posted twice', async () => {
    const lenientIdp = { ...idpSettings, allowIdpInitiated: true };
    const stores = freshStores();
    const posted = response({ inResponseTo: null });
    await validateSamlResponse(sp, lenientIdp, posted, stores);
    await expectRejected(validateSamlResponse(sp, lenientIdp, posted, stores), /replay/);
  });

  test('an IdP-initiated response unless allowIdpInitiated', async () => {
    await expectRejected(validateSamlResponse(sp, idpSettings, response({ inResponseTo: null }), freshStores()), /unsolicited/);
  });

  test('an assertion without NameID', async () => {
    await expectRejected(validateFresh({ nameId: '' }), /no NameID/);
  });

  test('something that is not a SAML Response', async () => {
    const stores = freshStores();
    await expectRejected(validateSamlResponse(sp, idpSettings, Buffer.from('<a><b></a>').toString('base64'), stores), /not well-formed/);
    await expectRejected(validateSamlResponse(sp, idpSettings, 'bm90IHhtbA==', stores), /not well-formed/);
    await expectRejected(validateSamlResponse(sp, idpSettings, Buffer.from('<Response/>').toString('base64'), stores), /not a SAML 2.0 Response/);
  });
});

describe('mapSamlAttributes', () => {
  test('maps the urn:oid names and plain names', () => {
    expect(mapSamlAttributes({
      nameId: 'opaque-id',
      attributes: { [URI.mail]: 'bob@example.com', [URI.oidGivenName]: 'Bob', [URI.oidSurname]: 'Jones', [URI.displayName]: 'Bob Jones' },
    })).toEqual({ email: 'bob@example.com', name: 'Bob Jones', firstName: 'Bob', lastName: 'Jones', groups: [] });
    expect(mapSamlAttributes({
      nameId: 'opaque-id',
      attributes: { email: 'carol@example.com', name: 'Carol', firstName: 'Carol', lastName: 'King', groups: 'ops' },
    })).toEqual({ email: 'carol@example.com', name: 'Carol', firstName: 'Carol', lastName: 'King', groups: ['ops'] });
  });

  test('prefers the URI table over plain names, skips blanks and merges groups', () => {
    expect(mapSamlAttributes({
      nameId: 'x',
      attributes: { email: 'plain@example.com', [URI.email]: ['  ', 'uri@example.com'], groups: ['a', 'b'], [URI.groups]: 'b' },
    })).toMatchObject({ email: 'uri@example.com', groups: ['b', 'a'] });
  });

  test('falls back to the NameID for email only when it looks like one', () => {
    expect(mapSamlAttributes({ nameId: 'dave@example.com', attributes: {} }).email).toBe('dave@example.com');
    expect(mapSamlAttributes({ nameId: 'S-1-5-21-12345', attributes: {} })).toEqual({
      email: null, name: null, firstName: null, lastName: null, groups: [],
    });
  });
});
