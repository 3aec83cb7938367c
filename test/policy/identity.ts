import { ADMINS, EVERYONE, type PolicyRows } from './rows.js';

export const rows: PolicyRows = {
  listUsers: { orgQuery: true, permission: 'users:read', request: () => ({ method: 'get', path: '/users' }), ok: 200, may: EVERYONE },
  listRoles: { permission: 'roles:read', request: () => ({ method: 'get', path: '/roles' }), ok: 200, may: [...ADMINS, 'Organization Viewer', 'Partner Technician', 'Partner Viewer'] },
  listAccessReviews: { orgQuery: true, permission: 'access_reviews:read', request: () => ({ method: 'get', path: '/access-reviews' }), ok: 200, may: [...ADMINS, 'Organization Viewer', 'Partner Viewer'] },
};
