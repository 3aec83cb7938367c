import { EVERYONE, type PolicyRows } from './rows.js';

export const rows: PolicyRows = {
  listWebhooks: { orgQuery: true, permission: 'organizations:read', request: () => ({ method: 'get', path: '/webhooks' }), ok: 200, may: EVERYONE },
};
