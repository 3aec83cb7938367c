import { randomUUID } from 'node:crypto';
import { EVERYONE, WORKERS, type PolicyRows } from './rows.js';

export const rows: PolicyRows = {
  listSoftwareCatalog: { orgQuery: true, permission: 'software:read', request: () => ({ method: 'get', path: '/software/catalog' }), ok: 200, may: EVERYONE },
  searchSoftwareCatalog: { orgQuery: true, permission: 'software:read', request: () => ({ method: 'get', path: '/software/catalog/search?q=app' }), ok: 200, may: EVERYONE },
  // Names are unique per organization: each request names its own.
  createSoftwareCatalogEntry: {
    permission: 'software:write',
    request: ({ orgId }) => ({ method: 'post', path: '/software/catalog', body: { orgId, name: `App ${randomUUID()}`, vendor: 'Example', category: 'utility' } }),
    ok: 201,
    may: WORKERS,
  },
  listSoftwareDeployments: { orgQuery: true, permission: 'software:read', request: () => ({ method: 'get', path: '/software/deployments' }), ok: 200, may: EVERYONE },
  listSoftwareInventory: { orgQuery: true, permission: 'software:read', request: () => ({ method: 'get', path: '/software/inventory' }), ok: 200, may: EVERYONE },
};
