import { ADMINS, EVERYONE, type PolicyRows } from './rows.js';

export const rows: PolicyRows = {
  listSites: { orgQuery: true, permission: 'sites:read', request: () => ({ method: 'get', path: '/orgs/sites' }), ok: 200, may: EVERYONE },
  createSite: { permission: 'sites:write', request: ({ orgId }) => ({ method: 'post', path: '/orgs/sites', body: { orgId, name: 'Branch' } }), ok: 201, may: [...ADMINS, 'Partner Technician'] },
  listOrganizations: { permission: 'organizations:read', request: () => ({ method: 'get', path: '/orgs/organizations' }), ok: 200, may: EVERYONE },
  renameOrganization: { permission: 'organizations:write', request: ({ orgId }) => ({ method: 'patch', path: `/orgs/organizations/${orgId}`, body: { name: 'Renamed' } }), ok: 200, may: ADMINS },
};
