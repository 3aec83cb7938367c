import type { AuditActionTable } from '../../events/types.js';

/** Tenancy audit actions, each with the event its mutation emits (null: recorded, not published). */
export const tenancyAuditActions = {
  'partner.create': 'partner.created',
  'partner.update': 'partner.updated',
  'partner.delete': 'partner.deleted',
  'organization.create': 'organization.created',
  'organization.update': 'organization.updated',
  'organization.delete': 'organization.deleted',
  'site.create': 'site.created',
  'site.update': 'site.updated',
  'site.delete': 'site.deleted',
} as const satisfies AuditActionTable;
type TenancyAuditActions = typeof tenancyAuditActions;

declare module '../../events/types.js' {
  interface DomainEventMap {
    'partner.created': { partnerId: string; name: string; changes: string[] };
    'partner.updated': { partnerId: string; name: string; changes: string[] };
    'partner.deleted': { partnerId: string; name: string };
    'organization.created': { orgId: string; partnerId: string; name: string; changes: string[] };
    'organization.updated': { orgId: string; partnerId: string; name: string; changes: string[] };
    'organization.deleted': { orgId: string; partnerId: string; name: string };
    'site.created': { siteId: string; orgId: string; name: string; changes: string[] };
    'site.updated': { siteId: string; orgId: string; name: string; changes: string[] };
    'site.deleted': { siteId: string; orgId: string; name: string };
  }
  interface AuditActionMap extends TenancyAuditActions {}
}
