import type { Scope } from '../../entities/role.js';

/** Every permission a role can grant, as `resource: actions`. `GET /roles/permissions/available` serves this. */
export const PERMISSION_CATALOG = {
  partners: ['read', 'write', 'delete'],
  organizations: ['read', 'write', 'delete'],
  sites: ['read', 'write', 'delete'],
  users: ['read', 'write', 'delete'],
  roles: ['read', 'write', 'delete'],
  api_keys: ['read', 'write', 'delete'],
  access_reviews: ['read', 'write'],
  audit: ['read', 'export'],
  devices: ['read', 'write', 'delete', 'execute'],
  alerts: ['read', 'write'],
  maintenance: ['read', 'write'],
  scripts: ['read', 'write', 'execute'],
  automations: ['read', 'write', 'run'],
} as const satisfies Record<string, readonly string[]>;

type Catalog = typeof PERMISSION_CATALOG;
export type PermissionResource = keyof Catalog;
/** A permission a service checks: the compiler refuses one the catalog does not list. */
export type Permission = { [R in PermissionResource]: `${R}:${Catalog[R][number]}` }[PermissionResource];
type PermissionAction = Catalog[PermissionResource][number];
/** What a role may grant: a permission, or a wildcard over the catalog (`*`, `resource:*`, `*:action`). */
export type PermissionGrant = Permission | '*' | `${PermissionResource}:*` | `*:${PermissionAction}`;

export const ALL_PERMISSIONS: Permission[] = (Object.keys(PERMISSION_CATALOG) as PermissionResource[]).flatMap((resource) =>
  PERMISSION_CATALOG[resource].map((action) => `${resource}:${action}` as Permission),
);

/** `resource:action`, where either side of a granted entry may be `*` (and `*` alone grants everything). */
function permissionMatches(granted: string, needed: Permission): boolean {
  if (granted === '*' || granted === needed) return true;
  const [gr, ga] = granted.split(':');
  const [nr, na] = needed.split(':');
  return (gr === '*' || gr === nr) && (ga === '*' || ga === na);
}

export function hasPermission(granted: readonly string[], needed: Permission): boolean {
  return granted.some((g) => permissionMatches(g, needed));
}

/** A granted entry is valid when it names a catalog permission or a wildcard over catalog entries. */
export function isValidPermission(entry: string): boolean {
  if (entry === '*') return true;
  const [resource, action, extra] = entry.split(':');
  if (extra !== undefined || !resource || !action) return false;
  if (resource === '*') return action === '*' || ALL_PERMISSIONS.some((p) => p.endsWith(`:${action}`));
  const actions: readonly string[] | undefined = PERMISSION_CATALOG[resource as PermissionResource];
  return !!actions && (action === '*' || actions.includes(action));
}

// Every request expands its principal's grants (effective permissions, API key scopes); the few distinct
// grant lists of a deployment (its roles and key scopes) are expanded once each.
const EXPANDED_CACHE_SIZE = 1000;
const expanded = new Map<string, readonly Permission[]>();

/** The catalog permissions an entry set grants, expanded: used to check that a custom role only grants what its creator holds. */
export function expandPermissions(granted: readonly string[]): Permission[] {
  const key = granted.join('\n');
  let result = expanded.get(key);
  if (!result) {
    if (expanded.size >= EXPANDED_CACHE_SIZE) expanded.delete(expanded.keys().next().value!);
    result = Object.freeze(ALL_PERMISSIONS.filter((p) => hasPermission(granted, p)));
    expanded.set(key, result);
  }
  // Frozen: callers derive new lists from it (filter, Set) and never change it.
  return result as Permission[];
}

export interface SystemRoleSeed {
  id: string;
  name: string;
  scope: Scope;
  description: string;
  permissions: PermissionGrant[];
}

const orgWork: PermissionGrant[] = ['devices:*', 'alerts:*', 'maintenance:*', 'scripts:*', 'automations:*'];

/** Seeded on every start (ids fixed, permissions kept in step with this table). */
export const SYSTEM_ROLES: SystemRoleSeed[] = [
  { id: '00000000-0000-4000-8000-000000000001', name: 'Platform Admin', scope: 'system', description: 'Everything, everywhere', permissions: ['*'] },
  { id: '00000000-0000-4000-8000-000000000011', name: 'Partner Admin', scope: 'partner', description: 'Everything within the partner', permissions: ['*'] },
  {
    id: '00000000-0000-4000-8000-000000000012',
    name: 'Partner Technician',
    scope: 'partner',
    description: 'Works on devices of the partner’s organizations',
    permissions: ['organizations:read', 'sites:read', 'sites:write', 'users:read', 'roles:read', 'audit:read', ...orgWork],
  },
  { id: '00000000-0000-4000-8000-000000000013', name: 'Partner Viewer', scope: 'partner', description: 'Read-only', permissions: ['*:read'] },
  {
    id: '00000000-0000-4000-8000-000000000021',
    name: 'Organization Admin',
    scope: 'organization',
    description: 'Everything within the organization',
    permissions: [
      'organizations:read',
      'organizations:write',
      'sites:*',
      'users:*',
      'roles:*',
      'api_keys:*',
      'access_reviews:*',
      'audit:*',
      ...orgWork,
    ],
  },
  {
    id: '00000000-0000-4000-8000-000000000022',
    name: 'Organization Technician',
    scope: 'organization',
    description: 'Works on the organization’s devices',
    permissions: ['organizations:read', 'sites:read', 'users:read', ...orgWork],
  },
  { id: '00000000-0000-4000-8000-000000000023', name: 'Organization Viewer', scope: 'organization', description: 'Read-only', permissions: ['*:read'] },
];

export const PLATFORM_ADMIN_ROLE_ID = SYSTEM_ROLES[0]!.id;
