import { LockMode, type EntityManager, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { Device } from '../../../entities/device.js';
import { DeviceGroup } from '../../../entities/device-group.js';
import { Site } from '../../../entities/site.js';
import type { RequestContext } from '../../auth/context.js';
import { tenantSql, tenantWhere, visibleSiteIds } from '../../auth/policy.js';
import { AppError, forbidden, notFound } from '../../errors.js';
import { uuid } from '../../validation.js';
import { uuidArray } from '../../db/arrays.js';
import { DeviceStatusSchema, OsTypeSchema } from './devices.js';

/*
 * Which devices something targets (alert rules and policies, automations, maintenance windows,
 * script executions, and whatever targets devices next), said one way and decided one way.
 *
 * A target is an organization's devices named by any of its selectors (a union): the devices of
 * `siteIds`, the current members of `groupIds`, the devices `deviceIds` lists and the devices that
 * carry any of `tags`; no selector at all means every device of the organization. `filter` then
 * narrows whatever the selectors chose (every criterion given must hold).
 */

const MAX_IDS = 500;
const ids = z.array(uuid()).max(MAX_IDS);

export const TargetFilterSchema = z
  .strictObject({
    osTypes: z.array(OsTypeSchema).min(1).optional().describe('only devices of these operating systems'),
    statuses: z.array(DeviceStatusSchema).min(1).optional().describe('only devices in these statuses'),
  })
  .describe('narrows the devices the selectors chose; every criterion given must hold');

/** Lower-cased, deduplicated and sorted; an empty list names nothing and is dropped. */
function normalized<T extends string>(values: readonly T[] | undefined, lower: boolean): T[] | undefined {
  if (!values || values.length === 0) return undefined;
  return [...new Set(values.map((v) => (lower ? (v.toLowerCase() as T) : v)))].sort();
}

export const TargetSchema = z
  .strictObject({
    orgId: uuid().describe('the organization whose devices are targeted'),
    siteIds: ids.optional().describe('the devices of these sites'),
    groupIds: ids.optional().describe('the current members of these device groups'),
    deviceIds: ids.optional().describe('these devices'),
    tags: z.array(z.string().trim().min(1).max(100)).max(100).optional().describe('the devices carrying any of these tags'),
    filter: TargetFilterSchema.optional(),
  })
  .transform((t): Target => {
    const filter = t.filter && dropUndefined({ osTypes: normalized(t.filter.osTypes, false), statuses: normalized(t.filter.statuses, false) });
    return dropUndefined({
      orgId: t.orgId.toLowerCase(),
      siteIds: normalized(t.siteIds, true),
      groupIds: normalized(t.groupIds, true),
      deviceIds: normalized(t.deviceIds, true),
      tags: normalized(t.tags, false),
      filter: filter && Object.keys(filter).length > 0 ? filter : undefined,
    });
  })
  .describe('The devices something targets: of one organization, those named by any selector (all of them when none is given), narrowed by the filter.');
export type TargetInput = z.input<typeof TargetSchema>;
/** A target in its normal form: each list given is non-empty, lower-cased (ids), deduplicated and sorted. */
export interface Target {
  orgId: string;
  siteIds?: string[];
  groupIds?: string[];
  deviceIds?: string[];
  tags?: string[];
  filter?: z.output<typeof TargetFilterSchema>;
}

function dropUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/** A target in its normal form (ids lower-cased, deduplicated and sorted, empty lists dropped); a malformed one throws. */
export function toTarget(input: TargetInput): Target {
  return TargetSchema.parse(input);
}

/** Whether the target names no selector: every device of its organization (narrowed by its filter). */
export function isOrganizationWide(target: Target): boolean {
  return !target.siteIds && !target.groupIds && !target.deviceIds && !target.tags;
}

// ── group membership, answered by the groups domain ─────────────────────────────────────────────

/**
 * What targeting asks of the groups domain. Groups sit above devices (they import this domain's
 * api), so the groups domain implements this and the wiring installs it at start (`installDomains`).
 */
export interface GroupMembership {
  /** A condition on devices: current members of any of the groups. */
  membersWhere(groupIds: readonly string[]): FilterQuery<Device>;
  /** The groups the device is a member of now. */
  groupIdsOf(em: EntityManager, deviceId: string): Promise<string[]>;
}

let membership: GroupMembership | null = null;

export function installGroupMembership(groups: GroupMembership): void {
  membership = groups;
}

function groups(): GroupMembership {
  if (!membership) throw new Error('group membership not installed (installDomains)');
  return membership;
}

/** The groups `deviceId` is a member of now, for `matches`. */
export async function deviceGroupIds(em: EntityManager, deviceId: string): Promise<string[]> {
  return groups().groupIdsOf(em, deviceId);
}

// ── deciding and evaluating ─────────────────────────────────────────────────────────────────────

/**
 * The caller may aim at the target: every site, group and device it names is its organization's and
 * visible to the caller (404 `Site|Group|Device not found` otherwise, as another tenant's: the same
 * answer whether the id is another organization's or outside the caller's sites). Users limited to
 * some sites target only within them: an organization-wide target, tags (which reach every site) or
 * a group of the whole organization reach devices they cannot see (403 for the first two, 404 for
 * the group, as a group they cannot see). Answers the one site the whole target lies in, or null.
 * The caller has already decided on the organization itself (`authorize`). `stored`: the target of a
 * row being changed or shown, which holds only users limited to some sites (what it names may have
 * been deleted since, which must not lock anyone out).
 */
export async function checkTargets(ctx: RequestContext, target: Target, options: { stored?: boolean } = {}): Promise<{ siteId: string | null }> {
  const { orgId } = target;
  const allowed = visibleSiteIds(ctx, orgId);
  if (options.stored && !allowed) return { siteId: null };
  if (allowed && (isOrganizationWide(target) || target.tags)) throw forbidden('Users limited to some sites must target sites, groups or devices of their sites');
  const within = (siteId: string | null) => !allowed || (siteId !== null && allowed.includes(siteId));
  const [sites, groupRows, devices] = await Promise.all([
    target.siteIds ? ctx.em.find(Site, { id: { $in: target.siteIds }, orgId }, { fields: ['id'] }) : [],
    target.groupIds ? ctx.em.find(DeviceGroup, { id: { $in: target.groupIds }, orgId }, { fields: ['id', 'siteId'] }) : [],
    target.deviceIds ? ctx.em.find(Device, { id: { $in: target.deviceIds }, orgId }, { fields: ['id', 'siteId'] }) : [],
  ]);
  const check = (wanted: string[] | undefined, found: { siteId: string | null }[], resource: string) => {
    if (wanted && (found.length !== wanted.length || !found.every((row) => within(row.siteId)))) throw notFound(resource);
  };
  check(target.siteIds, sites.map((s) => ({ siteId: s.id })), 'Site');
  check(target.groupIds, groupRows, 'Group');
  check(target.deviceIds, devices, 'Device');
  if (isOrganizationWide(target) || target.tags) return { siteId: null };
  const reached = new Set<string | null>([...(target.siteIds ?? []), ...groupRows.map((g) => g.siteId), ...devices.map((d) => d.siteId)]);
  return { siteId: reached.size === 1 ? [...reached][0]! : null };
}

/** `checkTargets`' decision on a stored target as a boolean, for what only callers who may aim at the whole target may do or see. */
export async function mayTarget(ctx: RequestContext, target: Target): Promise<boolean> {
  try {
    await checkTargets(ctx, target, { stored: true });
    return true;
  } catch (error) {
    if (error instanceof AppError && error.status < 500) return false;
    throw error;
  }
}

/** The target's devices as a query condition (no access decision: combine it with the caller's `tenantWhere`). */
export function deviceWhere(target: Target): FilterQuery<Device> {
  const chosen: FilterQuery<Device>[] = [];
  if (target.siteIds) chosen.push({ siteId: { $in: target.siteIds } });
  if (target.groupIds) chosen.push(groups().membersWhere(target.groupIds));
  if (target.deviceIds) chosen.push({ id: { $in: target.deviceIds } });
  if (target.tags) chosen.push({ $or: target.tags.map((tag) => ({ tags: { $contains: [tag] } })) } as FilterQuery<Device>);
  const where: FilterQuery<Device>[] = [{ orgId: target.orgId }];
  if (chosen.length > 0) where.push({ $or: chosen });
  if (target.filter?.osTypes) where.push({ osType: { $in: target.filter.osTypes } });
  if (target.filter?.statuses) where.push({ status: { $in: target.filter.statuses } });
  return { $and: where };
}

/** Which devices another domain reads: a target's, or these ids; `active` leaves decommissioned devices out. */
export interface DeviceSelection {
  target?: Target;
  ids?: readonly string[];
  active?: boolean;
}

type DeviceColumn = Exclude<keyof Device & string, 'groups' | 'inventory'>;

interface FindDevicesOptions<F> {
  /** `all`: every device of the selection, where the caller has already decided (a job's own reach, a row it holds); else those the caller sees */
  scope?: 'caller' | 'all';
  fields?: readonly F[];
  orderBy?: 'hostname' | 'id';
  limit?: number;
  /** row locks in the caller's transaction, rows read afresh */
  lock?: boolean;
  /** rows read afresh and kept out of the identity map (long-lived contexts; always so with `fields`) */
  detached?: boolean;
}

/**
 * Other domains' one way to read devices: those of the selection that the caller sees (tenant and
 * site limits), by hostname (or id).
 */
export async function findDevices<F extends DeviceColumn = never>(
  ctx: RequestContext,
  selection: DeviceSelection,
  options: FindDevicesOptions<F> = {},
): Promise<([F] extends [never] ? Device : Pick<Device, F | 'id'>)[]> {
  const where: FilterQuery<Device>[] = [(options.scope !== 'all' && (await tenantWhere<Device>(ctx, { org: 'orgId', site: 'siteId' }))) || {}];
  if (selection.target) where.push(deviceWhere(selection.target));
  if (selection.ids) where.push({ id: { $in: selection.ids.map((id) => id.toLowerCase()) } });
  if (selection.active) where.push({ status: { $ne: 'decommissioned' } });
  const orderBy = options.orderBy === 'id' ? { id: 'asc' as const } : { hostname: 'asc' as const, id: 'asc' as const };
  const found = await ctx.em.find(Device, { $and: where }, {
    orderBy,
    ...(options.fields && { fields: [...options.fields] as never }),
    ...(!options.lock && (options.fields || options.detached) && { disableIdentityMap: true }),
    ...(options.limit !== undefined && { limit: options.limit }),
    ...(options.lock && { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true }),
  });
  return found as never;
}

/**
 * For callers limited to some sites: a condition on another table's device column keeping the devices
 * of those sites only (`null` for everyone else, who sees the whole organization's devices). Other
 * domains' aggregates over their per-device rows (a patch's counts) use it instead of reading `device`.
 */
export function siteLimitedDevicesSql(ctx: RequestContext, deviceColumn: string): { sql: string; params: unknown[] } | null {
  const siteIds = visibleSiteIds(ctx);
  if (siteIds === null) return null;
  return { sql: `${deviceColumn} in (select d.id from device d where d.site_id = any(?::uuid[]))`, params: [uuidArray(siteIds)] };
}

/**
 * A condition on another table's device column keeping the devices the caller sees (tenant and site
 * limits), narrowed to an organization or a site when asked: other domains' aggregates over their
 * per-device rows (the fleet's software) use it instead of joining `device`.
 */
export async function visibleDevicesSql(ctx: RequestContext, deviceColumn: string, narrow: { orgId?: string; siteId?: string } = {}): Promise<{ sql: string; params: unknown[] }> {
  const tenant = await tenantSql(ctx, { org: 'd.org_id', site: 'd.site_id', requestedOrgId: narrow.orgId });
  const conditions = tenant ? [tenant.sql] : [];
  const params = tenant ? [...tenant.params] : [];
  if (narrow.siteId) {
    conditions.push('d.site_id = ?');
    params.push(narrow.siteId);
  }
  return { sql: `${deviceColumn} in (select d.id from device d where ${conditions.length > 0 ? conditions.join(' and ') : 'true'})`, params };
}

/** What `matches` reads of a device; `id` null for something about no one device (an alert), matched by its organization and site. */
export interface TargetedDevice {
  id: string | null;
  orgId: string;
  siteId: string | null;
  tags?: readonly string[];
  osType?: string | null;
  status?: string;
}

/**
 * Whether the device is a target, on arrival (a heartbeat, an alert): `groupIds` are the groups it is
 * a member of now (`deviceGroupIds`, asked only when the target names groups).
 */
export function matches(device: TargetedDevice, target: Target, groupIds: readonly string[] = []): boolean {
  if (device.orgId !== target.orgId) return false;
  const chosen =
    isOrganizationWide(target) ||
    (device.siteId !== null && !!target.siteIds?.includes(device.siteId)) ||
    (device.id !== null && !!target.deviceIds?.includes(device.id)) ||
    !!target.groupIds?.some((id) => groupIds.includes(id)) ||
    !!target.tags?.some((tag) => device.tags?.includes(tag));
  if (!chosen) return false;
  if (target.filter?.osTypes && !(device.osType && (target.filter.osTypes as readonly string[]).includes(device.osType))) return false;
  if (target.filter?.statuses && !(device.status && (target.filter.statuses as readonly string[]).includes(device.status))) return false;
  return true;
}
