import { randomUUID } from 'node:crypto';
import { EVERYONE, WORKERS, type PolicyRows } from './rows.js';

// Threats and scans first (security:write's act on a device or threat, none here), then posture, policies and recommendations.
export const rows: PolicyRows = {
  listSecurityThreats: { orgQuery: true, permission: 'security:read', request: () => ({ method: 'get', path: '/security/threats' }), ok: 200, may: EVERYONE },
  // Posture, policies and recommendations.
  listSecurityPolicies: { orgQuery: true, permission: 'security:read', request: () => ({ method: 'get', path: '/security/policies' }), ok: 200, may: EVERYONE },
  createSecurityPolicy: { permission: 'security:write', request: ({ orgId }) => ({ method: 'post', path: '/security/policies', body: { orgId, name: `Baseline ${randomUUID()}`, targets: {} } }), ok: 201, may: WORKERS },
  securityScoreBreakdown: { permission: 'security:read', request: ({ orgId }) => ({ method: 'get', path: `/security/score-breakdown?orgId=${orgId}` }), ok: 200, may: EVERYONE },
  securityTrends: { permission: 'security:read', request: ({ orgId }) => ({ method: 'get', path: `/security/trends?orgId=${orgId}` }), ok: 200, may: EVERYONE },
  listSecurityStatus: { orgQuery: true, permission: 'security:read', request: () => ({ method: 'get', path: '/security/status' }), ok: 200, may: EVERYONE },
  listSecurityPosture: { orgQuery: true, permission: 'security:read', request: () => ({ method: 'get', path: '/security/posture' }), ok: 200, may: EVERYONE },
  listSecurityFirewall: { orgQuery: true, permission: 'security:read', request: () => ({ method: 'get', path: '/security/firewall' }), ok: 200, may: EVERYONE },
  listSecurityEncryption: { orgQuery: true, permission: 'security:read', request: () => ({ method: 'get', path: '/security/encryption' }), ok: 200, may: EVERYONE },
  listSecurityPasswordPolicy: { orgQuery: true, permission: 'security:read', request: () => ({ method: 'get', path: '/security/password-policy' }), ok: 200, may: EVERYONE },
  listSecurityAdminAudit: { orgQuery: true, permission: 'security:read', request: () => ({ method: 'get', path: '/security/admin-audit' }), ok: 200, may: EVERYONE },
  securityDashboard: { orgQuery: true, permission: 'security:read', request: () => ({ method: 'get', path: '/security/dashboard' }), ok: 200, may: EVERYONE },
  listSecurityRecommendations: { orgQuery: true, permission: 'security:read', request: () => ({ method: 'get', path: '/security/recommendations' }), ok: 200, may: EVERYONE },
};
