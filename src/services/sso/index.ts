import { SamlAssertion, SamlRequest, SsoExchangeCode, SsoIdentity, SsoProvider, SsoSession } from '../../../entities/sso.js';
import { ssoRouter } from '../../../rest/sso.js';
import { SsoResolver } from '../../../resolvers/sso.js';
import { defineDomain } from '../../domain-module.js';
import { ssoAuditActions } from './events.js';

/** Single sign-on: OIDC and SAML providers, login, account links. */
export const ssoDomain = defineDomain({
  name: 'sso',
  entities: [SsoProvider, SsoIdentity, SsoSession, SsoExchangeCode, SamlRequest, SamlAssertion],
  rest: [ssoRouter],
  resolvers: [SsoResolver],
  auditActions: ssoAuditActions,
});
