import { z } from 'zod';
import type { SsoAttributeMapping } from '../../../entities/sso.js';
import type { RequestContext } from '../../auth/context.js';
import { authenticated } from '../../auth/policy.js';
import { enumValues } from '../../validation.js';

// Presets: ready-made configurations for common identity providers. Identifiers name the kind of IdP, not a product.

export const DEFAULT_SCOPES = 'openid profile email';
export const DEFAULT_MAPPING: SsoAttributeMapping = { email: 'email', name: 'name' };
const OIDC_MAPPING: SsoAttributeMapping = { email: 'email', name: 'name', firstName: 'given_name', lastName: 'family_name' };

export const SsoProviderTypeSchema = z
  .enum(['oidc', 'saml'])
  .meta({ title: 'SsoProviderType', description: 'The single sign-on protocol an identity provider speaks.' })
  .register(enumValues, { oidc: 'OpenID Connect.', saml: 'SAML 2.0.' });

export const SsoAttributeMappingViewSchema = z
  .object({
    email: z.string().describe('The claim or attribute holding the email address.'),
    name: z.string().describe('The claim or attribute holding the display name.'),
    firstName: z.string().optional().describe('used when the name claim is missing'),
    lastName: z.string().optional().describe('combined with firstName into a display name'),
    groups: z.string().optional().describe('a claim holding an array of strings'),
  })
  .meta({ title: 'SsoAttributeMapping', description: 'Which IdP claim holds each user field.' });

export const SsoPresetSchema = z
  .object({
    id: z.string().describe('The preset’s ID (what `preset` takes).'),
    name: z.string().describe('Its display name.'),
    type: SsoProviderTypeSchema.describe('Its protocol.'),
    issuerTemplate: z.string().nullable().describe('OIDC issuer URL template'),
    ssoUrlTemplate: z.string().nullable().describe('SAML SSO URL template'),
    scopes: z.string().nullable().describe('OIDC scopes it requests; null for SAML.'),
    attributeMapping: SsoAttributeMappingViewSchema.describe('OIDC: the claims mapped to user fields; SAML: the attribute URIs mapped automatically'),
  })
  .meta({ title: 'SsoPreset', description: 'A ready-made configuration for a common identity provider.' });
export type SsoPreset = z.output<typeof SsoPresetSchema>;

const SAML_MAPPING: SsoAttributeMapping = {
  email: 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress',
  name: 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name',
  firstName: 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/givenname',
  lastName: 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/surname',
  groups: 'http://schemas.microsoft.com/ws/2008/06/identity/claims/groups',
};
const oidcPreset = (id: string, name: string, issuerTemplate: string, scopes: string, mapping = OIDC_MAPPING): SsoPreset => ({
  id, name, type: 'oidc', issuerTemplate, ssoUrlTemplate: null, scopes, attributeMapping: mapping,
});
const samlPreset = (id: string, name: string, ssoUrlTemplate: string): SsoPreset => ({
  id, name, type: 'saml', issuerTemplate: null, ssoUrlTemplate, scopes: null, attributeMapping: SAML_MAPPING,
});

export const SSO_PRESETS: readonly SsoPreset[] = [
  oidcPreset('cloud_directory_oidc', 'Cloud directory provider (OIDC)', 'https://{idp_host}/{tenant}/v2.0', DEFAULT_SCOPES),
  oidcPreset('workforce_identity_oidc', 'Workforce identity provider (OIDC)', 'https://{domain}.{idp_host}', 'openid profile email groups', {
    ...OIDC_MAPPING,
    groups: 'groups',
  }),
  // This provider has one fixed issuer for every customer: the template is that issuer's host.
  oidcPreset('workspace_suite_oidc', 'Workspace suite provider (OIDC)', 'https://{idp_host}', DEFAULT_SCOPES),
  oidcPreset('identity_saas_oidc', 'Identity SaaS provider (OIDC)', 'https://{domain}.{idp_host}', DEFAULT_SCOPES),
  samlPreset('cloud_directory_saml', 'Cloud directory provider (SAML)', 'https://{idp_host}/{tenant}/saml2'),
  samlPreset('workforce_identity_saml', 'Workforce identity provider (SAML)', 'https://{domain}.{idp_host}/app/{appId}/sso/saml'),
  samlPreset('one_login_saml', 'One-login provider (SAML)', 'https://{domain}.{idp_host}/trust/saml2/http-post/sso/{appId}'),
  samlPreset('directory_federation_saml', 'Directory federation server (SAML)', 'https://{adfs-server}/adfs/ls'),
  samlPreset('workspace_suite_saml', 'Workspace suite provider (SAML)', 'https://{idp_host}/o/saml2/idp?idpid={idpId}'),
];

/** Static product knowledge, the same for every signed-in caller. */
export function listSsoPresets(ctx: RequestContext): SsoPreset[] {
  authenticated(ctx);
  return SSO_PRESETS.map((p) => ({ ...p, attributeMapping: { ...p.attributeMapping } }));
}
