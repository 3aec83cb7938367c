import { createTestApp, type TestApp } from './support/app.js';
import { rest } from './support/clients.js';
import { buildOrg, buildUser } from './support/factories.js';

// The role × action table: what each seeded role may do, written out by hand (not derived from the
// role definitions it checks), one request per permission, through the real REST door.

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

interface Action {
  permission: string;
  request: (ids: { orgId: string; partnerId: string }) => { method: 'get' | 'post' | 'patch' | 'delete'; path: string; body?: unknown };
  /** the success status */
  ok: number;
  /** a list a partner caller narrows to one organization with `?orgId=` */
  orgQuery?: true;
}

const ACTIONS: Record<string, Action> = {
  listSites: { orgQuery: true, permission: 'sites:read', request: () => ({ method: 'get', path: '/orgs/sites' }), ok: 200 },
  createSite: { permission: 'sites:write', request: ({ orgId }) => ({ method: 'post', path: '/orgs/sites', body: { orgId, name: 'Branch' } }), ok: 201 },
  listUsers: { orgQuery: true, permission: 'users:read', request: () => ({ method: 'get', path: '/users' }), ok: 200 },
  listOrganizations: { permission: 'organizations:read', request: () => ({ method: 'get', path: '/orgs/organizations' }), ok: 200 },
  renameOrganization: { permission: 'organizations:write', request: ({ orgId }) => ({ method: 'patch', path: `/orgs/organizations/${orgId}`, body: { name: 'Renamed' } }), ok: 200 },
  listRoles: { permission: 'roles:read', request: () => ({ method: 'get', path: '/roles' }), ok: 200 },
  readAudit: { orgQuery: true, permission: 'audit:read', request: () => ({ method: 'get', path: '/audit' }), ok: 200 },
  exportAudit: { permission: 'audit:export', request: () => ({ method: 'get', path: '/audit/export?format=json' }), ok: 200 },
  listAccessReviews: { orgQuery: true, permission: 'access_reviews:read', request: () => ({ method: 'get', path: '/access-reviews' }), ok: 200 },
  listWebhooks: { orgQuery: true, permission: 'organizations:read', request: () => ({ method: 'get', path: '/webhooks' }), ok: 200 },
};
type ActionName = keyof typeof ACTIONS;

const ALL = Object.keys(ACTIONS) as ActionName[];

/** The actions each seeded role may take; every other action in ACTIONS answers 403 FORBIDDEN. */
const ALLOWED: Record<string, { scope: 'organization' | 'partner'; may: ActionName[] }> = {
  'Organization Admin': { scope: 'organization', may: ALL },
  'Organization Technician': { scope: 'organization', may: ['listSites', 'listUsers', 'listOrganizations', 'listWebhooks'] },
  'Organization Viewer': { scope: 'organization', may: ['listSites', 'listUsers', 'listOrganizations', 'listRoles', 'readAudit', 'listAccessReviews', 'listWebhooks'] },
  'Partner Admin': { scope: 'partner', may: ALL },
  'Partner Technician': { scope: 'partner', may: ['listSites', 'createSite', 'listUsers', 'listOrganizations', 'listRoles', 'readAudit', 'listWebhooks'] },
  'Partner Viewer': { scope: 'partner', may: ['listSites', 'listUsers', 'listOrganizations', 'listRoles', 'readAudit', 'listAccessReviews', 'listWebhooks'] },
};

describe.each(Object.entries(ALLOWED))('%s', (roleName, { scope, may }) => {
  test.each(ALL)('%s', async (name) => {
    const org = await buildOrg(app);
    const user = await buildUser(app, scope === 'organization' ? { orgId: org.id, role: roleName } : { partnerId: org.partnerId, role: roleName });
    const action = ACTIONS[name]!;
    const { method, path, body } = action.request({ orgId: org.id, partnerId: org.partnerId });
    const api = rest(app, user.as);
    const scopedPath = scope === 'partner' && action.orgQuery ? `${path}${path.includes('?') ? '&' : '?'}orgId=${org.id}` : path;
    const res = method === 'get' || method === 'delete' ? await api[method](scopedPath) : await api[method](path, body);
    if (may.includes(name)) expect(res.status).toBe(action.ok);
    else expect([res.status, res.body?.code]).toEqual([403, 'FORBIDDEN']);
  });
});
