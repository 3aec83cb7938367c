import type { Permission } from '../../src/auth/permissions.js';

/** One request per permission through the real REST door, and the seeded roles that may make it. */
export interface PolicyRow {
  permission: Permission;
  request: (ids: { orgId: string; partnerId: string }) => { method: 'get' | 'post' | 'patch' | 'delete'; path: string; body?: unknown };
  /** the success status */
  ok: number;
  /** a list a partner caller narrows to one organization with `?orgId=` */
  orgQuery?: true;
  /** the seeded roles that may (every other one answers 403 FORBIDDEN), written by hand, not derived from the role definitions */
  may: readonly SeededRole[];
}
export type PolicyRows = Record<string, PolicyRow>;

export type SeededRole = 'Organization Admin' | 'Organization Technician' | 'Organization Viewer' | 'Partner Admin' | 'Partner Technician' | 'Partner Viewer';
export const ADMINS: readonly SeededRole[] = ['Organization Admin', 'Partner Admin'];
/** admins and technicians: the work on an organization's devices */
export const WORKERS: readonly SeededRole[] = [...ADMINS, 'Organization Technician', 'Partner Technician'];
export const EVERYONE: readonly SeededRole[] = [...WORKERS, 'Organization Viewer', 'Partner Viewer'];
