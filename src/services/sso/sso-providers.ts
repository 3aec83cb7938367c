import { X509Certificate } from 'node:crypto';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import {
  SamlAssertion,
  SamlRequest,
  SsoIdentity,
  SsoProvider,
  SsoSession,
  type SsoAttributeMapping,
  type SsoProviderType,
} from '../../../entities/sso.js';
import type { RequestContext } from '../../auth/context.js';
import { discoverOidcEndpoints, type OidcEndpoints } from '../../auth/oidc-toolkit.js';
import type { Principal } from '../../auth/context.js';
import { authorize, loadOwned, requirePrincipal, targetOrgId, tenantWhere } from '../../auth/policy.js';
import type { Permission } from '../../auth/permissions.js';
import { normalizeCertificate, parseIdpMetadata } from '../../auth/saml-toolkit.js';
import { withTransaction } from '../../db/transaction.js';
import { AppError, badRequest, conflict, notFound } from '../../errors.js';
import { PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { recordAudit, recordChange } from '../audit/api.js';
import { assertCanGrant } from '../identity/api.js';
import { HTTPS_ONLY, assertBrowserUrl, idpFetch, usableDefaultRole } from './sso-idp.js';
import { DEFAULT_MAPPING, DEFAULT_SCOPES, SSO_PRESETS, SsoAttributeMappingViewSchema, SsoProviderTypeSchema } from './sso-presets.js';

const RESOURCE = 'SSO provider';

const SsoProviderStatusSchema = z
  .enum(['inactive', 'testing', 'active'])
  .meta({ title: 'SsoProviderStatus', description: 'Whether an identity provider signs users in.' })
  .register(enumValues, { inactive: 'Not used for sign-in.', testing: 'Being tried out: testSsoProvider works, sign-in does not.', active: 'Used for sign-in.' });

// ---------------------------------------------------------------------------------------------------------
// Inputs

const httpsUrl = z.string().max(500).pipe(z.url({ protocol: /^https$/, message: HTTPS_ONLY }));
// Where the login sends the browser: http passes the schema only to meet assertBrowserUrl, which knows the configuration.
const webUrl = z.string().max(500).pipe(z.url({ protocol: /^https?$/, message: HTTPS_ONLY }));
const mappingClaim = z.string().trim().min(1).max(255).describe('The IdP claim (OIDC) or attribute (SAML) holding the value.');

export const AttributeMappingInput = z
  .object({
    email: mappingClaim.describe('The claim or attribute holding the email address.'),
    name: mappingClaim.describe('The claim or attribute holding the display name.'),
    firstName: mappingClaim.nullish().describe('The one holding the first name, used when the name is missing; null clears it.'),
    lastName: mappingClaim.nullish().describe('The one holding the last name, combined with firstName; null clears it.'),
    groups: mappingClaim.nullish().describe('The one holding an array of group names; null clears it.'),
  })
  .strict()
  .meta({ title: 'SsoAttributeMappingInput', description: 'Which IdP claim (OIDC) or attribute (SAML) holds each user field.' })
  .transform(({ email, name, firstName, lastName, groups }): SsoAttributeMapping => ({
    email,
    name,
    ...(firstName ? { firstName } : {}),
    ...(lastName ? { lastName } : {}),
    ...(groups ? { groups } : {}),
  }));

const DOMAIN = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/;
const allowedDomains = z
  .string()
  .max(1000)
  .transform((value, issue) => {
    const domains = value.split(',').map((d) => d.trim().toLowerCase().replace(/^@/, '')).filter(Boolean);
    const bad = domains.find((d) => !DOMAIN.test(d));
    if (bad) issue.addIssue({ code: 'custom', message: `"${bad}" is not a domain name` });
    return domains.length ? [...new Set(domains)].join(',') : null;
  })
  .describe('Email domains allowed to sign in, comma-separated; null or empty allows every domain.');

const certificate = z
  .string()
  .max(20_000)
  .transform((value, issue) => {
    try {
      return normalizeCertificate(value);
    } catch (error) {
      issue.addIssue({ code: 'custom', message: (error as Error).message });
      return z.NEVER;
    }
  });

const scopes = z
  .string()
  .trim()
  .min(1)
  .max(500)
  .transform((s) => s.split(/\s+/).join(' '))
  .refine((s) => s.split(' ').includes('openid'), 'must include openid')
  .describe('OIDC scopes to request, space-separated; must include openid.');

// Fields every provider takes, then the protocol's own. `null` clears an optional field on update.
const commonFields = {
  name: z.string().trim().min(1).max(255).describe('Display name: 1 to 255 characters, surrounding spaces trimmed.'),
  autoProvision: z.boolean().describe('Whether a first SSO sign-in creates the user (true by default).'),
  defaultRoleId: uuid().nullable().describe('The role users created by autoProvision get; null: the organization’s default.'),
  allowedDomains: allowedDomains.nullable(),
  enforceSSO: z.boolean().describe('Whether the organization’s users must sign in through SSO (password sign-in refused).'),
  // Kept for every provider (spec default email/name); SAML logins read the spec's attribute URI table.
  attributeMapping: AttributeMappingInput.describe('Which IdP claims hold each user field; the preset’s or the protocol’s defaults when left out.'),
};
const oidcFields = {
  issuer: httpsUrl.nullable().describe('OIDC: the issuer URL (https); endpoints are discovered from it.'),
  clientId: z.string().trim().min(1).max(255).nullable().describe('OIDC: the client ID registered at the IdP.'),
  clientSecret: z.string().min(1).max(4096).nullable().describe('write-only'),
  authorizationUrl: webUrl.nullable().describe('OIDC: where users are sent to sign in; discovered when left out.'),
  tokenUrl: httpsUrl.nullable().describe('OIDC: where codes are exchanged for tokens (https); discovered when left out.'),
  userInfoUrl: httpsUrl.nullable().describe('OIDC: where user claims are read (https); discovered when left out.'),
  jwksUrl: httpsUrl.nullable().describe('OIDC: where the IdP’s signing keys are published (https); discovered when left out.'),
  scopes,
};
const samlFields = {
  entityId: z.string().trim().min(1).max(500).nullable().describe('SAML: the IdP’s entity ID.'),
  ssoUrl: webUrl.nullable().describe('SAML: the IdP’s SSO URL.'),
  certificate: certificate.nullable().describe('PEM, with or without the BEGIN/END lines'),
  metadataXml: z.string().max(1_000_000).describe('IdP metadata; entityId, ssoUrl and certificate are read from it (fields given alongside win)'),
  allowIdpInitiated: z.boolean().describe('SAML: whether sign-ins started at the IdP (unsolicited responses) are accepted.'),
  forceAuthn: z.boolean().describe('SAML: whether the IdP must ask for credentials again at every sign-in.'),
  nameIdFormat: z.string().trim().min(1).max(255).nullable().describe('SAML: the NameID format to request (a URN); the IdP’s default when null.'),
};
const DiscoveredEndpoints = z.object({
  authorizationUrl: oidcFields.authorizationUrl,
  tokenUrl: oidcFields.tokenUrl,
  userInfoUrl: oidcFields.userInfoUrl,
  jwksUrl: oidcFields.jwksUrl,
});
const OIDC_ONLY = Object.keys(oidcFields);
const SAML_ONLY = Object.keys(samlFields);

const optional = <T extends Record<string, z.ZodType>>(shape: T) =>
  Object.fromEntries(Object.entries(shape).map(([k, s]) => [k, s.optional()])) as { [K in keyof T]: z.ZodOptional<T[K]> };

export const CreateSsoProviderSchema = z
  .object({
    orgId: uuid().optional().describe('organization callers: their own; partner and platform callers: required'),
    type: SsoProviderTypeSchema.describe('The protocol: oidc or saml.'),
    preset: z.string().max(50).optional().describe('a preset id from ssoPresets'),
    ...optional(commonFields),
    name: commonFields.name,
    ...optional(oidcFields),
    ...optional(samlFields),
  })
  .strict().describe('A new identity provider of an organization (inactive until its status is set).');
export type CreateSsoProviderInput = z.input<typeof CreateSsoProviderSchema>;

export const UpdateSsoProviderSchema = z.object({ ...optional(commonFields), ...optional(oidcFields), ...optional(samlFields) }).strict().describe('Changes to an identity provider; a field left out keeps its value.');
export type UpdateSsoProviderInput = z.input<typeof UpdateSsoProviderSchema>;

export const SsoProviderStatusInput = z.object({ status: SsoProviderStatusSchema.describe('The new status.') }).strict();
export type SsoProviderStatusChange = z.input<typeof SsoProviderStatusInput>;

export const ListSsoProvidersQuery = PageQuery.extend({ orgId: uuid().optional().describe('required for partner and platform callers') }).strict();
export type ListSsoProvidersInput = z.input<typeof ListSsoProvidersQuery>;

// ---------------------------------------------------------------------------------------------------------
// View

const optionalUrl = () => z.string().nullable();
export const SsoProviderViewSchema = z
  .object({
    id: uuid().describe('Unique ID.'),
    orgId: uuid().describe('The organization it signs users into.'),
    name: z.string().describe('Display name.'),
    type: SsoProviderTypeSchema.describe('Its protocol.'),
    status: SsoProviderStatusSchema.describe('only active providers are used for login'),
    preset: z.string().nullable().describe('The preset it was made from; null for none.'),
    issuer: optionalUrl().describe('OIDC: the issuer URL; null for SAML.'),
    clientId: z.string().nullable().describe('OIDC: the client ID; null for SAML.'),
    hasClientSecret: z.boolean().describe('OIDC: whether a client secret is set (it is never shown).'),
    authorizationUrl: optionalUrl().describe('OIDC: the authorization endpoint; null for SAML.'),
    tokenUrl: optionalUrl().describe('OIDC: the token endpoint; null for SAML.'),
    userInfoUrl: optionalUrl().describe('OIDC: the user-info endpoint; null when none.'),
    jwksUrl: optionalUrl().describe('OIDC: the signing keys’ URL; null for SAML.'),
    scopes: z.string().nullable().describe('OIDC: the scopes requested, space-separated; null for SAML.'),
    attributeMapping: SsoAttributeMappingViewSchema.nullable().describe('Which IdP claims hold each user field; null for the protocol’s defaults.'),
    autoProvision: z.boolean().describe('Whether a first SSO sign-in creates the user.'),
    defaultRoleId: uuid().nullable().describe('The role users created by autoProvision get; null: the organization’s default.'),
    allowedDomains: z.string().nullable().describe('comma-separated; null allows every domain'),
    enforceSSO: z.boolean().describe('Whether password sign-in is refused for the organization’s users.'),
    entityId: z.string().nullable().describe("SAML: the IdP's entity id"),
    ssoUrl: optionalUrl().describe("SAML: the IdP's SSO URL"),
    certificate: z.string().nullable().describe("SAML: the IdP's signing certificate (PEM)"),
    allowIdpInitiated: z.boolean().describe('SAML: whether sign-ins started at the IdP are accepted.'),
    forceAuthn: z.boolean().describe('SAML: whether the IdP must ask for credentials at every sign-in.'),
    nameIdFormat: z.string().nullable().describe('SAML: the NameID format requested; null for the IdP’s default.'),
    createdBy: uuid().nullable().describe('The user who created it; null when that user is gone.'),
    createdAt: timestamp().describe('When it was created.'),
    updatedAt: timestamp().describe('When it last changed.'),
  })
  .meta({ title: 'SsoProvider', description: 'An organization identity provider. The client secret is write-only: see hasClientSecret.' });
export type SsoProviderView = z.output<typeof SsoProviderViewSchema>;
export const SsoProviderPageSchema = pageSchema(SsoProviderViewSchema, 'SsoProviderPage');

/** Never the client secret: only whether one is set. */
export function ssoProviderView(p: SsoProvider): SsoProviderView {
  return {
    id: p.id,
    orgId: p.orgId,
    name: p.name,
    type: p.type,
    status: p.status,
    preset: p.preset,
    issuer: p.issuer,
    clientId: p.clientId,
    hasClientSecret: p.clientSecret !== null,
    authorizationUrl: p.authorizationUrl,
    tokenUrl: p.tokenUrl,
    userInfoUrl: p.userInfoUrl,
    jwksUrl: p.jwksUrl,
    scopes: p.scopes,
    attributeMapping: p.attributeMapping,
    autoProvision: p.autoProvision,
    defaultRoleId: p.defaultRoleId,
    allowedDomains: p.allowedDomains,
    enforceSSO: p.enforceSSO,
    entityId: p.entityId,
    ssoUrl: p.ssoUrl,
    certificate: p.certificate,
    allowIdpInitiated: p.allowIdpInitiated,
    forceAuthn: p.forceAuthn,
    nameIdFormat: p.nameIdFormat,
    createdBy: p.createdBy,
    createdAt: p.createdAt.toISOString(),
    updatedAt: p.updatedAt.toISOString(),
  };
}

// ---------------------------------------------------------------------------------------------------------
// Operations

function loadProvider(ctx: RequestContext, id: string, permission: Permission, mfa = false): Promise<SsoProvider> {
  return loadOwned(ctx, SsoProvider, id, permission, { mfa, resource: RESOURCE });
}

export async function listSsoProviders(ctx: RequestContext, query: z.input<typeof ListSsoProvidersQuery>): Promise<Page<SsoProviderView>> {
  const input = parseInput(ListSsoProvidersQuery, query);
  await authorize(ctx, 'organizations:read', { orgId: input.orgId ?? null, resource: 'Organization' });
  // Without `orgId`, partner and system callers see the providers of every organization they can see.
  const where = (await tenantWhere<SsoProvider>(ctx, { org: 'orgId', requestedOrgId: input.orgId })) ?? {};
  const [rows, total] = await ctx.em.findAndCount(SsoProvider, where, { orderBy: { createdAt: 'asc', id: 'asc' }, ...pageOptions(input) });
  return toPage(rows.map(ssoProviderView), total, input);
}

export async function getSsoProvider(ctx: RequestContext, id: string): Promise<SsoProviderView> {
  return ssoProviderView(await loadProvider(ctx, id, 'organizations:read'));
}

type Column = Exclude<keyof SsoProvider, 'id' | 'orgId' | 'type' | 'createdAt' | 'updatedAt' | symbol>;
type Changes = Partial<Pick<SsoProvider, Column>>;

/** Turns parsed input into column values for a provider of `type`: refuses the other protocol's fields, reads metadata, encrypts the secret. */
function columnsFrom(ctx: RequestContext, type: SsoProviderType, input: z.output<typeof UpdateSsoProviderSchema>): Changes {
  const foreign = Object.keys(input).filter((k) => input[k as keyof typeof input] !== undefined && (type === 'oidc' ? SAML_ONLY : OIDC_ONLY).includes(k));
  if (foreign.length) throw badRequest(`${foreign[0]}: does not apply to ${type} providers`);
  const { metadataXml, clientSecret, ...rest } = input;
  const changes: Changes = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
  if (clientSecret !== undefined) changes.clientSecret = clientSecret === null ? null : ctx.runtime.secrets.encrypt(clientSecret);
  if (metadataXml !== undefined) {
    let metadata: ReturnType<typeof parseIdpMetadata>;
    try {
      metadata = parseIdpMetadata(metadataXml);
    } catch (error) {
      throw badRequest(`metadataXml: ${(error as Error).message}`);
    }
    // Values read from the document get the same checks as values typed in.
    const read = parseInput(z.object({ entityId: samlFields.entityId, ssoUrl: samlFields.ssoUrl }), { entityId: metadata.entityId, ssoUrl: metadata.ssoUrl });
    changes.entityId = input.entityId ?? read.entityId;
    changes.ssoUrl = input.ssoUrl ?? read.ssoUrl;
    changes.certificate = input.certificate ?? metadata.certificate;
  }
  assertBrowserUrl(ctx.runtime.config, 'authorizationUrl', changes.authorizationUrl);
  assertBrowserUrl(ctx.runtime.config, 'ssoUrl', changes.ssoUrl);
  return changes;
}

/** Discovery for a new or changed issuer; a failure is logged and the provider saved without endpoints. */
async function discover(ctx: RequestContext, issuer: string): Promise<OidcEndpoints | null> {
  try {
    const found = await discoverOidcEndpoints(issuer, idpFetch(ctx.runtime.config));
    // A discovery document is outside input too: its URLs get the same checks as URLs typed in.
    const checked = DiscoveredEndpoints.safeParse(found);
    if (!checked.success) throw new Error(`unusable endpoint in the discovery document: ${checked.error.issues[0]?.path.join('.')}`);
    assertBrowserUrl(ctx.runtime.config, 'authorizationUrl', found.authorizationUrl);
    return found;
  } catch (error) {
    ctx.log.warn({ issuer, err: (error as Error).message }, 'OIDC discovery failed; endpoints can be set by PATCH');
    return null;
  }
}

function endpointColumns(endpoints: OidcEndpoints | null, explicit: Changes): Changes {
  if (!endpoints) return {};
  const found: Changes = {
    authorizationUrl: endpoints.authorizationUrl,
    tokenUrl: endpoints.tokenUrl,
    userInfoUrl: endpoints.userInfoUrl,
    jwksUrl: endpoints.jwksUrl,
  };
  // URLs given in the same request win over discovered ones.
  return Object.fromEntries(Object.entries(found).filter(([k]) => explicit[k as keyof Changes] === undefined));
}

/** Every user the provider provisions holds its default role: setting one grants it, so only what the caller holds. */
async function checkDefaultRole(em: EntityManager, principal: Principal, orgId: string, changes: Changes): Promise<void> {
  if (!changes.defaultRoleId) return;
  const role = await usableDefaultRole(em, orgId, changes.defaultRoleId);
  if (!role) throw badRequest('defaultRoleId: must be an organization-scoped role of the organization');
  assertCanGrant(principal, role.scope, role.permissions);
}

/**
 * The IdP vouches for the organization's own accounts at sign-in (an account whose every membership is
 * in the organization is taken by its email), so configuring or switching on the IdP amounts to being
 * able to sign in as them: only someone holding every permission their roles grant may do it.
 */
async function assertControlsSignIn(em: EntityManager, principal: Principal, orgId: string): Promise<void> {
  const rows = (await em.execute(
    `select distinct r.permissions from membership m join role r on r.id = m.role_id where m.org_id = ? and m.status = 'active'`,
    [orgId],
  )) as { permissions: string[] }[];
  assertCanGrant(
    principal,
    'organization',
    [...new Set(rows.flatMap((r) => r.permissions))],
    "An identity provider signs in the organization's members: you cannot configure one for members whose roles grant permissions you do not hold",
  );
}

export async function createSsoProvider(ctx: RequestContext, body: CreateSsoProviderInput): Promise<SsoProviderView> {
  const input = parseInput(CreateSsoProviderSchema, body);
  const orgId = await targetOrgId(ctx, input.orgId);
  const principal = await authorize(ctx, 'organizations:write', { orgId, mfa: true, resource: RESOURCE });
  const { orgId: _orgId, type, preset: presetId, ...fields } = input;
  const preset = presetId === undefined ? null : SSO_PRESETS.find((p) => p.id === presetId);
  if (preset === undefined) throw badRequest(`preset: unknown preset "${presetId}"`);
  if (preset && preset.type !== type) throw badRequest(`preset: ${preset.id} is a ${preset.type} preset`);

  const changes = columnsFrom(ctx, type, fields);
  changes.attributeMapping ??= { ...(preset?.attributeMapping ?? DEFAULT_MAPPING) };
  if (type === 'oidc') {
    changes.scopes ??= preset?.scopes ?? DEFAULT_SCOPES;
    if (changes.issuer) Object.assign(changes, endpointColumns(await discover(ctx, changes.issuer), changes));
  }

  return withTransaction(ctx, async (tx) => {
    await checkDefaultRole(tx.em, principal, orgId, changes);
    await assertControlsSignIn(tx.em, principal, orgId);
    const provider = tx.em.create(SsoProvider, { ...changes, name: fields.name, orgId, type, status: 'inactive', preset: preset?.id ?? null, createdBy: principal.userId });
    await tx.em.flush();
    await recordChange(
      tx,
      { action: 'sso.provider.create', resourceType: 'sso_provider', resourceId: provider.id, orgId, details: { name: provider.name, type, status: provider.status } },
      { providerId: provider.id, name: provider.name, type },
    );
    return ssoProviderView(provider);
  });
}

export async function updateSsoProvider(ctx: RequestContext, id: string, body: UpdateSsoProviderInput): Promise<SsoProviderView> {
  const current = await loadProvider(ctx, id, 'organizations:write', true);
  const changes = columnsFrom(ctx, current.type, parseInput(UpdateSsoProviderSchema, body));
  if (current.type === 'oidc' && changes.issuer && changes.issuer !== current.issuer) {
    Object.assign(changes, endpointColumns(await discover(ctx, changes.issuer), changes));
  }

  return withTransaction(ctx, async (tx) => {
    const provider = await tx.em.findOne(SsoProvider, { id: current.id });
    if (!provider) throw notFound(RESOURCE);
    await checkDefaultRole(tx.em, requirePrincipal(ctx), provider.orgId, changes);
    await assertControlsSignIn(tx.em, requirePrincipal(ctx), provider.orgId);
    const changed = (Object.keys(changes) as Column[]).filter(
      (k) => k === 'clientSecret' ? changes.clientSecret !== null || provider.clientSecret !== null : JSON.stringify(changes[k]) !== JSON.stringify(provider[k]),
    );
    tx.em.assign(provider, changes);
    await tx.em.flush();
    await recordChange(
      tx,
      { action: 'sso.provider.update', resourceType: 'sso_provider', resourceId: provider.id, orgId: provider.orgId, changes: changed, details: { type: provider.type } },
      { providerId: provider.id, name: provider.name, changes: changed },
    );
    return ssoProviderView(provider);
  });
}

export async function deleteSsoProvider(ctx: RequestContext, id: string): Promise<void> {
  const current = await loadProvider(ctx, id, 'organizations:write', true);
  await withTransaction(ctx, async (tx) => {
    // The foreign keys cascade too; deleting explicitly gives the audit entry its counts.
    const identitiesRemoved = await tx.em.nativeDelete(SsoIdentity, { providerId: current.id });
    const sessionsRemoved = await tx.em.nativeDelete(SsoSession, { providerId: current.id });
    await tx.em.nativeDelete(SamlRequest, { providerId: current.id });
    await tx.em.nativeDelete(SamlAssertion, { providerId: current.id });
    if ((await tx.em.nativeDelete(SsoProvider, { id: current.id })) === 0) throw notFound(RESOURCE);
    await recordChange(
      tx,
      {
        action: 'sso.provider.delete',
        resourceType: 'sso_provider',
        resourceId: current.id,
        orgId: current.orgId,
        details: { name: current.name, type: current.type, identitiesRemoved, sessionsRemoved },
      },
      { providerId: current.id, name: current.name },
    );
  });
}

export async function setSsoProviderStatus(ctx: RequestContext, id: string, body: SsoProviderStatusChange): Promise<SsoProviderView> {
  const current = await loadProvider(ctx, id, 'organizations:write', true);
  const { status } = parseInput(SsoProviderStatusInput, body);
  const alreadyActive = () => conflict('Another SSO provider is already active for this organization');
  return withTransaction(ctx, async (tx) => {
    const provider = await tx.em.findOne(SsoProvider, { id: current.id });
    if (!provider) throw notFound(RESOURCE);
    if (status === 'active' && (await tx.em.count(SsoProvider, { orgId: provider.orgId, status: 'active', id: { $ne: provider.id } })) > 0) {
      throw alreadyActive();
    }
    if (status === 'active') await assertControlsSignIn(tx.em, requirePrincipal(ctx), provider.orgId);
    const from = provider.status;
    provider.status = status;
    try {
      await tx.em.flush();
    } catch (error) {
      // Two activations racing: the partial unique index decides.
      if (error instanceof UniqueConstraintViolationException) throw alreadyActive();
      throw error;
    }
    const entry = { action: 'sso.provider.status.update' as const, resourceType: 'sso_provider', resourceId: provider.id, orgId: provider.orgId, details: { from, to: status } };
    // Setting the status it already has is still recorded, but publishes nothing.
    if (from === status) await recordAudit(tx, { ...entry, changes: [] });
    else await recordChange(tx, { ...entry, changes: ['status'] }, { providerId: provider.id, from, to: status });
    return ssoProviderView(provider);
  });
}

export const SsoProviderTestResultSchema = z
  .object({
    success: z.boolean().describe('Always true: a failed test is an error.'),
    type: SsoProviderTypeSchema.describe('The protocol tested.'),
    endpoints: z
      .object({
        issuer: z.string().describe('The issuer the discovery document names.'),
        authorizationUrl: z.string().describe('Where users are sent to sign in.'),
        tokenUrl: z.string().describe('Where codes are exchanged for tokens.'),
        userInfoUrl: z.string().nullable().describe('Where user claims are read; null when the IdP has none.'),
        jwksUrl: z.string().describe('Where the IdP’s signing keys are published.'),
      })
      .meta({ title: 'SsoOidcEndpoints', description: 'The endpoints OIDC discovery found.' })
      .nullable()
      .describe('OIDC: what discovery found (not stored)'),
    saml: z
      .object({
        entityId: z.string().describe('The IdP’s entity ID.'),
        ssoUrl: z.string().describe('The IdP’s SSO URL.'),
        certificateExpiresAt: timestamp().describe('When the IdP’s signing certificate expires.'),
      })
      .meta({ title: 'SsoSamlTest', description: 'The SAML configuration a test checked.' })
      .nullable()
      .describe('SAML: the configuration that was checked'),
  })
  .meta({ title: 'SsoProviderTestResult', description: 'A failed test is an error (OIDC discovery failed, Provider is not fully configured).' });
export type SsoProviderTestResult = z.output<typeof SsoProviderTestResultSchema> & { success: true; endpoints: OidcEndpoints | null };

/**
 * OIDC: runs discovery against the issuer and reports the endpoints (nothing is stored). SAML: checks
 * that entity id, SSO URL and a valid certificate are set. Failures answer 400 and are audited too.
 */
export async function testSsoProvider(ctx: RequestContext, id: string): Promise<SsoProviderTestResult> {
  const provider = await loadProvider(ctx, id, 'organizations:write', true);
  let outcome: SsoProviderTestResult | AppError;
  try {
    outcome = provider.type === 'oidc' ? await testOidc(ctx, provider) : testSaml(provider);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    outcome = error;
  }
  // Outside any transaction, so that a failed test is on record even though the request fails.
  await recordAudit(ctx, {
    action: 'sso.provider.test',
    resourceType: 'sso_provider',
    resourceId: provider.id,
    orgId: provider.orgId,
    result: outcome instanceof AppError ? 'failure' : 'success',
    details: { type: provider.type, ...(outcome instanceof AppError ? { error: outcome.message } : {}) },
  });
  if (outcome instanceof AppError) throw outcome;
  return outcome;
}

async function testOidc(ctx: RequestContext, provider: SsoProvider): Promise<SsoProviderTestResult> {
  if (!provider.issuer) throw badRequest('Provider is not fully configured', { missing: ['issuer'] });
  try {
    return { success: true, type: 'oidc', endpoints: await discoverOidcEndpoints(provider.issuer, idpFetch(ctx.runtime.config)), saml: null };
  } catch (error) {
    throw badRequest('OIDC discovery failed', { reason: (error as Error).message });
  }
}

function testSaml(provider: SsoProvider): SsoProviderTestResult {
  const missing = (['entityId', 'ssoUrl', 'certificate'] as const).filter((k) => !provider[k]);
  if (missing.length) throw badRequest('Provider is not fully configured', { missing });
  const expires = new Date(new X509Certificate(provider.certificate!).validTo);
  if (expires.getTime() <= Date.now()) throw badRequest('SAML certificate has expired', { certificateExpiresAt: expires.toISOString() });
  return {
    success: true,
    type: 'saml',
    endpoints: null,
    saml: { entityId: provider.entityId!, ssoUrl: provider.ssoUrl!, certificateExpiresAt: expires.toISOString() },
  };
}
