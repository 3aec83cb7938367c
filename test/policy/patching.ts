import { randomUUID } from 'node:crypto';
import { EVERYONE, WORKERS, type PolicyRows } from './rows.js';

export const rows: PolicyRows = {
  listPatches: { orgQuery: true, permission: 'patches:read', request: () => ({ method: 'get', path: '/patches' }), ok: 200, may: EVERYONE },
  listPatchSources: { orgQuery: true, permission: 'patches:read', request: () => ({ method: 'get', path: '/patches/sources' }), ok: 200, may: EVERYONE },
  listPatchApprovals: { orgQuery: true, permission: 'patches:read', request: () => ({ method: 'get', path: '/patches/approvals' }), ok: 200, may: EVERYONE },
  // An id no one has: the writers are answered 200 with it under `failed`.
  bulkApprovePatches: { permission: 'patches:write', request: () => ({ method: 'post', path: '/patches/bulk-approve', body: { patchIds: ['00000000-0000-4000-8000-000000000000'] } }), ok: 200, may: WORKERS },
  listPatchPolicies: { orgQuery: true, permission: 'patches:read', request: () => ({ method: 'get', path: '/patch-policies' }), ok: 200, may: EVERYONE },
  // Names are unique per organization: each request names its own.
  createPatchPolicy: {
    permission: 'patches:write',
    request: ({ orgId }) => ({
      method: 'post',
      path: '/patch-policies',
      body: { orgId, name: `Critical ${randomUUID()}`, targets: {}, autoApprove: [{ severities: ['critical'] }], schedule: { type: 'immediate' }, rebootBehavior: 'never' },
    }),
    ok: 201,
    may: WORKERS,
  },
  getPatchCompliance: { orgQuery: true, permission: 'patches:read', request: () => ({ method: 'get', path: '/patches/compliance' }), ok: 200, may: EVERYONE },
  requestPatchComplianceReport: { orgQuery: true, permission: 'patches:read', request: () => ({ method: 'get', path: '/patches/compliance/report' }), ok: 202, may: EVERYONE },
};
