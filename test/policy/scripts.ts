import { EVERYONE, WORKERS, type PolicyRows } from './rows.js';

export const rows: PolicyRows = {
  listScripts: { orgQuery: true, permission: 'scripts:read', request: () => ({ method: 'get', path: '/scripts' }), ok: 200, may: EVERYONE },
  createScript: { permission: 'scripts:write', request: ({ orgId }) => ({ method: 'post', path: '/scripts', body: { orgId, name: 'Cleanup', language: 'bash', content: 'echo ok' } }), ok: 201, may: WORKERS },
};
