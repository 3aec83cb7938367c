import { LockMode, raw, type FilterQuery, type QBFilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { Device } from '../../../entities/device.js';
import { DeviceGroup, DeviceGroupLog, DeviceGroupMember, type GroupLogReason, type GroupMemberSource } from '../../../entities/device-group.js';
import type { RequestContext } from '../../auth/context.js';
import { escapeLike, containsPattern } from '../../db/like.js';
import { notFound } from '../../errors.js';
import { enumValues, uuid } from '../../validation.js';
import { DeviceStatusSchema, OsTypeSchema } from '../devices/api.js';
import { TagSchema } from './tags.js';

/*
 * The membership of device groups, materialized in device_group_member: a dynamic group's typed filter
 * and the reconciliation that keeps every group's rows in line with its rules, its pins and its devices.
 *
 * Every membership change of a group happens under that group's row lock, so a filter change and a
 * device event never interleave on one group, and each one re-reads what it acts on (at least once).
 */

export const RESOURCE = 'Group';

// ── the filter ──────────────────────────────────────────────────────────────────────────────────

/** Hostname characters and the two glob wildcards: never a regular expression, never a LIKE operator. */
const HOSTNAME_PATTERN = /^[A-Za-z0-9._*?-]+$/;
const MAX_FILTER_VALUES = 50;

const GroupFilterStatusSchema = DeviceStatusSchema.exclude(['decommissioned'])
  .meta({ title: 'GroupFilterStatus', description: 'A device status a dynamic group’s filter can match (decommissioned devices never match).' })
  .register(enumValues, { pending: 'Not reported yet.', online: 'Reporting on time.', offline: 'Missed its heartbeats.', updating: 'Installing a new agent version.', maintenance: 'Covered by an active maintenance occurrence.' });

const tagFilterShape = {
  any: z.array(TagSchema).min(1).max(MAX_FILTER_VALUES).optional().describe('the device carries at least one of these tags'),
  all: z.array(TagSchema).min(1).max(MAX_FILTER_VALUES).optional().describe('the device carries every one of these tags'),
};

/** One shape, two titled schemas: the input (strict: unknown criteria are refused) and the view, as GraphQL has input and object types. */
const filterShape = <T extends z.ZodType>(tags: T) => ({
  osTypes: z.array(OsTypeSchema).min(1).max(OsTypeSchema.options.length).optional().describe('any of these operating systems'),
  hostname: z
    .string()
    .trim()
    .min(1)
    .max(255)
    .regex(HOSTNAME_PATTERN, { message: 'may hold letters, digits, ".", "-", "_" and the wildcards * and ? only (no regular expressions)' })
    .optional()
    .describe('case-insensitive; with * (any run) or ? (one character) a glob over the whole hostname, otherwise a substring'),
  siteIds: z.array(uuid()).min(1).max(MAX_FILTER_VALUES).optional().describe("any of these sites of the group's organization"),
  tags: tags.optional().describe('tags the device carries'),
  agentVersions: z.array(z.string().trim().min(1).max(50)).min(1).max(MAX_FILTER_VALUES).optional().describe('any of these agent versions, exactly'),
  statuses: z.array(GroupFilterStatusSchema).min(1).max(GroupFilterStatusSchema.options.length).optional().describe('any of these statuses'),
});
const FILTER_DESCRIPTION = 'Every given criterion must hold (an empty filter matches every device of the group); decommissioned devices never match.';

/**
 * What a dynamic group matches. Values are data the service compares with operators it chooses:
 * none becomes a query operator, and the hostname pattern is a glob, never a regular expression.
 */
export const GroupFilterInputSchema = z
  .strictObject(filterShape(z.strictObject(tagFilterShape).meta({ title: 'GroupTagFilterInput', description: 'Tags a device must carry (any and all may be combined).' })))
  .meta({ title: 'GroupFilterInput', description: FILTER_DESCRIPTION });
export const GroupFilterSchema = z.object(filterShape(z.object(tagFilterShape).meta({ title: 'GroupTagFilter', description: 'Tags a device must carry.' }))).meta({ title: 'GroupFilter', description: FILTER_DESCRIPTION });
type GroupFilter = z.output<typeof GroupFilterSchema>;

const dedupe = <T>(values: T[] | undefined) => (values ? [...new Set(values)].sort() : undefined);

/** One stored form per meaning: lists deduplicated and sorted, absent criteria left out (so an unchanged filter compares equal). */
export function normalizeFilter(filter: GroupFilter): GroupFilter {
  const tags = filter.tags && { ...(filter.tags.any ? { any: dedupe(filter.tags.any) } : {}), ...(filter.tags.all ? { all: dedupe(filter.tags.all) } : {}) };
  const normalized: GroupFilter = {
    osTypes: dedupe(filter.osTypes),
    hostname: filter.hostname?.replace(/\*+/g, '*'),
    siteIds: dedupe(filter.siteIds?.map((id) => id.toLowerCase())),
    tags: tags && Object.keys(tags).length > 0 ? tags : undefined,
    agentVersions: dedupe(filter.agentVersions),
    statuses: dedupe(filter.statuses),
  };
  return Object.fromEntries(Object.entries(normalized).filter(([, v]) => v !== undefined)) as GroupFilter;
}

/** A dynamic group's filter as stored, parsed again (a row is data): only its known criteria, each checked. */
export function storedFilter(group: DeviceGroup): GroupFilter {
  return GroupFilterSchema.parse(group.filter ?? {});
}

/** `*` any run, `?` one character over the whole hostname; without either, a substring. Everything else matches literally. */
function hostnameLikePattern(pattern: string): string {
  if (!/[*?]/.test(pattern)) return containsPattern(pattern);
  return escapeLike(pattern).replace(/\*/g, '%').replace(/\?/g, '_');
}

/** The filter as conditions on devices: each value bound as a parameter, each operator chosen here. */
export function filterConditions(filter: GroupFilter): FilterQuery<Device>[] {
  const where: FilterQuery<Device>[] = [];
  if (filter.osTypes) where.push({ osType: { $in: filter.osTypes } });
  if (filter.hostname) where.push({ hostname: { $ilike: hostnameLikePattern(filter.hostname) } });
  if (filter.siteIds) where.push({ siteId: { $in: filter.siteIds } });
  if (filter.tags?.all) where.push({ tags: { $contains: filter.tags.all } } as FilterQuery<Device>);
  if (filter.tags?.any) where.push({ $or: filter.tags.any.map((tag) => ({ tags: { $contains: [tag] } })) } as FilterQuery<Device>);
  if (filter.agentVersions) where.push({ agentVersion: { $in: filter.agentVersions } });
  if (filter.statuses) where.push({ status: { $in: filter.statuses } });
  return where;
}

/** The devices a group may hold at all: its organization's (and site's), not decommissioned. */
export function groupScope(group: DeviceGroup): FilterQuery<Device> {
  return { orgId: group.orgId, ...(group.siteId ? { siteId: group.siteId } : {}), status: { $ne: 'decommissioned' } };
}

// ── materialized membership ─────────────────────────────────────────────────────────────────────

interface Cause {
  /** the user or API key acting; null for device changes */
  actorId: string | null;
  /** the reason of ordinary joins and leaves, when the operation names one (pin, unpin) */
  reason?: Extract<GroupLogReason, 'pin' | 'unpin'>;
}

export interface DeviceFacts {
  id: string;
  orgId: string;
  siteId: string | null;
  status: Device['status'];
  hostname: string;
}

export async function deviceFacts(tx: RequestContext, where: FilterQuery<Device>): Promise<DeviceFacts[]> {
  const rows = await tx.em.find(Device, where, { fields: ['id', 'orgId', 'siteId', 'status', 'hostname'], disableIdentityMap: true });
  return rows.map((d) => ({ id: d.id, orgId: d.orgId, siteId: d.siteId, status: d.status, hostname: d.hostname }));
}

/** Locks groups for a membership change, in id order so that writers locking several never deadlock; every writer of a group's membership holds its lock. */
function lockGroups(tx: RequestContext, where: FilterQuery<DeviceGroup>): Promise<DeviceGroup[]> {
  return tx.em.find(DeviceGroup, where, { lockMode: LockMode.PESSIMISTIC_WRITE, orderBy: { id: 'asc' }, refresh: true });
}

export async function lockGroup(tx: RequestContext, id: string): Promise<DeviceGroup> {
  const [group] = await lockGroups(tx, { id });
  if (!group) throw notFound(RESOURCE);
  return group;
}

/** Dynamic groups per statement when matching filters: keeps each statement's parameters well under PostgreSQL's limit. */
const MATCH_CHUNK = 100;

/**
 * The devices each dynamic group's filter matches within its scope (only `deviceIds`, when given):
 * one statement per MATCH_CHUNK groups, a `union all` of each group's conditions.
 */
async function filterMatches(tx: RequestContext, groups: DeviceGroup[], deviceIds: string[] | null): Promise<Map<string, Map<string, DeviceFacts>>> {
  const matched = new Map(groups.map((group) => [group.id, new Map<string, DeviceFacts>()]));
  for (let i = 0; i < groups.length; i += MATCH_CHUNK) {
    const params: unknown[] = [];
    const branches = groups.slice(i, i + MATCH_CHUNK).map((group) => {
      const devices = tx.em
        .createQueryBuilder(Device, 'd')
        .select(['id', 'orgId', 'siteId', 'status', 'hostname'])
        .where({ $and: [groupScope(group), ...filterConditions(storedFilter(group))] } as QBFilterQuery<Device>)
        .getKnexQuery()
        .toSQL();
      params.push(group.id, ...devices.bindings);
      return `select ?::uuid as group_id, m.* from (${devices.sql}) m`;
    });
    let union = `select * from (${branches.join(' union all ')}) u`;
    if (deviceIds) {
      union += ' where u.id in (?)';
      params.push(deviceIds);
    }
    const rows = (await tx.em.execute(union, params)) as {
      group_id: string;
      id: string;
      org_id: string;
      site_id: string | null;
      status: Device['status'];
      hostname: string;
    }[];
    for (const row of rows) matched.get(row.group_id)!.set(row.id, { id: row.id, orgId: row.org_id, siteId: row.site_id, status: row.status, hostname: row.hostname });
  }
  return matched;
}

/**
 * Brings locked groups' membership (of `deviceIds`, or of every device) in line with their rules:
 * devices that left a group's organization or site leave (`device_moved`, pins dropped),
 * decommissioned devices leave (`device_decommissioned`); in dynamic groups a device is a member when
 * pinned in, or matched by the filter and not pinned out. Each join and leave is logged once; running
 * it again changes nothing. A fixed number of statements whatever the number of devices, plus one per
 * MATCH_CHUNK dynamic groups, and the flush's batched writes.
 */
export async function reconcile(tx: RequestContext, groups: DeviceGroup[], deviceIds: string[] | null, cause: Cause): Promise<void> {
  if (groups.length === 0 || deviceIds?.length === 0) return;
  const groupIds = groups.map((group) => group.id);
  const rows = await tx.em.find(DeviceGroupMember, { groupId: { $in: groupIds }, ...(deviceIds ? { deviceId: { $in: deviceIds } } : {}) }, { refresh: true });
  const members = raw('select m.device_id from device_group_member m where m.group_id in (?)', [groupIds]);
  const facts = new Map((await deviceFacts(tx, { id: { $in: deviceIds ?? members } } as FilterQuery<Device>)).map((d) => [d.id, d]));
  const matches = await filterMatches(tx, groups.filter((group) => group.type === 'dynamic'), deviceIds);
  const rowsOf = new Map<string, DeviceGroupMember[]>(groupIds.map((id) => [id, []]));
  for (const row of rows) rowsOf.get(row.groupId)?.push(row);
  const now = tx.runtime.clock.now();
  for (const group of groups) reconcileRows(tx, group, rowsOf.get(group.id)!, facts, matches.get(group.id) ?? new Map<string, DeviceFacts>(), cause, now);
  await tx.em.flush();
}

/** One group's part of `reconcile`, in memory: which rows change, go or are created, and the log entries. */
function reconcileRows(tx: RequestContext, group: DeviceGroup, rows: DeviceGroupMember[], facts: Map<string, DeviceFacts>, matched: Map<string, DeviceFacts>, cause: Cause, now: Date): void {
  const log = (device: DeviceFacts, action: 'joined' | 'left', reason: GroupLogReason) =>
    tx.em.create(DeviceGroupLog, { groupId: group.id, deviceId: device.id, hostname: device.hostname, action, reason, actorId: cause.actorId, createdAt: now });
  const drop = (row: DeviceGroupMember) => tx.em.remove(row);

  for (const row of rows) {
    const device = facts.get(row.deviceId);
    const member = row.source !== null;
    if (!device || device.orgId !== group.orgId || (group.siteId && device.siteId !== group.siteId)) {
      if (member && device) log(device, 'left', 'device_moved');
      drop(row);
      continue;
    }
    if (device.status === 'decommissioned') {
      if (member) log(device, 'left', 'device_decommissioned');
      // A pin outlives decommissioning: a device enrolled again is back under it.
      if (group.type === 'static' || row.pin === null) drop(row);
      else Object.assign(row, { source: null, joinedAt: null });
      continue;
    }
    if (group.type === 'static') continue;
    const next: GroupMemberSource | null = row.pin === 'include' ? 'pin' : row.pin === 'exclude' ? null : matched.has(device.id) ? 'filter' : null;
    if (next === null) {
      if (member) log(device, 'left', cause.reason ?? (row.pin === 'exclude' ? 'pin' : 'filter'));
      if (row.pin === null) drop(row);
      else Object.assign(row, { source: null, joinedAt: null });
    } else if (!member) {
      log(device, 'joined', cause.reason ?? next);
      Object.assign(row, { source: next, joinedAt: now });
    } else if (row.source !== next) {
      row.source = next;
    }
  }
  const present = new Set(rows.map((r) => r.deviceId));
  for (const device of matched.values()) {
    if (present.has(device.id)) continue;
    tx.em.create(DeviceGroupMember, { groupId: group.id, deviceId: device.id, source: 'filter', joinedAt: now });
    log(device, 'joined', cause.reason ?? 'filter');
  }
}

/**
 * After devices changed (enrolled, updated, moved, online/offline, decommissioned): every group that
 * holds a row of one of them and every dynamic group that could match one is locked and brought in
 * line, all together. The outbox subscriber calls it as the system, for one event or a dispatcher
 * batch; it is idempotent, as delivery is at least once.
 */
export async function reconcileDeviceMemberships(tx: RequestContext, deviceIds: string[]): Promise<void> {
  const ids = [...new Set(deviceIds)];
  if (ids.length === 0) return;
  const candidates = raw(
    `select g.id from device_group g join device d on d.org_id = g.org_id and (g.site_id is null or g.site_id = d.site_id)
      where g.type = 'dynamic' and d.id in (?)
     union select m.group_id from device_group_member m where m.device_id in (?)`,
    [ids, ids],
  );
  await reconcile(tx, await lockGroups(tx, { id: { $in: candidates } } as FilterQuery<DeviceGroup>), ids, { actorId: null });
}
