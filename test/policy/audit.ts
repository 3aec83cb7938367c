import { ADMINS, type PolicyRows } from './rows.js';

export const rows: PolicyRows = {
  readAudit: { orgQuery: true, permission: 'audit:read', request: () => ({ method: 'get', path: '/audit' }), ok: 200, may: [...ADMINS, 'Organization Viewer', 'Partner Technician', 'Partner Viewer'] },
  exportAudit: { permission: 'audit:export', request: () => ({ method: 'get', path: '/audit/export?format=json' }), ok: 200, may: ADMINS },
};
