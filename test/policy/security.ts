import { EVERYONE, type PolicyRows } from './rows.js';

// The security routes' rows: threats and scans first (security:write's act on a device or threat, none here), then posture, policies and recommendations.
export const rows: PolicyRows = {
  listSecurityThreats: { orgQuery: true, permission: 'security:read', request: () => ({ method: 'get', path: '/security/threats' }), ok: 200, may: EVERYONE },
};
