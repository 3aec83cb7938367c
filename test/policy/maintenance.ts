import { EVERYONE, WORKERS, type PolicyRows } from './rows.js';

export const rows: PolicyRows = {
  listMaintenanceWindows: { orgQuery: true, permission: 'maintenance:read', request: () => ({ method: 'get', path: '/maintenance/windows' }), ok: 200, may: EVERYONE },
  createMaintenanceWindow: {
    permission: 'maintenance:write',
    request: ({ orgId }) => ({ method: 'post', path: '/maintenance/windows', body: { orgId, name: 'Patch night', timezone: 'UTC', startsAt: '2030-01-01T02:00:00', durationMinutes: 60, recurrence: { type: 'once' } } }),
    ok: 201,
    may: WORKERS,
  },
};
