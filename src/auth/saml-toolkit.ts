// Protocol-only SAML 2.0 service-provider helpers on top of node-saml 5: IdP metadata parsing, SP metadata,
// the signed HTTP-Redirect AuthnRequest and validation of HTTP-POST responses. No storage and no HTTP server
// here: pending request ids and seen assertion ids live in stores the caller injects (database-backed in
// production, so that several server instances share them).
import { X509Certificate, createSign, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { deflateRawSync } from 'node:zlib';
import { SAML, ValidateInResponseTo, generateServiceProviderMetadata, type Profile, type SamlConfig } from '@node-saml/node-saml';

export const SAML_NAMEID_EMAIL = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';

export interface SamlSpSettings {
  entityId: string;
  acsUrl: string;
  /** PEM */
  privateKey: string;
  /** PEM */
  certificate: string;
  /** default SAML_NAMEID_EMAIL */
  nameIdFormat?: string;
  forceAuthn?: boolean;
  /** default 120000, capped at 300000 */
  clockSkewMs?: number;
}

export interface SamlIdpSettings {
  entityId: string;
  ssoUrl: string;
  /** PEM with or without BEGIN/END lines, any whitespace */
  certificate: string;
  allowIdpInitiated?: boolean;
}

export interface SamlRequestStore {
  /** remember an AuthnRequest id */
  save(requestId: string, expiresAt: Date): Promise<void>;
  /** atomically consume; false when unknown/expired/used */
  consume(requestId: string): Promise<boolean>;
}

export interface SamlReplayStore {
  /** records an assertion id; returns false when it was seen before */
  remember(assertionId: string, expiresAt: Date): Promise<boolean>;
}

export interface SamlValidationResult {
  nameId: string;
  nameIdFormat: string | null;
  sessionIndex: string | null;
  inResponseTo: string | null;
  assertionId: string;
  attributes: Record<string, string | string[]>;
  profile: Record<string, unknown>;
}

export interface SamlMappedUser {
  email: string | null;
  name: string | null;
  firstName: string | null;
  lastName: string | null;
  groups: string[];
}

export class SamlValidationError extends Error {
  override name = 'SamlValidationError';
}

const NS = {
  protocol: 'urn:oasis:names:tc:SAML:2.0:protocol',
  assertion: 'urn:oasis:names:tc:SAML:2.0:assertion',
  metadata: 'urn:oasis:names:tc:SAML:2.0:metadata',
  dsig: 'http://www.w3.org/2000/09/xmldsig#',
};
const BINDING_REDIRECT = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
const BINDING_POST = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';
const BEARER = 'urn:oasis:names:tc:SAML:2.0:cm:bearer';
const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';
// node-saml (xml-crypto) verifies RSA-SHA1 signatures and SHA-1 digests too; only these are accepted.
const ALLOWED_SIGNATURE_METHODS = new Set([RSA_SHA256, 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512']);
const ALLOWED_DIGEST_METHODS = new Set([
  'http://www.w3.org/2001/04/xmlenc#sha256',
  'http://www.w3.org/2001/04/xmlenc#sha512',
]);
const DEFAULT_CLOCK_SKEW_MS = 120_000;
const MAX_CLOCK_SKEW_MS = 300_000;
const DEFAULT_REQUEST_TTL_MS = 10 * 60_000;
// SAML bindings §3.4.3: RelayState MUST NOT exceed 80 bytes.
const MAX_RELAY_STATE_BYTES = 80;

// In priority order: the first non-empty value wins for single-valued fields.
const SAML_ATTRIBUTE_FIELDS: Record<string, keyof SamlMappedUser> = {
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress': 'email',
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name': 'name',
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/givenname': 'firstName',
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/surname': 'lastName',
  'http://schemas.microsoft.com/ws/2008/06/identity/claims/groups': 'groups',
  'urn:oid:0.9.2342.19200300.100.1.3': 'email',
  'urn:oid:2.5.4.42': 'firstName',
  'urn:oid:2.5.4.4': 'lastName',
  'urn:oid:2.16.840.1.113730.3.1.241': 'name',
  email: 'email',
  name: 'name',
  firstName: 'firstName',
  lastName: 'lastName',
  groups: 'groups',
};

// ---------------------------------------------------------------------------------------------------------
// XML parsing. @xmldom/xmldom is the parser node-saml verifies signatures with, so both read the same tree.
// It is loaded untyped on purpose: its typings carry `/// <reference lib="dom" />`, which would add the DOM
// globals to the whole tsc program and break Node-typed code elsewhere (fetch Headers, BodyInit).

interface XmlNode {
  readonly nodeType: number;
}
interface XmlElement extends XmlNode {
  readonly localName: string;
  readonly namespaceURI: string | null;
  readonly textContent: string | null;
  readonly parentNode: XmlElement | null;
  readonly childNodes: ArrayLike<XmlNode>;
  /** xmldom returns '' for a missing attribute */
  getAttribute(name: string): string;
  getElementsByTagNameNS(namespace: string, localName: string): ArrayLike<XmlElement>;
}
interface XmlDomParser {
  parseFromString(xml: string, mimeType: string): { readonly documentElement: XmlElement | null };
}
const { DOMParser } = createRequire(import.meta.url)('@xmldom/xmldom') as {
  DOMParser: new (options: { errorHandler: Record<'warning' | 'error' | 'fatalError', (msg: string) => void> }) => XmlDomParser;
};

const ELEMENT_NODE = 1;

function parseXml(xml: string, what: string): XmlElement {
  // xmldom reports problems to the handler and carries on, even for unclosed tags (a mere "warning"), so any
  // report rejects the document: stricter than node-saml, never more lenient.
  const errors: string[] = [];
  const record = (msg: string) => void errors.push(msg.split('\n')[0].replace(/^\[xmldom \w+\]\s*/, ''));
  let root: XmlElement | null = null;
  try {
    root = new DOMParser({ errorHandler: { warning: record, error: record, fatalError: record } })
      .parseFromString(xml, 'text/xml').documentElement;
  } catch (error) {
    record((error as Error).message);
  }
  if (errors.length > 0 || !root) throw new Error(`${what} is not well-formed XML${errors.length ? `: ${errors[0]}` : ''}`);
  return root;
}

function isElement(node: XmlNode, namespace: string, localName: string): node is XmlElement {
  const el = node as XmlElement;
  return node.nodeType === ELEMENT_NODE && el.localName === localName && el.namespaceURI === namespace;
}

function children(parent: XmlElement, namespace: string, localName: string): XmlElement[] {
  return Array.from(parent.childNodes).filter((n): n is XmlElement => isElement(n, namespace, localName));
}

function descendants(parent: XmlElement, namespace: string, localName: string): XmlElement[] {
  return Array.from(parent.getElementsByTagNameNS(namespace, localName));
}

function attribute(el: XmlElement, name: string): string | null {
  return el.getAttribute(name) || null;
}

// ---------------------------------------------------------------------------------------------------------
// Certificates and metadata

/** Canonical PEM of one X.509 certificate given as PEM or bare base64 (any whitespace); throws when invalid. */
export function normalizeCertificate(pemOrBase64: string): string {
  const body = pemOrBase64.replace(/-----(BEGIN|END) [A-Z0-9 ]+-----/g, '').replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body)) throw new Error('certificate is neither PEM nor base64');
  const der = Buffer.from(body, 'base64');
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(der);
  } catch {
    throw new Error('certificate is not a valid X.509 certificate');
  }
  // X509Certificate ignores trailing bytes, e.g. a second certificate pasted after the first.
  if (certificate.raw.length !== der.length) throw new Error('expected exactly one certificate');
  return certificate.toString();
}

/** Reads an IdP's EntityDescriptor (alone or as the only IdP in an EntitiesDescriptor). */
export function parseIdpMetadata(xml: string): { entityId: string; ssoUrl: string; certificate: string } {
  const root = parseXml(xml, 'IdP metadata');
  if (root.namespaceURI !== NS.metadata || !['EntityDescriptor', 'EntitiesDescriptor'].includes(root.localName)) {
    throw new Error('IdP metadata is not a SAML 2.0 EntityDescriptor');
  }
  const idps = descendants(root, NS.metadata, 'IDPSSODescriptor');
  if (idps.length !== 1) {
    throw new Error(`IdP metadata must describe exactly one identity provider, found ${idps.length}`);
  }
  const descriptor = idps[0];
  const entityId = descriptor.parentNode ? attribute(descriptor.parentNode, 'entityID') : null;
  if (!entityId) throw new Error('IdP metadata has no entityID');

  const services = children(descriptor, NS.metadata, 'SingleSignOnService');
  const service = [BINDING_REDIRECT, BINDING_POST]
    .map((binding) => services.find((s) => attribute(s, 'Binding') === binding && attribute(s, 'Location')))
    .find(Boolean);
  if (!service) throw new Error('IdP metadata has no HTTP-Redirect or HTTP-POST SingleSignOnService');

  const signingKey = children(descriptor, NS.metadata, 'KeyDescriptor')
    .filter((k) => (attribute(k, 'use') ?? 'signing') === 'signing')
    .flatMap((k) => descendants(k, NS.dsig, 'X509Certificate'))[0];
  if (!signingKey?.textContent) throw new Error('IdP metadata has no signing certificate');

  return {
    entityId,
    ssoUrl: attribute(service, 'Location')!,
    certificate: normalizeCertificate(signingKey.textContent),
  };
}

function clockSkewMs(sp: SamlSpSettings): number {
  // Bounded both ways (node-saml treats -1 as "skip every time check" and NaN as "never expires").
  const configured = sp.clockSkewMs !== undefined && Number.isFinite(sp.clockSkewMs) ? sp.clockSkewMs : DEFAULT_CLOCK_SKEW_MS;
  return Math.min(Math.max(configured, 0), MAX_CLOCK_SKEW_MS);
}

function samlConfig(sp: SamlSpSettings, idp: SamlIdpSettings): SamlConfig {
  return {
    issuer: sp.entityId,
    callbackUrl: sp.acsUrl,
    entryPoint: idp.ssoUrl,
    idpCert: normalizeCertificate(idp.certificate),
    privateKey: sp.privateKey,
    publicCert: sp.certificate,
    signatureAlgorithm: 'sha256',
    identifierFormat: sp.nameIdFormat ?? SAML_NAMEID_EMAIL,
    forceAuthn: sp.forceAuthn ?? false,
    // node-saml would request PasswordProtectedTransport with Comparison="exact", which IdPs answer with an
    // error for users who signed in with MFA, a smart card or Windows authentication.
    disableRequestedAuthnContext: true,
    audience: sp.entityId,
    acceptedClockSkewMs: clockSkewMs(sp),
    wantAssertionsSigned: true,
    // Many IdPs sign only the assertion; a response signature, when present, is enforced per response below.
    wantAuthnResponseSigned: false,
    // InResponseTo is checked below against the injected store, using the value inside the signed assertion;
    // node-saml's check reads the (possibly unsigned) Response attribute and keeps ids in process memory.
    validateInResponseTo: ValidateInResponseTo.never,
  };
}

/** SP EntityDescriptor: ACS (HTTP-POST), NameIDFormat, signed requests, wanted signed assertions, signing key. */
export function generateSpMetadata(sp: SamlSpSettings): string {
  return generateServiceProviderMetadata({
    issuer: sp.entityId,
    callbackUrl: sp.acsUrl,
    identifierFormat: sp.nameIdFormat ?? SAML_NAMEID_EMAIL,
    wantAssertionsSigned: true,
    privateKey: sp.privateKey,
    publicCerts: [normalizeCertificate(sp.certificate)],
    signatureAlgorithm: 'sha256',
  });
}

// ---------------------------------------------------------------------------------------------------------
// AuthnRequest

/** Exposes node-saml's AuthnRequest XML so that the redirect query can be signed here (see below). */
class AuthnRequestSaml extends SAML {
  authnRequestXml(): Promise<string> {
    return this.generateAuthorizeRequestAsync(false, false);
  }
}

/** HTTP-Redirect binding, AuthnRequest signed (SHA-256) with the SP key; saves the request id in the store. */
export async function buildAuthnRequestRedirect(
  sp: SamlSpSettings,
  idp: SamlIdpSettings,
  input: { relayState: string; requestStore: SamlRequestStore; ttlMs?: number },
): Promise<{ url: string; requestId: string }> {
  if (Buffer.byteLength(input.relayState) > MAX_RELAY_STATE_BYTES) {
    throw new Error(`RelayState must not exceed ${MAX_RELAY_STATE_BYTES} bytes`);
  }
  const requestId = `_${randomBytes(20).toString('hex')}`;
  const xml = await new AuthnRequestSaml({ ...samlConfig(sp, idp), generateUniqueId: () => requestId }).authnRequestXml();

  // The IdP verifies the signature over the query octets exactly as received. node-saml's getAuthorizeUrlAsync
  // signs querystring-escaped values but writes the URL with URLSearchParams, which escapes ' ', '!', "'", '(',
  // ')' and '~' differently, so a RelayState holding one of them fails at strict IdPs. Sign what we send.
  const signedQuery = [
    ['SAMLRequest', deflateRawSync(xml).toString('base64')],
    ...(input.relayState ? [['RelayState', input.relayState]] : []),
    ['SigAlg', RSA_SHA256],
  ]
    .map(([key, value]) => `${key}=${encodeURIComponent(value)}`)
    .join('&');
  const signature = createSign('RSA-SHA256').update(signedQuery).sign(sp.privateKey, 'base64');

  const target = new URL(idp.ssoUrl);
  target.hash = '';
  const url = `${target.href}${target.search ? '&' : '?'}${signedQuery}&Signature=${encodeURIComponent(signature)}`;

  await input.requestStore.save(requestId, new Date(Date.now() + (input.ttlMs ?? DEFAULT_REQUEST_TTL_MS)));
  return { url, requestId };
}

// ---------------------------------------------------------------------------------------------------------
// Response validation

/** Checks on the raw (partly unsigned) Response that node-saml does not make. */
function inspectResponseEnvelope(xml: string, sp: SamlSpSettings): { responseSigned: boolean } {
  let root: XmlElement;
  try {
    root = parseXml(xml, 'SAMLResponse');
  } catch (error) {
    throw new SamlValidationError((error as Error).message);
  }
  if (!isElement(root, NS.protocol, 'Response')) throw new SamlValidationError('not a SAML 2.0 Response');

  // Every signature in the document, wherever it sits, must use SHA-256 or SHA-512 for both the signature
  // and its digests: a SHA-1 signature would verify in node-saml.
  for (const signature of descendants(root, NS.dsig, 'Signature')) {
    const methods = descendants(signature, NS.dsig, 'SignatureMethod').map((m) => attribute(m, 'Algorithm'));
    const digests = descendants(signature, NS.dsig, 'DigestMethod').map((m) => attribute(m, 'Algorithm'));
    if (methods.length === 0 || !methods.every((m) => m !== null && ALLOWED_SIGNATURE_METHODS.has(m))) {
      throw new SamlValidationError(`signature algorithm ${methods.join(', ') || 'missing'} is not accepted; use RSA-SHA256`);
    }
    if (digests.length === 0 || !digests.every((d) => d !== null && ALLOWED_DIGEST_METHODS.has(d))) {
      throw new SamlValidationError(`digest algorithm ${digests.join(', ') || 'missing'} is not accepted; use SHA-256`);
    }
  }

  const destination = attribute(root, 'Destination');
  if (destination !== null && destination !== sp.acsUrl) {
    throw new SamlValidationError('Response Destination does not match the ACS URL');
  }
  return { responseSigned: children(root, NS.dsig, 'Signature').length > 0 };
}

interface SubjectConfirmation {
  method: string | null;
  recipient: string | null;
  notBefore: number | null;
  notOnOrAfter: number | null;
  inResponseTo: string | null;
}

/** Reads what the signature covered: node-saml hands back the assertion re-serialised from the signed bytes. */
function readSignedAssertion(xml: string): { id: string | null; issuer: string | null; confirmations: SubjectConfirmation[] } {
  const assertion = parseXml(xml, 'signed assertion');
  const time = (value: string | null) => (value === null ? null : Date.parse(value));
  const confirmations = children(assertion, NS.assertion, 'Subject')
    .flatMap((subject) => children(subject, NS.assertion, 'SubjectConfirmation'))
    .flatMap((confirmation) => {
      const data = children(confirmation, NS.assertion, 'SubjectConfirmationData')[0];
      if (!data) return [];
      return [{
        method: attribute(confirmation, 'Method'),
        recipient: attribute(data, 'Recipient'),
        notBefore: time(attribute(data, 'NotBefore')),
        notOnOrAfter: time(attribute(data, 'NotOnOrAfter')),
        inResponseTo: attribute(data, 'InResponseTo'),
      }];
    });
  return {
    id: attribute(assertion, 'ID'),
    issuer: children(assertion, NS.assertion, 'Issuer')[0]?.textContent?.trim() ?? null,
    confirmations,
  };
}

function stringValues(value: unknown): string | string[] | null {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
  return null;
}

/**
 * Validates a base64 SAMLResponse from the HTTP-POST binding: signed assertion (RSA-SHA256, IdP certificate),
 * no wrapping, time window, Audience, Destination/Recipient, Issuer, InResponseTo (consumed from the request
 * store, or absent only when the IdP allows IdP-initiated login) and assertion replay.
 */
export async function validateSamlResponse(
  sp: SamlSpSettings,
  idp: SamlIdpSettings,
  samlResponse: string,
  stores: { requestStore: SamlRequestStore; replayStore: SamlReplayStore },
): Promise<SamlValidationResult> {
  const { responseSigned } = inspectResponseEnvelope(Buffer.from(samlResponse, 'base64').toString('utf8'), sp);

  // With wantAuthnResponseSigned false node-saml silently ignores a response signature that does not verify;
  // demand it whenever the IdP sent one, so content outside the assertion cannot be altered either.
  const saml = new SAML({ ...samlConfig(sp, idp), wantAuthnResponseSigned: responseSigned });
  let profile: Profile | null;
  try {
    ({ profile } = await saml.validatePostResponseAsync({ SAMLResponse: samlResponse }));
  } catch (error) {
    throw new SamlValidationError((error as Error).message, { cause: error });
  }
  if (!profile?.getAssertionXml) throw new SamlValidationError('Response carries no assertion');

  const assertion = readSignedAssertion(profile.getAssertionXml());
  if (!assertion.id) throw new SamlValidationError('assertion has no ID');
  if (assertion.issuer !== idp.entityId) throw new SamlValidationError('assertion Issuer is not the configured IdP');

  const skew = clockSkewMs(sp);
  const now = Date.now();
  const forThisSp = assertion.confirmations.filter((c) => c.method === BEARER && c.recipient === sp.acsUrl);
  if (forThisSp.length === 0) throw new SamlValidationError('no bearer SubjectConfirmation with Recipient = ACS URL');
  // The Web SSO profile requires NotOnOrAfter here; node-saml checks these times only in its own InResponseTo mode.
  const confirmation = forThisSp.find(
    (c): c is SubjectConfirmation & { notOnOrAfter: number } =>
      c.notOnOrAfter !== null && now - skew < c.notOnOrAfter && (c.notBefore === null || c.notBefore <= now + skew),
  );
  if (!confirmation) throw new SamlValidationError('SubjectConfirmation is expired or not yet valid');

  if (!profile.nameID) throw new SamlValidationError('assertion has no NameID');

  const { inResponseTo } = confirmation;
  if (inResponseTo === null) {
    if (!idp.allowIdpInitiated) throw new SamlValidationError('unsolicited response: IdP-initiated login is not allowed');
  } else if (!(await stores.requestStore.consume(inResponseTo))) {
    throw new SamlValidationError('InResponseTo is unknown, expired or already used');
  }
  // Remembered until the assertion could no longer be accepted anyway.
  if (!(await stores.replayStore.remember(assertion.id, new Date(confirmation.notOnOrAfter + skew)))) {
    throw new SamlValidationError('assertion was already used (replay)');
  }

  const attributes: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries((profile.attributes ?? {}) as Record<string, unknown>)) {
    const strings = stringValues(value);
    if (strings !== null) attributes[name] = strings;
  }
  return {
    nameId: profile.nameID,
    nameIdFormat: profile.nameIDFormat ?? null,
    sessionIndex: profile.sessionIndex ?? null,
    inResponseTo,
    assertionId: assertion.id,
    attributes,
    // node-saml's inResponseTo is the Response attribute, unsigned when only the assertion is signed
    profile: Object.fromEntries(Object.entries(profile).filter(([k, v]) => typeof v !== 'function' && k !== 'inResponseTo')),
  };
}

// ---------------------------------------------------------------------------------------------------------
// Attribute mapping

const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+$/;

/** Maps the well-known attribute URIs and plain names; falls back to an email-shaped NameID for email. */
export function mapSamlAttributes(result: { nameId: string; attributes: Record<string, string | string[]> }): SamlMappedUser {
  const values: Record<keyof SamlMappedUser, string[]> = { email: [], name: [], firstName: [], lastName: [], groups: [] };
  for (const [name, field] of Object.entries(SAML_ATTRIBUTE_FIELDS)) {
    const value = Object.hasOwn(result.attributes, name) ? result.attributes[name] : [];
    for (const v of Array.isArray(value) ? value : [value]) {
      if (v.trim()) values[field].push(v.trim());
    }
  }
  const first = (field: keyof Omit<SamlMappedUser, 'groups'>) => values[field][0] ?? null;
  const nameId = result.nameId.trim();
  return {
    email: first('email') ?? (EMAIL_PATTERN.test(nameId) ? nameId : null),
    name: first('name'),
    firstName: first('firstName'),
    lastName: first('lastName'),
    groups: [...new Set(values.groups)],
  };
}
