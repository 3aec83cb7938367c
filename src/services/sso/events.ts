import type { AuditActionTable } from '../../events/types.js';

/** SSO audit actions, each with the event its mutation emits (null: recorded, not published). */
export const ssoAuditActions = {
  'sso.provider.create': 'sso_provider.created',
  'sso.provider.update': 'sso_provider.updated',
  'sso.provider.delete': 'sso_provider.deleted',
  'sso.provider.status.update': 'sso_provider.status_changed',
  'sso.provider.test': null,
  'sso.identity.link': null,
  'sso.identity.link.start': null,
} as const satisfies AuditActionTable;
type SsoAuditActions = typeof ssoAuditActions;

declare module '../../events/types.js' {
  interface DomainEventMap {
    'sso_provider.created': { providerId: string; name: string; type: string };
    'sso_provider.updated': { providerId: string; name: string; changes: string[] };
    'sso_provider.deleted': { providerId: string; name: string };
    'sso_provider.status_changed': { providerId: string; from: string; to: string };
  }
  interface AuditActionMap extends SsoAuditActions {}
}
