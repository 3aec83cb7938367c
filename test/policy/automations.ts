import { EVERYONE, WORKERS, type PolicyRows } from './rows.js';

export const rows: PolicyRows = {
  listAutomations: { orgQuery: true, permission: 'automations:read', request: () => ({ method: 'get', path: '/automations' }), ok: 200, may: EVERYONE },
  createAutomation: {
    permission: 'automations:write',
    request: ({ orgId }) => ({ method: 'post', path: '/automations', body: { orgId, name: 'Nightly', trigger: { type: 'manual' }, target: { type: 'organization' }, steps: [{ type: 'wait', seconds: 60 }] } }),
    ok: 201,
    may: WORKERS,
  },
};
