import { randomUUID } from 'node:crypto';
import { EVERYONE, WORKERS, type PolicyRows } from './rows.js';

export const rows: PolicyRows = {
  listConfigurationPolicies: { orgQuery: true, permission: 'policies:read', request: () => ({ method: 'get', path: '/policies' }), ok: 200, may: EVERYONE },
  configurationPolicyComplianceStats: { orgQuery: true, permission: 'policies:read', request: () => ({ method: 'get', path: '/policies/compliance/stats' }), ok: 200, may: EVERYONE },
  configurationPolicyComplianceSummary: { orgQuery: true, permission: 'policies:read', request: () => ({ method: 'get', path: '/policies/compliance/summary' }), ok: 200, may: EVERYONE },
  createConfigurationPolicy: {
    permission: 'policies:write',
    request: ({ orgId }) => ({ method: 'post', path: '/policies', body: { orgId, name: `Baseline ${randomUUID()}`, targets: {}, rules: [{ type: 'disk_encryption' }] } }),
    ok: 201,
    may: WORKERS,
  },
};
