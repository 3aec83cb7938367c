import { EVERYONE, type PolicyRows } from './rows.js';

// Writes need a script, a catalog version, a policy or an agent build of the organization first:
// test/deployments.test.ts checks them (viewers 403, technicians allowed).
export const rows: PolicyRows = {
  listDeployments: { orgQuery: true, permission: 'deployments:read', request: () => ({ method: 'get', path: '/deployments' }), ok: 200, may: EVERYONE },
};
