// A SAML 2.0 identity provider for tests. Its metadata comes from samlify, AuthnRequests are read and their
// redirect signatures verified with samlify, and responses are real XML-DSig documents signed with
// xml-crypto under a self-signed certificate (openssl), with switches for the classic attacks.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { SignedXml } from 'xml-crypto';

// samlify is loaded untyped: its typings import @xmldom/xmldom, whose `/// <reference lib="dom" />` would add
// DOM globals to the whole tsc program and break Node-typed code in src/. The part used here is typed below.
interface Samlify {
  IdentityProvider(settings: {
    entityID: string;
    signingCert: string;
    wantAuthnRequestsSigned: boolean;
    nameIDFormat: string[];
    singleSignOnService: { Binding: string; Location: string }[];
    singleLogoutService: { Binding: string; Location: string }[];
  }): { getMetadata(): string };
  SPMetadata(settings: { signingCert: string }): unknown;
  SamlLib: { verifyMessageSignature(spMetadata: unknown, octetString: string, signature: Buffer, sigAlg: string): boolean };
  Extractor: {
    extract(xml: string, fields: { key: string; localPath: string[]; attributes: string[] }[]): Record<string, unknown>;
  };
}
const samlify = createRequire(import.meta.url)('samlify') as Samlify;

const BINDING_REDIRECT = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
const BINDING_POST = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';
const NAMEID_EMAIL = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
const EXC_C14N = 'http://www.w3.org/2001/10/xml-exc-c14n#';
const ENVELOPED = 'http://www.w3.org/2000/09/xmldsig#enveloped-signature';
const SIGNATURE_ALGORITHMS = {
  'rsa-sha256': 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  'rsa-sha512': 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512',
  'rsa-sha1': 'http://www.w3.org/2000/09/xmldsig#rsa-sha1',
} as const;
const DIGEST_ALGORITHMS = {
  sha256: 'http://www.w3.org/2001/04/xmlenc#sha256',
  sha512: 'http://www.w3.org/2001/04/xmlenc#sha512',
  sha1: 'http://www.w3.org/2000/09/xmldsig#sha1',
} as const;
const ATTACKER_NAME_ID = 'attacker@evil.example';

export interface TestKeyPair {
  /** PEM */
  privateKey: string;
  /** PEM, self-signed */
  certificate: string;
}

export interface TestAuthnRequest {
  id: string;
  acsUrl: string;
  relayState: string | null;
  forceAuthn: boolean;
  nameIdFormat: string | null;
}

export interface BuildResponseInput {
  /** null: IdP-initiated (no InResponseTo anywhere) */
  inResponseTo: string | null;
  audience: string;
  /** SubjectConfirmationData Recipient, and the Response Destination unless `destination` is given */
  recipient: string;
  nameId: string;
  attributes?: Record<string, string | string[]>;
  /** Conditions NotBefore; default one minute ago */
  notBefore?: Date;
  /** Conditions and SubjectConfirmationData NotOnOrAfter; default in five minutes */
  notOnOrAfter?: Date;
  /** SubjectConfirmationData NotOnOrAfter only; default `notOnOrAfter` */
  subjectNotOnOrAfter?: Date;
  /** Response Destination; default `recipient`, null leaves it out */
  destination?: string | null;
  assertionId?: string;
  /** default 'assertion' */
  signing?: 'assertion' | 'response' | 'both' | 'none';
  /** default 'idp'; 'other-key' signs with a foreign key and embeds that key's certificate in KeyInfo */
  signWith?: 'idp' | 'other-key';
  /** Hash used for the signature method and the digests; default 'sha256' (so 'sha1' means RSA-SHA1 + SHA-1). */
  digest?: 'sha256' | 'sha512' | 'sha1';
  /** Overrides the signature method alone, e.g. RSA-SHA256 over SHA-1 digests. */
  signatureAlgorithm?: keyof typeof SIGNATURE_ALGORITHMS;
  /**
   * After signing: 'wrap-extra-assertion' puts an unsigned attacker assertion before the signed one;
   * 'move-signature' moves the assertion signature into an attacker assertion and hides the original inside
   * the signature's ds:Object (XSW); 'edit-after-signing' changes the signed NameID; 'edit-response-after-signing'
   * changes the Response IssueInstant, outside the assertion.
   */
  tamper?: 'wrap-extra-assertion' | 'move-signature' | 'edit-after-signing' | 'edit-response-after-signing';
}

export interface TestSamlIdp {
  entityId: string;
  ssoUrl: string;
  /** PEM */
  certificate: string;
  metadataXml: string;
  /**
   * Parses a redirect-binding AuthnRequest URL (as built by buildAuthnRequestRedirect); with `spCertificate`
   * it also verifies the redirect signature over the raw query octets and throws when it does not verify.
   */
  readAuthnRequest(url: string, spCertificate?: string): TestAuthnRequest;
  /** base64 SAMLResponse; options default to a valid response */
  buildResponse(input: BuildResponseInput): string;
}

/** A fresh RSA-2048 key and a self-signed certificate for it. */
export function createTestKeyPair(commonName: string): TestKeyPair {
  const dir = mkdtempSync(path.join(tmpdir(), 'saml-key-'));
  try {
    const keyFile = path.join(dir, 'key.pem');
    const certFile = path.join(dir, 'cert.pem');
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-sha256', '-days', '2',
      '-subj', `/CN=${commonName}`, '-keyout', keyFile, '-out', certFile,
    ], { stdio: 'ignore' });
    return { privateKey: readFileSync(keyFile, 'utf8'), certificate: readFileSync(certFile, 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// Generated once per process (jest: per test file): every harness IdP shares the key, so an IdP with another
// entity id produces responses that verify with the first one's certificate.
let keys: { idp: TestKeyPair; other: TestKeyPair } | undefined;
function idpKeys() {
  keys ??= { idp: createTestKeyPair('Test SAML IdP'), other: createTestKeyPair('Attacker') };
  return keys;
}

function escapeXml(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function newId(): string {
  return `_${randomBytes(16).toString('hex')}`;
}

interface AssertionFields {
  id: string;
  issuer: string;
  issueInstant: string;
  nameId: string;
  inResponseTo: string | null;
  recipient: string;
  subjectNotOnOrAfter: Date;
  notBefore: Date;
  notOnOrAfter: Date;
  audience: string;
  sessionIndex: string;
  attributes: Record<string, string | string[]>;
}

function assertionXml(a: AssertionFields): string {
  const inResponseTo = a.inResponseTo === null ? '' : ` InResponseTo="${escapeXml(a.inResponseTo)}"`;
  const attributes = Object.entries(a.attributes)
    .map(([name, value]) => {
      const format = name.includes(':') ? 'uri' : 'basic';
      const values = (Array.isArray(value) ? value : [value])
        .map((v) => `<saml:AttributeValue xsi:type="xs:string">${escapeXml(v)}</saml:AttributeValue>`)
        .join('');
      return `<saml:Attribute Name="${escapeXml(name)}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:${format}">${values}</saml:Attribute>`;
    })
    .join('');
  return (
    `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" xmlns:xs="http://www.w3.org/2001/XMLSchema"` +
    ` xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ID="${a.id}" Version="2.0" IssueInstant="${a.issueInstant}">` +
    `<saml:Issuer>${escapeXml(a.issuer)}</saml:Issuer>` +
    `<saml:Subject><saml:NameID Format="${NAMEID_EMAIL}">${escapeXml(a.nameId)}</saml:NameID>` +
    `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer">` +
    `<saml:SubjectConfirmationData${inResponseTo} NotOnOrAfter="${a.subjectNotOnOrAfter.toISOString()}" Recipient="${escapeXml(a.recipient)}"/>` +
    `</saml:SubjectConfirmation></saml:Subject>` +
    `<saml:Conditions NotBefore="${a.notBefore.toISOString()}" NotOnOrAfter="${a.notOnOrAfter.toISOString()}">` +
    `<saml:AudienceRestriction><saml:Audience>${escapeXml(a.audience)}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    `<saml:AuthnStatement AuthnInstant="${a.issueInstant}" SessionIndex="${a.sessionIndex}"><saml:AuthnContext>` +
    `<saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef>` +
    `</saml:AuthnContext></saml:AuthnStatement>` +
    (attributes ? `<saml:AttributeStatement>${attributes}</saml:AttributeStatement>` : '') +
    `</saml:Assertion>`
  );
}

const RESPONSE_XPATH = "/*[local-name()='Response']";
const ASSERTION_XPATH = `${RESPONSE_XPATH}/*[local-name()='Assertion']`;

function sign(xml: string, xpath: string, key: TestKeyPair, signatureAlgorithm: string, digestAlgorithm: string): string {
  const signer = new SignedXml({
    privateKey: key.privateKey,
    publicCert: key.certificate,
    signatureAlgorithm,
    canonicalizationAlgorithm: EXC_C14N,
  });
  signer.addReference({ xpath, transforms: [ENVELOPED, EXC_C14N], digestAlgorithm });
  // Schema order: the signature follows the Issuer of the signed element.
  signer.computeSignature(xml, { prefix: 'ds', location: { reference: `${xpath}/*[local-name()='Issuer']`, action: 'after' } });
  return signer.getSignedXml();
}

function only(xml: string, pattern: RegExp, what: string): string {
  const matches = xml.match(new RegExp(pattern.source, 'g')) ?? [];
  if (matches.length !== 1) throw new Error(`test IdP: expected one ${what}, found ${matches.length}`);
  return matches[0];
}

export function createSamlIdp(opts: { entityId?: string; ssoUrl?: string } = {}): TestSamlIdp {
  const entityId = opts.entityId ?? 'https://idp.test.example/saml';
  const ssoUrl = opts.ssoUrl ?? 'https://idp.test.example/sso';
  const { idp: idpKey, other: otherKey } = idpKeys();

  const metadataXml = samlify
    .IdentityProvider({
      entityID: entityId,
      signingCert: idpKey.certificate,
      wantAuthnRequestsSigned: true,
      nameIDFormat: [NAMEID_EMAIL],
      // POST first, so a reader that takes the first endpoint instead of preferring Redirect is caught.
      singleSignOnService: [
        { Binding: BINDING_POST, Location: `${ssoUrl}/post` },
        { Binding: BINDING_REDIRECT, Location: ssoUrl },
      ],
      singleLogoutService: [{ Binding: BINDING_REDIRECT, Location: `${ssoUrl}/logout` }],
    })
    .getMetadata();

  function readAuthnRequest(url: string, spCertificate?: string): TestAuthnRequest {
    // Raw (still URL-encoded) values: the redirect signature covers the octets exactly as sent.
    const raw = new Map(
      (url.split('?')[1] ?? '').split('&').map((pair) => {
        const at = pair.indexOf('=');
        return [pair.slice(0, at), pair.slice(at + 1)] as const;
      }),
    );
    const samlRequest = raw.get('SAMLRequest');
    if (!samlRequest) throw new Error('test IdP: no SAMLRequest in the URL');
    if (spCertificate !== undefined) {
      const sigAlg = raw.get('SigAlg');
      const signature = raw.get('Signature');
      if (!sigAlg || !signature) throw new Error('test IdP: AuthnRequest is not signed');
      const octets = ['SAMLRequest', 'RelayState', 'SigAlg']
        .filter((key) => raw.has(key))
        .map((key) => `${key}=${raw.get(key)}`)
        .join('&');
      const spMetadata = samlify.SPMetadata({ signingCert: spCertificate });
      const signatureBytes = Buffer.from(decodeURIComponent(signature), 'base64');
      if (!samlify.SamlLib.verifyMessageSignature(spMetadata, octets, signatureBytes, decodeURIComponent(sigAlg))) {
        throw new Error('test IdP: AuthnRequest signature does not verify');
      }
    }
    const xml = inflateRawSync(Buffer.from(decodeURIComponent(samlRequest), 'base64')).toString('utf8');
    const { request, nameIdFormat } = samlify.Extractor.extract(xml, [
      { key: 'request', localPath: ['AuthnRequest'], attributes: ['ID', 'AssertionConsumerServiceURL', 'ForceAuthn'] },
      { key: 'nameIdFormat', localPath: ['AuthnRequest', 'NameIDPolicy'], attributes: ['Format'] },
    ]) as { request: { id: string; assertionConsumerServiceUrl: string; forceAuthn?: string }; nameIdFormat?: string };
    const relayState = raw.get('RelayState');
    return {
      id: request.id,
      acsUrl: request.assertionConsumerServiceUrl,
      relayState: relayState === undefined ? null : decodeURIComponent(relayState),
      forceAuthn: request.forceAuthn === 'true',
      nameIdFormat: nameIdFormat ?? null,
    };
  }

  function buildResponse(input: BuildResponseInput): string {
    const now = new Date();
    const issueInstant = now.toISOString();
    const notOnOrAfter = input.notOnOrAfter ?? new Date(now.getTime() + 5 * 60_000);
    const fields: AssertionFields = {
      id: input.assertionId ?? newId(),
      issuer: entityId,
      issueInstant,
      nameId: input.nameId,
      inResponseTo: input.inResponseTo,
      recipient: input.recipient,
      subjectNotOnOrAfter: input.subjectNotOnOrAfter ?? notOnOrAfter,
      notBefore: input.notBefore ?? new Date(now.getTime() - 60_000),
      notOnOrAfter,
      audience: input.audience,
      sessionIndex: newId(),
      attributes: input.attributes ?? {},
    };
    const destination = input.destination === undefined ? input.recipient : input.destination;
    let xml =
      `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"` +
      ` ID="${newId()}" Version="2.0" IssueInstant="${issueInstant}"` +
      (destination === null ? '' : ` Destination="${escapeXml(destination)}"`) +
      (input.inResponseTo === null ? '' : ` InResponseTo="${escapeXml(input.inResponseTo)}"`) +
      `><saml:Issuer>${escapeXml(entityId)}</saml:Issuer>` +
      `<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>` +
      assertionXml(fields) +
      `</samlp:Response>`;

    const signing = input.signing ?? 'assertion';
    const key = input.signWith === 'other-key' ? otherKey : idpKey;
    const digest = input.digest ?? 'sha256';
    const signatureAlgorithm = SIGNATURE_ALGORITHMS[input.signatureAlgorithm ?? `rsa-${digest}`];
    const digestAlgorithm = DIGEST_ALGORITHMS[digest];
    // A response signature covers the assertion including its own signature, so the assertion is signed first.
    if (signing === 'assertion' || signing === 'both') xml = sign(xml, ASSERTION_XPATH, key, signatureAlgorithm, digestAlgorithm);
    if (signing === 'response' || signing === 'both') xml = sign(xml, RESPONSE_XPATH, key, signatureAlgorithm, digestAlgorithm);

    const attacker = () => assertionXml({ ...fields, id: newId(), nameId: ATTACKER_NAME_ID });
    switch (input.tamper) {
      case 'wrap-extra-assertion': {
        const signed = only(xml, /<saml:Assertion\b[\s\S]*<\/saml:Assertion>/, 'assertion');
        xml = xml.replace(signed, () => attacker() + signed);
        break;
      }
      case 'move-signature': {
        const signed = only(xml, /<saml:Assertion\b[\s\S]*<\/saml:Assertion>/, 'assertion');
        const signature = only(signed, /<ds:Signature\b[\s\S]*?<\/ds:Signature>/, 'assertion signature');
        const original = signed.replace(signature, '');
        const carrier = signature.replace(/<\/ds:Signature>$/, () => `<ds:Object>${original}</ds:Object></ds:Signature>`);
        const evil = attacker().replace(/<\/saml:Issuer>/, () => `</saml:Issuer>${carrier}`);
        xml = xml.replace(signed, () => evil);
        break;
      }
      case 'edit-after-signing': {
        const nameId = only(xml, /<saml:NameID\b[^>]*>[^<]*<\/saml:NameID>/, 'NameID');
        xml = xml.replace(nameId, () => nameId.replace(/>[^<]*</, `>${ATTACKER_NAME_ID}<`));
        break;
      }
      case 'edit-response-after-signing':
        // The Response start tag comes first, so this is the Response's IssueInstant, not the assertion's.
        xml = xml.replace(/IssueInstant="[^"]*"/, `IssueInstant="${new Date(now.getTime() + 1000).toISOString()}"`);
        break;
      case undefined:
        break;
    }
    return Buffer.from(xml, 'utf8').toString('base64');
  }

  return { entityId, ssoUrl, certificate: idpKey.certificate, metadataXml, readAuthnRequest, buildResponse };
}
