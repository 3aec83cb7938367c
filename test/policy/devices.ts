import { EVERYONE, WORKERS, type PolicyRows } from './rows.js';

export const rows: PolicyRows = {
  listDevices: { permission: 'devices:read', request: () => ({ method: 'get', path: '/devices' }), ok: 200, may: EVERYONE },
  createEnrollmentKey: { permission: 'devices:write', request: ({ orgId }) => ({ method: 'post', path: '/enrollment-keys', body: { orgId, name: 'Branch' } }), ok: 201, may: WORKERS },
};
