import { EVERYONE, WORKERS, type PolicyRows } from './rows.js';

export const rows: PolicyRows = {
  listAlertChannels: { orgQuery: true, permission: 'alerts:read', request: () => ({ method: 'get', path: '/alerts/channels' }), ok: 200, may: EVERYONE },
  createAlertChannel: {
    permission: 'alerts:write',
    request: ({ orgId }) => ({ method: 'post', path: '/alerts/channels', body: { orgId, name: 'On call', type: 'email', config: { to: ['oncall@example.test'] } } }),
    ok: 201,
    may: WORKERS,
  },
  listAlertPolicies: { orgQuery: true, permission: 'alerts:read', request: () => ({ method: 'get', path: '/alerts/policies' }), ok: 200, may: EVERYONE },
  createAlertPolicy: { permission: 'alerts:write', request: ({ orgId }) => ({ method: 'post', path: '/alerts/policies', body: { orgId, name: 'Critical', severities: ['critical'], channelIds: [] } }), ok: 201, may: WORKERS },
  listAlerts: { orgQuery: true, permission: 'alerts:read', request: () => ({ method: 'get', path: '/alerts' }), ok: 200, may: EVERYONE },
  listAlertRules: { orgQuery: true, permission: 'alerts:read', request: () => ({ method: 'get', path: '/alerts/rules' }), ok: 200, may: EVERYONE },
  createAlertRule: {
    permission: 'alerts:write',
    request: ({ orgId }) => ({ method: 'post', path: '/alerts/rules', body: { orgId, name: 'Offline', targetType: 'organization', targetId: orgId, conditions: [{ type: 'offline' }], severity: 'high' } }),
    ok: 201,
    may: WORKERS,
  },
};
