import { raw, type FilterQuery } from '@mikro-orm/core';
import DataLoader from 'dataloader';
import { z } from 'zod';
import { Device } from '../../../entities/device.js';
import {
  DEVICE_GROUP_TYPES,
  DeviceGroup,
  DeviceGroupLog,
  DeviceGroupMember,
  GROUP_LOG_ACTIONS,
  GROUP_LOG_REASONS,
  GROUP_MEMBER_SOURCES,
  GROUP_PIN_MODES,
} from '../../../entities/device-group.js';
import type { RequestContext } from '../../auth/context.js';
import type { Loaders } from '../../auth/loaders.js';
import type { Permission } from '../../auth/permissions.js';
import { authorize, loadOwned, requirePrincipal, targetOrgId, tenantWhere, visibleSiteIds } from '../../auth/policy.js';
import { containsPattern } from '../../db/like.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest, notFound } from '../../errors.js';
import { MAX_LIMIT, PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { onePer } from '../../memo.js';
import { recordAudit } from '../audit/api.js';
import { applyChanges, providedFields } from '../shared/changes.js';
import { DeviceViewSchema, accessibleDevice, authorizeDevice, deviceViews, type DeviceView } from '../devices/api.js';
import { checkTargetSite, checkTargets, toTarget, type GroupMembership } from '../devices/api.js';
import { uniqueNameGuard } from '../shared/unique-name.js';
import { deviceFacts, filterConditions, GroupFilterInputSchema, GroupFilterSchema, groupScope, lockGroup, normalizeFilter, reconcile, RESOURCE, storedFilter, type DeviceFacts } from './group-membership.js';

/*
 * Device groups: `static` groups list their devices by hand; `dynamic` ones hold the devices their
 * typed filter matches, materialized in device_group_member and kept current on every group write
 * and, through the device-groups subscriber, on every device event. Pins keep a device in (or out
 * of) a dynamic group whatever the filter says. Joins and leaves are logged with their reason.
 */

// ── views ───────────────────────────────────────────────────────────────────────────────────────

const GroupTypeSchema = z
  .enum(DEVICE_GROUP_TYPES)
  .meta({ title: 'GroupType', description: 'How a group gets its devices.' })
  .register(enumValues, { static: 'Devices are added and removed by hand.', dynamic: 'Holds the devices its filter matches, kept current as devices change (pins aside).' });
const GroupPinModeSchema = z
  .enum(GROUP_PIN_MODES)
  .meta({ title: 'GroupPinMode', description: 'A pin on a device in a dynamic group.' })
  .register(enumValues, { include: 'A member whatever the filter says.', exclude: 'Never a member whatever the filter says.' });
const GroupMemberSourceSchema = z
  .enum(GROUP_MEMBER_SOURCES)
  .meta({ title: 'GroupMemberSource', description: 'Why a device is a member of a group.' })
  .register(enumValues, { manual: 'Added by hand (static group).', filter: 'The dynamic group’s filter matches it.', pin: 'Pinned in (include) against the filter.' });
const GroupLogActionSchema = z
  .enum(GROUP_LOG_ACTIONS)
  .meta({ title: 'GroupLogAction', description: 'A change of group membership.' })
  .register(enumValues, { joined: 'The device became a member.', left: 'The device stopped being a member.' });
const GroupLogReasonSchema = z
  .enum(GROUP_LOG_REASONS)
  .meta({ title: 'GroupLogReason', description: 'Why a device joined or left a group.' })
  .register(enumValues, {
    manual: 'Added or removed by hand.',
    filter: 'The filter, or the device, changed.',
    pin: 'A pin was set.',
    unpin: 'A pin was dropped.',
    device_moved: 'The device moved to another organization or site.',
    device_decommissioned: 'The device was decommissioned.',
  });

export const DeviceGroupViewSchema = z
  .object({
    id: uuid().describe('Unique ID.'),
    orgId: uuid().describe('The organization whose devices it holds.'),
    siteId: uuid().nullable().describe('a site-scoped group holds only devices of this site'),
    name: z.string().describe('Display name, unique within the organization.'),
    description: z.string().nullable().describe('What the group is for; null when none is set.'),
    type: GroupTypeSchema.describe('Static (devices by hand) or dynamic (devices its filter matches).'),
    filter: GroupFilterSchema.nullable().describe('dynamic groups: what they match; null for static groups'),
    deviceCount: z.number().int().describe('current members'),
    createdAt: timestamp().describe('When the group was created.'),
    updatedAt: timestamp().describe('When the group (its name, description or filter) last changed.'),
  })
  .meta({ title: 'DeviceGroup', description: 'A set of devices of one organization (optionally one site), static or dynamic.' });
export type DeviceGroupView = z.output<typeof DeviceGroupViewSchema>;
export const DeviceGroupPageSchema = pageSchema(DeviceGroupViewSchema, 'DeviceGroupPage');
/** A page of devices (a group's members, devices by tag). */
export const DevicePageSchema = pageSchema(DeviceViewSchema, 'DevicePage');

export const GroupMembershipSchema = z
  .object({
    groupId: uuid().describe('The group.'),
    deviceId: uuid().describe('The device.'),
    member: z.boolean().describe('Whether the device is a member now.'),
    source: GroupMemberSourceSchema.nullable().describe('why the device is a member: manual (static), filter, or pin'),
    pin: GroupPinModeSchema.nullable().describe('A pin keeping it in (include) or out (exclude); null for none.'),
    joinedAt: timestamp().nullable().describe('When it last joined; null when not a member.'),
  })
  .meta({ title: 'GroupMembership', description: 'A device’s standing in a group: whether it is a member, why, and any pin.' });
export type GroupMembershipView = z.output<typeof GroupMembershipSchema>;

const GroupLogEntrySchema = z
  .object({
    id: uuid().describe('Unique ID.'),
    groupId: uuid().describe('The group.'),
    deviceId: uuid().describe('The device.'),
    hostname: z.string().describe("the device's hostname when it happened"),
    action: GroupLogActionSchema.describe('Joined or left.'),
    reason: GroupLogReasonSchema.describe('Why.'),
    actorId: uuid().nullable().describe('the user or API key that caused it; null when a device change did'),
    createdAt: timestamp().describe('When it happened.'),
  })
  .meta({ title: 'GroupMembershipLogEntry', description: 'A device joining or leaving a group, and why.' });
export type GroupLogEntryView = z.output<typeof GroupLogEntrySchema>;
export const GroupLogPageSchema = pageSchema(GroupLogEntrySchema, 'GroupMembershipLogPage');

export const GroupPreviewSchema = z
  .object({
    count: z.number().int().describe('devices the group would hold'),
    devices: z.array(DeviceViewSchema).describe('the first of them by hostname, up to `limit`'),
    joining: z.number().int().describe('of those, devices not members now'),
    leaving: z.number().int().describe('current members the group would no longer hold'),
  })
  .meta({ title: 'GroupPreview', description: 'What a dynamic group would hold under a filter, changing nothing.' });
export type GroupPreview = z.output<typeof GroupPreviewSchema>;

export const AddGroupDevicesResultSchema = z
  .object({
    added: z.array(uuid()).describe('Devices that joined.'),
    alreadyMembers: z.array(uuid()).describe('Devices that were members already (unchanged).'),
    deviceCount: z.number().int().describe('How many members the group has now.'),
  })
  .meta({ title: 'GroupDevicesAdded', description: 'What adding devices to a static group did.' });
export type AddGroupDevicesResult = z.output<typeof AddGroupDevicesResultSchema>;

function groupView(group: DeviceGroup, deviceCount: number): DeviceGroupView {
  return {
    id: group.id,
    orgId: group.orgId,
    siteId: group.siteId,
    name: group.name,
    description: group.description,
    type: group.type,
    filter: group.type === 'dynamic' ? storedFilter(group) : null,
    deviceCount,
    createdAt: group.createdAt.toISOString(),
    updatedAt: group.updatedAt.toISOString(),
  };
}

function membershipView(groupId: string, deviceId: string, row: DeviceGroupMember | null): GroupMembershipView {
  return { groupId, deviceId, member: !!row?.source, source: row?.source ?? null, pin: row?.pin ?? null, joinedAt: row?.joinedAt?.toISOString() ?? null };
}

function logView(entry: DeviceGroupLog): GroupLogEntryView {
  return {
    id: entry.id,
    groupId: entry.groupId,
    deviceId: entry.deviceId,
    hostname: entry.hostname,
    action: entry.action,
    reason: entry.reason,
    actorId: entry.actorId,
    createdAt: entry.createdAt.toISOString(),
  };
}

async function memberCounts(ctx: RequestContext, groupIds: string[]): Promise<Map<string, number>> {
  if (groupIds.length === 0) return new Map();
  const rows = (await ctx.em.execute(`select group_id, count(*)::int as n from device_group_member where group_id in (?) and source is not null group by group_id`, [groupIds])) as {
    group_id: string;
    n: number;
  }[];
  return new Map(rows.map((r) => [r.group_id, r.n]));
}

interface DeviceGroupLoaders {
  groups: DataLoader<string, DeviceGroup[]>;
  counts: DataLoader<string, number>;
}

/** Per request (its Loaders): the loaders of `deviceGroups`, made on first use. */
const deviceGroupLoadersOf = onePer((_loaders: Loaders): { made?: DeviceGroupLoaders } => ({}));

function deviceGroupLoaders(ctx: RequestContext): DeviceGroupLoaders {
  const slot = deviceGroupLoadersOf(ctx.loaders);
  // No cache: a later mutation in the same request must not be answered from an earlier read.
  return (slot.made ??= {
    groups: new DataLoader((deviceIds) => groupsOfDevices(ctx, deviceIds), { cache: false }),
    counts: new DataLoader(
      async (groupIds) => {
        const counts = await memberCounts(ctx, [...groupIds]);
        return groupIds.map((id) => counts.get(id) ?? 0);
      },
      { cache: false },
    ),
  });
}

/** Each device's groups, by name: its memberships, then their groups. */
async function groupsOfDevices(ctx: RequestContext, deviceIds: readonly string[]): Promise<DeviceGroup[][]> {
  const members = await ctx.em.find(DeviceGroupMember, { deviceId: { $in: [...deviceIds] }, source: { $ne: null } }, { fields: ['groupId', 'deviceId'] });
  const groupIds = [...new Set(members.map((m) => m.groupId))];
  const groups = new Map((groupIds.length ? await ctx.em.find(DeviceGroup, { id: { $in: groupIds } }) : []).map((g) => [g.id, g]));
  return deviceIds.map((id) =>
    members
      .flatMap((m) => (m.deviceId === id && groups.has(m.groupId) ? [groups.get(m.groupId)!] : []))
      .sort((a, b) => a.name.localeCompare(b.name)),
  );
}

export const DeviceGroupsQuery = PageQuery.strict();
export type DeviceGroupsInput = z.input<typeof DeviceGroupsQuery>;

/**
 * A page of the groups a device the caller has been shown belongs to, by name (GraphQL
 * `Device.groups`). Request-scoped DataLoaders read the groups of a whole page of devices at once:
 * the memberships, the groups and their member counts, three statements however many devices. Users
 * limited to some sites see only the groups of their sites, as in `GET /groups`.
 */
export async function deviceGroupPage(ctx: RequestContext, device: Pick<DeviceView, 'id' | 'orgId' | 'siteId'>, rawQuery: DeviceGroupsInput): Promise<Page<DeviceGroupView>> {
  const query = parseInput(DeviceGroupsQuery, rawQuery);
  const loaders = deviceGroupLoaders(ctx);
  // Queued before the decision so that every device of a list joins one batch; nothing is answered unless the decision allows it.
  const loaded = loaders.groups.load(device.id);
  loaded.catch(() => {});
  await authorizeDevice(ctx, device, 'devices:read');
  const sites = visibleSiteIds(ctx, device.orgId);
  const groups = (await loaded).filter((g) => sites === null || (g.siteId !== null && sites.includes(g.siteId)));
  const { offset, limit } = pageOptions(query);
  const shown = groups.slice(offset, offset + limit);
  const counts = await loaders.counts.loadMany(shown.map((g) => g.id));
  return toPage(
    shown.map((g, i) => {
      const count = counts[i];
      return groupView(g, typeof count === 'number' ? count : 0);
    }),
    groups.length,
    query,
  );
}

async function viewOf(ctx: RequestContext, group: DeviceGroup): Promise<DeviceGroupView> {
  return groupView(group, (await memberCounts(ctx, [group.id])).get(group.id) ?? 0);
}

/** A group the caller may act on with `permission`; another tenant's group, an org-wide group for a site-limited user, or one of another site is 404. */
function accessibleGroup(ctx: RequestContext, id: string, permission: Permission): Promise<DeviceGroup> {
  return loadOwned(ctx, DeviceGroup, id, permission, { resource: RESOURCE });
}

/** The device rows of the group's members; `in (subquery)` keeps large groups to one parameter. */
function membersOf(groupId: string): FilterQuery<Device> {
  return groupMembership.membersWhere([groupId]);
}

/** Membership as the devices domain's targeting asks it (installed by the wiring: groups sit above devices). */
export const groupMembership: GroupMembership = {
  membersWhere: (groupIds) => ({ id: { $in: raw('select m.device_id from device_group_member m where m.group_id in (?) and m.source is not null', [[...groupIds]]) } }) as FilterQuery<Device>,
  groupIdsOf: async (em, deviceId) => {
    const rows = (await em.getConnection().execute('select group_id from device_group_member where device_id = ? and source is not null', [deviceId])) as { group_id: string }[];
    return rows.map((r) => r.group_id);
  },
};
// ── groups ──────────────────────────────────────────────────────────────────────────────────────

const groupName = z.string().trim().min(1).max(255).describe('Display name, unique within the organization: 1 to 255 characters, surrounding spaces trimmed.');
const groupDescription = z.string().trim().max(2000).nullable().optional().describe('What the group is for, up to 2000 characters; null clears it.');

export const CreateGroupSchema = z
  .strictObject({
    orgId: uuid().optional().describe('organization users: their own organization by default; others: required'),
    siteId: uuid().nullable().optional().describe('a site-scoped group holds only devices of this site; users limited to some sites must give one of theirs'),
    name: groupName,
    description: groupDescription,
    type: GroupTypeSchema.describe('Static (devices by hand) or dynamic (devices its filter matches).'),
    filter: GroupFilterInputSchema.optional().describe('dynamic groups only, and required for them'),
  }).describe('A new device group.');
export type CreateGroupInput = z.input<typeof CreateGroupSchema>;

export const UpdateGroupSchema = z
  .strictObject({
    name: groupName.optional(),
    description: groupDescription,
    filter: GroupFilterInputSchema.optional().describe('dynamic groups only: replaces the filter; membership is recomputed'),
  }).describe('Changes to a group; a field left out keeps its value.');
export type UpdateGroupInput = z.input<typeof UpdateGroupSchema>;

export const GroupListQuery = PageQuery.extend({
  orgId: uuid().optional().describe('Only groups of this organization.'),
  siteId: uuid().optional().describe('Only groups of this site.'),
  type: GroupTypeSchema.optional().describe('Only static or only dynamic groups.'),
  search: z.string().trim().min(1).max(255).optional().describe('part of the name'),
}).strict();
export type GroupListInput = z.input<typeof GroupListQuery>;

export async function listGroups(ctx: RequestContext, rawQuery: GroupListInput): Promise<Page<DeviceGroupView>> {
  const query = parseInput(GroupListQuery, rawQuery);
  await authorize(ctx, 'devices:read');
  const where: FilterQuery<DeviceGroup>[] = [(await tenantWhere<DeviceGroup>(ctx, { org: 'orgId', site: 'siteId', requestedOrgId: query.orgId })) ?? {}];
  if (query.siteId) where.push({ siteId: query.siteId });
  if (query.type) where.push({ type: query.type });
  if (query.search) where.push({ name: { $ilike: containsPattern(query.search) } });
  const [rows, total] = await ctx.em.findAndCount(DeviceGroup, { $and: where }, { orderBy: { name: 'asc', id: 'asc' }, ...pageOptions(query) });
  const counts = await memberCounts(
    ctx,
    rows.map((g) => g.id),
  );
  return toPage(
    rows.map((g) => groupView(g, counts.get(g.id) ?? 0)),
    total,
    query,
  );
}

export async function getGroup(ctx: RequestContext, id: string): Promise<DeviceGroupView> {
  return viewOf(ctx, await accessibleGroup(ctx, id, 'devices:read'));
}

const uniqueName = uniqueNameGuard('device_group_org_id_name_unique', 'A group');

export async function createGroup(ctx: RequestContext, rawInput: CreateGroupInput): Promise<DeviceGroupView> {
  const input = parseInput(CreateGroupSchema, rawInput);
  const orgId = await targetOrgId(ctx, input.orgId);
  const principal = await authorize(ctx, 'devices:write', { orgId, resource: 'Organization' });
  if (input.type === 'dynamic' && !input.filter) throw badRequest('filter: dynamic groups need a filter', [{ path: 'filter', message: 'dynamic groups need a filter' }]);
  if (input.type === 'static' && input.filter) throw badRequest('filter: static groups have no filter (add devices to them instead)', [{ path: 'filter', message: 'static groups have no filter' }]);
  const siteId = await checkTargetSite(ctx, orgId, input.siteId);
  const filter = input.filter && normalizeFilter(input.filter);
  // Sites a filter names must be ones the caller can see (404 otherwise, as another tenant's).
  if (filter?.siteIds) await checkTargets(ctx, toTarget({ orgId, siteIds: filter.siteIds }));
  return uniqueName(
    withTransaction(ctx, async (tx) => {
      const group = tx.em.create(DeviceGroup, { orgId, siteId, name: input.name, description: input.description ?? null, type: input.type, filter: filter ?? null, createdBy: principal.userId });
      await tx.em.flush();
      if (group.type === 'dynamic') await reconcile(tx, [group], null, { actorId: principal.id });
      await recordAudit(tx, {
        action: 'device_group.create',
        resourceType: 'device_group',
        resourceId: group.id,
        orgId,
        changes: providedFields({ ...input, orgId, siteId }),
        details: { name: group.name, type: group.type },
      });
      return viewOf(tx, group);
    }),
  );
}

/** Name and description; a dynamic group's filter, which recomputes its membership. Type and scope stay as created. */
export async function updateGroup(ctx: RequestContext, id: string, rawInput: UpdateGroupInput): Promise<DeviceGroupView> {
  const input = parseInput(UpdateGroupSchema, rawInput);
  const current = await accessibleGroup(ctx, id, 'devices:write');
  const principal = requirePrincipal(ctx);
  if (input.filter && current.type === 'static') throw badRequest('filter: static groups have no filter (add devices to them instead)', [{ path: 'filter', message: 'static groups have no filter' }]);
  const filter = input.filter && normalizeFilter(input.filter);
  if (filter?.siteIds) await checkTargets(ctx, toTarget({ orgId: current.orgId, siteIds: filter.siteIds }));
  return uniqueName(
    withTransaction(ctx, async (tx) => {
      const group = await lockGroup(tx, id);
      const changes = applyChanges(group, { name: input.name, description: input.description, filter });
      // A PATCH that changes nothing is not a mutation: no audit row, no recompute.
      if (changes.length === 0) return viewOf(tx, group);
      await tx.em.flush();
      if (changes.includes('filter')) await reconcile(tx, [group], null, { actorId: principal.id });
      await recordAudit(tx, { action: 'device_group.update', resourceType: 'device_group', resourceId: id, orgId: group.orgId, changes, details: { name: group.name } });
      return viewOf(tx, group);
    }),
  );
}

/** The group, its memberships, pins and log go; the devices stay. */
export async function deleteGroup(ctx: RequestContext, id: string): Promise<void> {
  const group = await accessibleGroup(ctx, id, 'devices:write');
  await withTransaction(ctx, async (tx) => {
    await lockGroup(tx, id);
    await tx.em.nativeDelete(DeviceGroup, { id });
    await recordAudit(tx, { action: 'device_group.delete', resourceType: 'device_group', resourceId: id, orgId: group.orgId, details: { name: group.name, type: group.type } });
  });
}

// ── members ─────────────────────────────────────────────────────────────────────────────────────

export const GroupDeviceListQuery = PageQuery.strict();
export type GroupDeviceListInput = z.input<typeof GroupDeviceListQuery>;

/** The group's current members the caller can see, by hostname. */
export async function listGroupDevices(ctx: RequestContext, groupId: string, rawQuery: GroupDeviceListInput): Promise<Page<DeviceView>> {
  const query = parseInput(GroupDeviceListQuery, rawQuery);
  const group = await accessibleGroup(ctx, groupId, 'devices:read');
  const visible = (await tenantWhere<Device>(ctx, { org: 'orgId', site: 'siteId' })) ?? {};
  const [rows, total] = await ctx.em.findAndCount(Device, { $and: [visible, membersOf(group.id)] }, { orderBy: { hostname: 'asc', id: 'asc' }, ...pageOptions(query) });
  return toPage(await deviceViews(ctx, rows), total, query);
}

export const AddGroupDevicesSchema = z
  .strictObject({ deviceIds: z.array(uuid()).min(1).max(MAX_LIMIT).describe(`1 to ${MAX_LIMIT} devices of the group's organization (and site)`) }).describe('Devices to add to a static group.');
export type AddGroupDevicesInput = z.input<typeof AddGroupDevicesSchema>;

/**
 * Devices that cannot join `group`: the caller cannot see them (404, as another tenant's), or they
 * are outside the group's organization or site, or decommissioned (400 naming them).
 */
async function checkJoinable(ctx: RequestContext, group: DeviceGroup, deviceIds: string[]): Promise<DeviceFacts[]> {
  const visible = (await tenantWhere<Device>(ctx, { org: 'orgId', site: 'siteId' })) ?? {};
  const devices = await deviceFacts(ctx, { $and: [visible, { id: { $in: deviceIds } }] });
  if (devices.length !== deviceIds.length) throw notFound('Device');
  const outside = devices.filter((d) => d.orgId !== group.orgId || (group.siteId && d.siteId !== group.siteId)).map((d) => d.id);
  if (outside.length > 0) {
    const where = group.siteId ? "the group's organization and site" : "the group's organization";
    throw badRequest(`Only devices of ${where} can join this group: ${outside.join(', ')}`, { deviceIds: outside });
  }
  const retired = devices.filter((d) => d.status === 'decommissioned').map((d) => d.id);
  if (retired.length > 0) throw badRequest(`Decommissioned devices cannot join groups: ${retired.join(', ')}`, { deviceIds: retired });
  return devices;
}

/** Adds devices to a static group (dynamic groups take devices through their filter, or pins). Devices already in it are left as they are. */
export async function addGroupDevices(ctx: RequestContext, groupId: string, rawInput: AddGroupDevicesInput): Promise<AddGroupDevicesResult> {
  const input = parseInput(AddGroupDevicesSchema, rawInput);
  const current = await accessibleGroup(ctx, groupId, 'devices:write');
  const principal = requirePrincipal(ctx);
  if (current.type === 'dynamic') throw badRequest('Devices join a dynamic group through its filter; pin a device to include it whatever the filter says');
  const deviceIds = [...new Set(input.deviceIds.map((id) => id.toLowerCase()))];
  const devices = await checkJoinable(ctx, current, deviceIds);
  return withTransaction(ctx, async (tx) => {
    const group = await lockGroup(tx, groupId);
    const existing = new Set((await tx.em.find(DeviceGroupMember, { groupId, deviceId: { $in: deviceIds } }, { refresh: true })).map((r) => r.deviceId));
    const now = tx.runtime.clock.now();
    const added: string[] = [];
    for (const device of devices) {
      if (existing.has(device.id)) continue;
      tx.em.create(DeviceGroupMember, { groupId, deviceId: device.id, source: 'manual', joinedAt: now });
      tx.em.create(DeviceGroupLog, { groupId, deviceId: device.id, hostname: device.hostname, action: 'joined', reason: 'manual', actorId: principal.id, createdAt: now });
      added.push(device.id);
    }
    await tx.em.flush();
    if (added.length > 0) {
      await recordAudit(tx, { action: 'device_group.member.add', resourceType: 'device_group', resourceId: groupId, orgId: group.orgId, details: { name: group.name, deviceIds: added } });
    }
    return { added, alreadyMembers: deviceIds.filter((id) => existing.has(id)), deviceCount: (await memberCounts(tx, [groupId])).get(groupId) ?? 0 };
  });
}

/** Takes a device out of a static group (404 when it is not a member). */
export async function removeGroupDevice(ctx: RequestContext, groupId: string, deviceId: string): Promise<void> {
  const current = await accessibleGroup(ctx, groupId, 'devices:write');
  const principal = requirePrincipal(ctx);
  const device = await accessibleDevice(ctx, deviceId, 'devices:write');
  if (current.type === 'dynamic') throw badRequest('Devices leave a dynamic group through its filter; pin a device with mode "exclude" to keep it out');
  await withTransaction(ctx, async (tx) => {
    const group = await lockGroup(tx, groupId);
    const row = await tx.em.findOne(DeviceGroupMember, { groupId, deviceId: device.id }, { refresh: true });
    if (!row?.source) throw notFound('Group member');
    tx.em.remove(row);
    tx.em.create(DeviceGroupLog, { groupId, deviceId: device.id, hostname: device.hostname, action: 'left', reason: 'manual', actorId: principal.id, createdAt: tx.runtime.clock.now() });
    await tx.em.flush();
    await recordAudit(tx, { action: 'device_group.member.remove', resourceType: 'device_group', resourceId: groupId, orgId: group.orgId, details: { name: group.name, deviceId: device.id } });
  });
}

// ── pins ────────────────────────────────────────────────────────────────────────────────────────

export const PinGroupDeviceSchema = z
  .strictObject({ mode: GroupPinModeSchema.default('include').describe('include: a member whatever the filter says; exclude: never a member') }).describe('How to pin a device in a dynamic group.');
export type PinGroupDeviceInput = z.input<typeof PinGroupDeviceSchema>;

async function pinTargets(ctx: RequestContext, groupId: string, deviceId: string): Promise<{ group: DeviceGroup; device: DeviceFacts; actorId: string }> {
  const group = await accessibleGroup(ctx, groupId, 'devices:write');
  const principal = requirePrincipal(ctx);
  const device = await accessibleDevice(ctx, deviceId, 'devices:write');
  if (group.type === 'static') throw badRequest('Only dynamic groups have pins; add or remove devices of a static group instead');
  return { group, device, actorId: principal.id };
}

/** Keeps a device in (`include`) or out of (`exclude`) a dynamic group whatever its filter says. */
export async function pinGroupDevice(ctx: RequestContext, groupId: string, deviceId: string, rawInput: PinGroupDeviceInput): Promise<GroupMembershipView> {
  const input = parseInput(PinGroupDeviceSchema, rawInput);
  const { group: current, device, actorId } = await pinTargets(ctx, groupId, deviceId);
  await checkJoinable(ctx, current, [device.id]);
  return withTransaction(ctx, async (tx) => {
    const group = await lockGroup(tx, groupId);
    const row = await tx.em.findOne(DeviceGroupMember, { groupId, deviceId: device.id }, { refresh: true });
    if (row?.pin === input.mode) return membershipView(groupId, device.id, row);
    if (row) row.pin = input.mode;
    else tx.em.create(DeviceGroupMember, { groupId, deviceId: device.id, source: null, pin: input.mode });
    await tx.em.flush();
    await reconcile(tx, [group], [device.id], { actorId, reason: 'pin' });
    await recordAudit(tx, { action: 'device_group.pin', resourceType: 'device_group', resourceId: groupId, orgId: group.orgId, details: { name: group.name, deviceId: device.id, mode: input.mode } });
    return membershipView(groupId, device.id, await tx.em.findOne(DeviceGroupMember, { groupId, deviceId: device.id }));
  });
}

/** Drops a device's pin: the filter decides again. Answers the membership that results (no pin, no change). */
export async function unpinGroupDevice(ctx: RequestContext, groupId: string, deviceId: string): Promise<GroupMembershipView> {
  const { device, actorId } = await pinTargets(ctx, groupId, deviceId);
  return withTransaction(ctx, async (tx) => {
    const group = await lockGroup(tx, groupId);
    const row = await tx.em.findOne(DeviceGroupMember, { groupId, deviceId: device.id }, { refresh: true });
    if (!row?.pin) return membershipView(groupId, device.id, row);
    const mode = row.pin;
    row.pin = null;
    await tx.em.flush();
    await reconcile(tx, [group], [device.id], { actorId, reason: 'unpin' });
    await recordAudit(tx, { action: 'device_group.unpin', resourceType: 'device_group', resourceId: groupId, orgId: group.orgId, details: { name: group.name, deviceId: device.id, mode } });
    return membershipView(groupId, device.id, await tx.em.findOne(DeviceGroupMember, { groupId, deviceId: device.id }));
  });
}

// ── preview ─────────────────────────────────────────────────────────────────────────────────────

export const PreviewGroupSchema = z
  .strictObject({
    filter: GroupFilterInputSchema.optional().describe("a filter to try before saving it; the group's own by default"),
    limit: z.number().int().min(1).max(MAX_LIMIT).default(100).describe(`devices to list, 1 to ${MAX_LIMIT}`),
  }).describe('What to preview: a filter (the group’s own by default) and how many devices to list.');
export type PreviewGroupInput = z.input<typeof PreviewGroupSchema>;

/** What a dynamic group would hold under `filter` (or its own) and its pins, changing nothing. */
export async function previewGroup(ctx: RequestContext, groupId: string, rawInput: PreviewGroupInput): Promise<GroupPreview> {
  const input = parseInput(PreviewGroupSchema, rawInput);
  const group = await accessibleGroup(ctx, groupId, 'devices:read');
  if (group.type === 'static') throw badRequest('Only dynamic groups have a filter to preview');
  const filter = input.filter ? normalizeFilter(input.filter) : storedFilter(group);
  if (input.filter && filter.siteIds) await checkTargets(ctx, toTarget({ orgId: group.orgId, siteIds: filter.siteIds }));
  const visible = (await tenantWhere<Device>(ctx, { org: 'orgId', site: 'siteId' })) ?? {};
  const pinned = (mode: 'include' | 'exclude') => raw('select p.device_id from device_group_member p where p.group_id = ? and p.pin = ?', [group.id, mode]);
  const conditions = filterConditions(filter);
  // An empty filter matches the whole scope, pins included; otherwise the filter or an include pin.
  const matches = conditions.length > 0 ? [{ $or: [{ $and: conditions }, { id: { $in: pinned('include') } }] }] : [];
  const would = { $and: [visible, groupScope(group), ...matches, { id: { $nin: pinned('exclude') } }] } as FilterQuery<Device>;
  const [[devices, count], stay, members] = await Promise.all([
    ctx.em.findAndCount(Device, would, { orderBy: { hostname: 'asc', id: 'asc' }, limit: input.limit }),
    ctx.em.count(Device, { $and: [would, membersOf(group.id)] } as FilterQuery<Device>),
    ctx.em.count(Device, { $and: [visible, membersOf(group.id)] } as FilterQuery<Device>),
  ]);
  return { count, devices: await deviceViews(ctx, devices), joining: count - stay, leaving: members - stay };
}

// ── the membership log ──────────────────────────────────────────────────────────────────────────

export const MembershipLogQuery = PageQuery.extend({
  deviceId: uuid().optional().describe('Only entries of this device.'),
  action: GroupLogActionSchema.optional().describe('Only joins or only leaves.'),
  reason: GroupLogReasonSchema.optional().describe('Only entries with this reason.'),
}).strict();
export type MembershipLogInput = z.input<typeof MembershipLogQuery>;

/** Joins and leaves of the group, newest first, with their reasons. */
export async function listMembershipLog(ctx: RequestContext, groupId: string, rawQuery: MembershipLogInput): Promise<Page<GroupLogEntryView>> {
  const query = parseInput(MembershipLogQuery, rawQuery);
  const group = await accessibleGroup(ctx, groupId, 'devices:read');
  const where: FilterQuery<DeviceGroupLog> = {
    groupId: group.id,
    ...(query.deviceId ? { deviceId: query.deviceId } : {}),
    ...(query.action ? { action: query.action } : {}),
    ...(query.reason ? { reason: query.reason } : {}),
  };
  const [rows, total] = await ctx.em.findAndCount(DeviceGroupLog, where, { orderBy: { createdAt: 'desc', id: 'desc' }, ...pageOptions(query) });
  return toPage(rows.map(logView), total, query);
}
