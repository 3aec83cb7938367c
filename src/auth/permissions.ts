import type { Scope } from '../../entities/role.js';

/**
 * Every permission a role can grant, as `resource: actions`. Each domain's manifest declares its
 * resources (`permissions`) and adds them to this interface (`declare module '../../auth/permissions.js'`),
 * so a misspelt permission does not compile; the wiring installs the same tables at start
 * (`installPermissions`). `GET /roles/permissions/available` serves the catalog.
 */
export interface PermissionCatalog {}
export type PermissionTable = Record<string, readonly string[]>;

type Catalog = PermissionCatalog;
export type PermissionResource = keyof Catalog & string;
type ActionsOf<R extends PermissionResource> = Catalog[R] extends readonly string[] ? Catalog[R][number] : never;
/** A permission a service checks: the compiler refuses one the catalog does not list. */
export type Permission = { [R in PermissionResource]: `${R}:${ActionsOf<R>}` }[PermissionResource];
type PermissionAction = ActionsOf<PermissionResource>;
/** What a role may grant: a permission, or a wildcard over the catalog (`*`, `resource:*`, `*:action`). */
export type PermissionGrant = Permission | '*' | `${PermissionResource}:*` | `*:${PermissionAction}`;

interface InstalledCatalog {
  resources: Readonly<PermissionTable>;
  all: readonly Permission[];
  /** the resources the seeded technician and admin roles work on (`resource:*`) */
  orgWork: readonly PermissionResource[];
}
let installed: InstalledCatalog | null = null;

/** Installs the domains' permission tables, in the manifests' order (the wiring does, at start). A resource declared twice is a programming error. */
export function installPermissions(domains: readonly { permissions?: PermissionTable; orgWork?: readonly string[] }[]): void {
  const resources: PermissionTable = {};
  for (const domain of domains) {
    for (const [resource, actions] of Object.entries(domain.permissions ?? {})) {
      if (resources[resource]) throw new Error(`Permission resource declared twice: ${resource}`);
      resources[resource] = actions;
    }
  }
  const orgWork = domains.flatMap((d) => d.orgWork ?? []) as PermissionResource[];
  const unknown = orgWork.find((r) => !resources[r]);
  if (unknown) throw new Error(`orgWork names an undeclared resource: ${unknown}`);
  const all = Object.entries(resources).flatMap(([resource, actions]) => actions.map((action) => `${resource}:${action}` as Permission));
  installed = { resources: Object.freeze(resources), all: Object.freeze(all), orgWork: Object.freeze(orgWork) };
  expanded.clear();
}

function catalog(): InstalledCatalog {
  if (!installed) throw new Error('The permission catalog is not installed: start through src/domains.ts (installDomains)');
  return installed;
}

/** Every resource and its actions, in the manifests' order. */
export function permissionCatalog(): Readonly<PermissionTable> {
  return catalog().resources;
}

export function allPermissions(): readonly Permission[] {
  return catalog().all;
}

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
  if (resource === '*') return action === '*' || allPermissions().some((p) => p.endsWith(`:${action}`));
  const actions: readonly string[] | undefined = permissionCatalog()[resource];
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
    result = Object.freeze(allPermissions().filter((p) => hasPermission(granted, p)));
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

/** Seeded on every start (ids fixed, permissions kept in step with this table); technicians and admins work on every domain's `orgWork` resources. */
export function systemRoles(): SystemRoleSeed[] {
  const orgWork = catalog().orgWork.map((resource): PermissionGrant => `${resource}:*`);
  return [
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
}

export const PLATFORM_ADMIN_ROLE_ID = '00000000-0000-4000-8000-000000000001';
