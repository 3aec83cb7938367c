import { AuditLog } from '../../../entities/audit-log.js';
import { auditRouter } from '../../../rest/audit.js';
import { AuditResolver } from '../../../resolvers/audit.js';
import { defineDomain } from '../../domain-module.js';
import { auditAuditActions } from './events.js';

const permissions = {
  audit: ['read', 'export'],
} as const;
type AuditPermissions = typeof permissions;
declare module '../../auth/permissions.js' {
  interface PermissionCatalog extends AuditPermissions {}
}

/** The hash-chained audit log: the write path every domain records through, the log API, exports and reports. */
export const auditDomain = defineDomain({
  name: 'audit',
  entities: [AuditLog],
  rest: [auditRouter],
  resolvers: [AuditResolver],
  auditActions: auditAuditActions,
  permissions,
});
