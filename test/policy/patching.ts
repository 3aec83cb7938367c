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
  listPatchJobs: { orgQuery: true, permission: 'patches:read', request: () => ({ method: 'get', path: '/patches/jobs' }), ok: 200, may: EVERYONE },
  // A device no one has: the writers are answered 202 with it under `skipped`.
  scanPatches: { permission: 'patches:write', request: () => ({ method: 'post', path: '/patches/scan', body: { deviceIds: ['00000000-0000-4000-8000-000000000000'] } }), ok: 202, may: WORKERS },
  // The permission is decided before the patch is looked up: the writers get past it to 404 for a patch no one has.
  rollbackPatch: { permission: 'patches:write', request: () => ({ method: 'post', path: '/patches/00000000-0000-4000-8000-000000000000/rollback', body: {} }), ok: 404, may: WORKERS },
  // The third-party catalog is the platform's: system-scope callers only (no seeded role here may), reads too.
  listThirdPartyCatalog: { permission: 'patches:read', request: () => ({ method: 'get', path: '/third-party-catalog' }), ok: 200, may: [] },
  createThirdPartyCatalogEntry: {
    permission: 'patches:write',
    request: () => ({
      method: 'post',
      path: '/third-party-catalog',
      body: { name: `App ${randomUUID()}`, vendor: 'Example', versions: [{ version: '1.0', installerUrl: 'https://example.test/app.msi', sha256: 'a'.repeat(64), detection: { type: 'package', name: 'app' } }] },
    }),
    ok: 201,
    may: [],
  },
  testThirdPartyCatalogEntry: {
    permission: 'patches:write',
    request: () => ({ method: 'post', path: `/third-party-catalog/${randomUUID()}/test`, body: { version: '1.0', deviceId: randomUUID() } }),
    ok: 202,
    may: [],
  },
  getPatchCompliance: { orgQuery: true, permission: 'patches:read', request: () => ({ method: 'get', path: '/patches/compliance' }), ok: 200, may: EVERYONE },
  requestPatchComplianceReport: { orgQuery: true, permission: 'patches:read', request: () => ({ method: 'get', path: '/patches/compliance/report' }), ok: 202, may: EVERYONE },
};
