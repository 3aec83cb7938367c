import crypto from 'node:crypto';
import { LockMode, raw, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { DEVICE_STATUSES, Device, OS_TYPES, type DeviceStatus } from '../../entities/device.js';
import { DeviceGroup } from '../../entities/device-group.js';
import { Organization } from '../../entities/organization.js';
import type { RequestContext } from '../auth/context.js';
import type { Permission } from '../auth/permissions.js';
import { authorize, loadOwned, targetOrgId, tenantWhere } from '../auth/policy.js';
import { withTransaction } from '../db/transaction.js';
import { badRequest, notFound } from '../errors.js';
import { emit } from '../events/outbox.js';
import type { DeviceEventData } from '../events/types.js';
import { MAX_LIMIT, PaginationSchema, encodeCursor, finishCursorPage, keysetWhere, type Connection, type CursorKind } from '../pagination.js';
import { parseInput, queryBoolean, timestamp, uuid } from '../validation.js';
import { recordAudit, recordChange } from './audit.js';
import { applyChanges } from './changes.js';
import { checkTargetSite, issueKey } from './enrollment-keys.js';

export const DeviceStatusSchema = z.enum(DEVICE_STATUSES).meta({ title: 'DeviceStatus' });
export const OsTypeSchema = z.enum(OS_TYPES).meta({ title: 'OsType' });

export const DeviceViewSchema = z
  .object({
    id: uuid(),
    orgId: uuid(),
    siteId: uuid().nullable(),
    agentId: uuid(),
    hostname: z.string(),
    status: DeviceStatusSchema,
    osType: OsTypeSchema.nullable(),
    osVersion: z.string().nullable(),
    architecture: z.string().nullable(),
    agentVersion: z.string().nullable(),
    machineId: z.string().nullable(),
    hardwareInfo: z.record(z.string(), z.unknown()).nullable(),
    metrics: z.record(z.string(), z.unknown()).nullable().describe("the last heartbeat's metrics"),
    autoUpdate: z.boolean(),
    tags: z.array(z.string()),
    watchdogStatus: z.string().nullable(),
    mainAgentSilentSince: timestamp().nullable(),
    lastSeenAt: timestamp().nullable(),
    enrolledAt: timestamp().nullable(),
    statusChangedAt: timestamp(),
    decommissionedAt: timestamp().nullable(),
    createdAt: timestamp(),
  })
  .meta({ title: 'Device' });
export type DeviceView = z.output<typeof DeviceViewSchema>;

export function deviceView(device: Device): DeviceView {
  return {
    id: device.id,
    orgId: device.orgId,
    siteId: device.siteId,
    agentId: device.agentId,
    hostname: device.hostname,
    status: device.status,
    osType: device.osType,
    osVersion: device.osVersion,
    architecture: device.architecture,
    agentVersion: device.agentVersion,
    machineId: device.machineId,
    hardwareInfo: device.hardwareInfo,
    metrics: device.metrics,
    autoUpdate: device.autoUpdate,
    tags: device.tags,
    watchdogStatus: device.watchdogStatus,
    mainAgentSilentSince: device.mainAgentSilentSince?.toISOString() ?? null,
    lastSeenAt: seen(device, device.lastSeenAt),
    enrolledAt: seen(device, device.enrolledAt),
    statusChangedAt: device.statusChangedAt.toISOString(),
    decommissionedAt: device.decommissionedAt?.toISOString() ?? null,
    createdAt: device.createdAt.toISOString(),
  };
}

/** A device still `pending` has never been seen nor enrolled (the columns hold its creation time for sorting). */
function seen(device: Device, at: Date): string | null {
  return device.status === 'pending' ? null : at.toISOString();
}

export function deviceEventData(device: Device, previousStatus: DeviceStatus | null): DeviceEventData {
  const lastSeen = seen(device, device.lastSeenAt);
  return { deviceId: device.id, orgId: device.orgId, siteId: device.siteId, hostname: device.hostname, status: device.status, previousStatus, lastSeenAt: lastSeen, lastSeen };
}

const STATUS_EVENTS = { online: 'device.online', offline: 'device.offline', updating: 'device.updated', decommissioned: 'device.decommissioned' } as const;

/**
 * Moves a device to `next` in the caller's transaction and emits the transition's event (a device
 * that enrolls emits `device.enrolled` instead, from the agents service). No change, no event.
 */
export async function changeStatus(tx: RequestContext, device: Device, next: Exclude<DeviceStatus, 'pending'>): Promise<void> {
  const previous = device.status;
  if (previous === next) return;
  device.status = next;
  device.statusChangedAt = tx.runtime.clock.now();
  if (next !== 'updating') device.updatingToVersion = null;
  await tx.em.flush();
  await emit(tx, { type: STATUS_EVENTS[next], orgId: device.orgId, data: deviceEventData(device, previous) });
}

export function accessibleDevice(ctx: RequestContext, id: string, permission: Permission): Promise<Device> {
  return loadOwned(ctx, Device, id, permission, { resource: 'Device' });
}

// ── list ────────────────────────────────────────────────────────────────────────────────────────

const DEVICE_LIMIT_DEFAULT = 50;
const DEVICE_LIMIT_MAX = 1000;
// Idempotent (a list parses as itself), as the adapters parse before the service does.
const idList = (what: string) => {
  const ids = z.array(uuid()).max(MAX_LIMIT, { message: `at most ${MAX_LIMIT} ${what}` });
  return ids
    .or(
      z
        .string()
        .max(20_000)
        .transform((text) => text.split(',').map((s) => s.trim()).filter(Boolean))
        .pipe(ids),
    )
    .describe(`comma-separated ${what}`);
};
const flag = z.boolean().or(queryBoolean);

const SORTS = { hostname: ['hostname', 'string'], lastSeen: ['lastSeenAt', 'date'], enrolled: ['enrolledAt', 'date'] } as const satisfies Record<string, [keyof Device, CursorKind]>;

export const DeviceListQuery = z
  .object({
    cursor: z.string().optional().describe('`nextCursor` of the previous page'),
    page: z.coerce.number().int().min(1).optional().describe('legacy mode: a page number instead of a cursor'),
    limit: z.coerce.number().int().min(1).max(DEVICE_LIMIT_MAX).default(DEVICE_LIMIT_DEFAULT).describe(`1 to ${DEVICE_LIMIT_MAX}, 50 by default`),
    sort: z.enum(['hostname', 'lastSeen', 'enrolled']).default('hostname').meta({ title: 'DeviceSort' }),
    sortDir: z.enum(['asc', 'desc']).default('asc').meta({ title: 'SortDirection' }),
    orgIds: idList('organization ids').optional(),
    siteIds: idList('site ids').optional(),
    groupIds: idList('group ids').optional(),
    status: DeviceStatusSchema.optional(),
    tag: z.string().max(100).optional().describe('only devices with this tag'),
    includeDecommissioned: flag.optional(),
    includeTotal: flag.optional(),
  })
  .strict();
export type DeviceListInput = z.input<typeof DeviceListQuery>;

export const DeviceCursorPageSchema = z
  .object({
    devices: z.array(DeviceViewSchema),
    nextCursor: z.string().nullable(),
    limit: z.number().int(),
    total: z.number().int().optional().describe('only with includeTotal=true'),
  })
  .meta({ title: 'DeviceCursorPage' });
export const DeviceLegacyPageSchema = z.object({ devices: z.array(DeviceViewSchema), pagination: PaginationSchema }).meta({ title: 'DeviceLegacyPage' });
export const DeviceListSchema = z.union([DeviceCursorPageSchema, DeviceLegacyPageSchema]).meta({ title: 'DeviceList' });
export type DeviceListResult = z.output<typeof DeviceListSchema>;

/**
 * Keyset pages by default (stable and fast however deep), each sort on an index of (sort value, id);
 * `page` switches to the legacy offset mode. A cursor is bound to its sort and direction: one from
 * another is `Invalid cursor`.
 */
export async function listDevices(ctx: RequestContext, rawQuery: DeviceListInput): Promise<DeviceListResult> {
  const query = parseInput(DeviceListQuery, rawQuery);
  await authorize(ctx, 'devices:read');
  const where: FilterQuery<Device>[] = [(await tenantWhere<Device>(ctx, { org: 'orgId', site: 'siteId' })) ?? {}];
  if (query.orgIds) where.push({ orgId: { $in: query.orgIds } });
  if (query.siteIds) where.push({ siteId: { $in: query.siteIds } });
  if (query.groupIds) where.push(await inVisibleGroups(ctx, query.groupIds));
  if (query.tag) where.push({ tags: { $contains: [query.tag] } } as FilterQuery<Device>);
  if (query.status) where.push({ status: query.status });
  else if (!query.includeDecommissioned) where.push({ status: { $ne: 'decommissioned' } });
  const [field, kind] = SORTS[query.sort];
  const filter = { $and: where } as FilterQuery<Device>;

  if (query.page !== undefined) {
    const [rows, total] = await ctx.em.findAndCount(Device, filter, { orderBy: { [field]: query.sortDir, id: query.sortDir }, limit: query.limit, offset: (query.page - 1) * query.limit });
    return { devices: rows.map(deviceView), pagination: { page: query.page, limit: query.limit, total } };
  }
  const cursorKind = `${query.sort}.${query.sortDir}`;
  const keyset = keysetWhere(field, kind, query.sortDir, unwrapCursor(query.cursor, cursorKind));
  const [rows, total] = await Promise.all([
    ctx.em.find(Device, { $and: [filter, keyset.where] } as FilterQuery<Device>, { orderBy: keyset.orderBy, limit: query.limit + 1 }),
    query.includeTotal ? ctx.em.count(Device, filter) : Promise.resolve(undefined),
  ]);
  const { items, nextCursor } = finishCursorPage(rows, query.limit, (device) => sortValue(device, field));
  return { devices: items.map(deviceView), nextCursor: nextCursor && wrapCursor(nextCursor, cursorKind), limit: query.limit, ...(total === undefined ? {} : { total }) };
}

/**
 * Members of any of the groups, like `orgIds` and `siteIds`: groups the caller cannot see (another
 * tenant's, or outside the caller's sites) add no devices rather than failing the list.
 */
async function inVisibleGroups(ctx: RequestContext, groupIds: string[]): Promise<FilterQuery<Device>> {
  const scope = (await tenantWhere<DeviceGroup>(ctx, { org: 'orgId', site: 'siteId' })) ?? {};
  const visible = (await ctx.em.find(DeviceGroup, { $and: [scope, { id: { $in: groupIds } }] }, { fields: ['id'] })).map((g) => g.id);
  if (visible.length === 0) return { id: null };
  return { id: { $in: raw('select m.device_id from device_group_member m where m.group_id in (?) and m.source is not null', [visible]) } } as FilterQuery<Device>;
}

function sortValue(device: Device, field: 'hostname' | 'lastSeenAt' | 'enrolledAt'): string {
  return field === 'hostname' ? device.hostname : device[field].toISOString();
}

// A cursor carries its sort and direction, so one minted for another order cannot skip or repeat rows.
function wrapCursor(cursor: string, kind: string): string {
  return `${Buffer.from(kind).toString('base64url')}.${cursor}`;
}
function unwrapCursor(cursor: string | undefined, kind: string): string | undefined {
  if (cursor === undefined) return undefined;
  const [tag, inner] = cursor.split('.', 2);
  if (!inner || tag !== Buffer.from(kind).toString('base64url')) throw badRequest('Invalid cursor');
  return inner;
}

export async function getDevice(ctx: RequestContext, id: string): Promise<DeviceView> {
  return deviceView(await accessibleDevice(ctx, id, 'devices:read'));
}

// ── provisioning, moves, auto-update, decommission ──────────────────────────────────────────────

export const ProvisionDeviceSchema = z
  .object({
    orgId: uuid().optional(),
    siteId: uuid().nullable().optional(),
    hostname: z.string().trim().min(1).max(255).optional().describe('until the agent reports its own'),
  })
  .strict();
export type ProvisionDeviceInput = z.input<typeof ProvisionDeviceSchema>;
export const ProvisionedDeviceSchema = z.object({ deviceId: uuid(), enrollmentKey: z.string().describe('single use; claims this device') }).meta({ title: 'ProvisionedDevice' });
export type ProvisionedDevice = z.output<typeof ProvisionedDeviceSchema>;

/** A `pending` device row and a single-use key that claims exactly it. */
export async function provisionDevice(ctx: RequestContext, rawInput: ProvisionDeviceInput): Promise<ProvisionedDevice> {
  const input = parseInput(ProvisionDeviceSchema, rawInput);
  const orgId = await targetOrgId(ctx, input.orgId);
  const principal = await authorize(ctx, 'devices:write', { orgId, resource: 'Organization' });
  const siteId = await checkTargetSite(ctx, orgId, input.siteId);
  return withTransaction(ctx, async (tx) => {
    const device = tx.em.create(Device, { orgId, siteId, agentId: crypto.randomUUID(), hostname: input.hostname ?? 'provisioned-device' });
    await tx.em.flush();
    await recordAudit(tx, { action: 'device.provision', resourceType: 'device', resourceId: device.id, orgId, details: { hostname: device.hostname } });
    const key = await issueKey(tx, { orgId, siteId, name: `Provisioning: ${device.hostname}`, expiresAt: null, maxUsage: 1, createdBy: principal.userId, deviceId: device.id }, ['deviceId']);
    return { deviceId: device.id, enrollmentKey: key.key };
  });
}

export const MoveDeviceSchema = z.object({ orgId: uuid(), siteId: uuid().nullable().optional() }).strict();
export type MoveDeviceInput = z.input<typeof MoveDeviceSchema>;

/** To another organization of the same partner, which the caller must also be allowed to write to. */
export async function moveDevice(ctx: RequestContext, id: string, rawInput: MoveDeviceInput): Promise<DeviceView> {
  const input = parseInput(MoveDeviceSchema, rawInput);
  const device = await accessibleDevice(ctx, id, 'devices:write');
  await authorize(ctx, 'devices:write', { orgId: input.orgId, resource: 'Organization' });
  const [from, to] = await Promise.all([ctx.em.findOneOrFail(Organization, { id: device.orgId }), ctx.em.findOne(Organization, { id: input.orgId })]);
  if (!to) throw notFound('Organization');
  if (from.partnerId !== to.partnerId) throw badRequest('A device can only move to an organization of the same partner');
  const siteId = await checkTargetSite(ctx, to.id, input.siteId);
  return withTransaction(ctx, async (tx) => {
    const locked = await tx.em.findOneOrFail(Device, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    const previousOrgId = locked.orgId;
    locked.orgId = to.id;
    locked.siteId = siteId;
    await tx.em.flush();
    await recordChange(
      tx,
      { action: 'device.move', resourceType: 'device', resourceId: id, orgId: to.id, changes: ['orgId', 'siteId'], details: { from: previousOrgId, to: to.id } },
      { ...deviceEventData(locked, null), changes: ['orgId', 'siteId'] },
    );
    return deviceView(locked);
  });
}

const tag = z.string().trim().min(1).max(100);
export const UpdateDeviceSchema = z
  .object({
    siteId: uuid().nullable().optional().describe("a site of the device's organization"),
    tags: z.array(tag).max(100).optional().describe('replaces the device’s tags'),
  })
  .strict();
export type UpdateDeviceInput = z.input<typeof UpdateDeviceSchema>;

/** What the dashboard sets on a device (the agent reports the rest). */
export async function updateDevice(ctx: RequestContext, id: string, rawInput: UpdateDeviceInput): Promise<DeviceView> {
  const input = parseInput(UpdateDeviceSchema, rawInput);
  const current = await accessibleDevice(ctx, id, 'devices:write');
  const siteId = input.siteId === undefined ? undefined : await checkTargetSite(ctx, current.orgId, input.siteId);
  return withTransaction(ctx, async (tx) => {
    const device = await tx.em.findOneOrFail(Device, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    const changes = applyChanges(device, { siteId, tags: input.tags && [...new Set(input.tags)].sort() });
    if (changes.length === 0) return deviceView(device);
    await tx.em.flush();
    await recordChange(
      tx,
      { action: 'device.update', resourceType: 'device', resourceId: id, orgId: device.orgId, changes, details: { hostname: device.hostname } },
      { ...deviceEventData(device, null), changes },
    );
    return deviceView(device);
  });
}

export const AutoUpdateSchema = z.object({ enabled: z.boolean() }).strict();
export type AutoUpdateInput = z.input<typeof AutoUpdateSchema>;

export async function setAutoUpdate(ctx: RequestContext, id: string, rawInput: AutoUpdateInput): Promise<DeviceView> {
  const input = parseInput(AutoUpdateSchema, rawInput);
  await accessibleDevice(ctx, id, 'devices:write');
  return withTransaction(ctx, async (tx) => {
    const device = await tx.em.findOneOrFail(Device, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (device.autoUpdate === input.enabled) return deviceView(device);
    device.autoUpdate = input.enabled;
    await tx.em.flush();
    await recordChange(
      tx,
      { action: 'device.update', resourceType: 'device', resourceId: id, orgId: device.orgId, changes: ['autoUpdate'], details: { autoUpdate: input.enabled } },
      { ...deviceEventData(device, null), changes: ['autoUpdate'] },
    );
    return deviceView(device);
  });
}

/** Decommissioned devices keep their history; their token stops working at once and their open commands are cancelled. */
export async function decommissionDevice(ctx: RequestContext, id: string): Promise<void> {
  await accessibleDevice(ctx, id, 'devices:delete');
  await withTransaction(ctx, async (tx) => {
    const device = await tx.em.findOneOrFail(Device, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (device.status === 'decommissioned') return;
    device.tokenHash = null;
    device.decommissionedAt = tx.runtime.clock.now();
    const cancelled = (await tx.em.execute(
      `update device_command set status = 'cancelled', updated_at = now() where device_id = ? and status in ('pending', 'sent') returning id, type`,
      [id],
    )) as { id: string; type: string }[];
    for (const command of cancelled) {
      await emit(tx, { type: 'device.command_updated', orgId: device.orgId, data: { commandId: command.id, deviceId: id, orgId: device.orgId, type: command.type, status: 'cancelled' } });
    }
    await recordAudit(tx, { action: 'device.decommission', resourceType: 'device', resourceId: id, orgId: device.orgId, details: { hostname: device.hostname } });
    await changeStatus(tx, device, 'decommissioned');
  });
}

// ── GraphQL: the list as a connection ───────────────────────────────────────────────────────────

export const DeviceConnectionArgs = DeviceListQuery.omit({ cursor: true, page: true, limit: true, includeTotal: true })
  .extend({
    first: DeviceListQuery.shape.limit,
    after: z.string().max(1000).optional().describe('`endCursor` (or an edge\'s `cursor`) of the previous page'),
  })
  .strict();
export type DeviceConnectionInput = z.input<typeof DeviceConnectionArgs>;

/**
 * `listDevices` as a Relay connection: the same filters, sorts and keyset pages (`first` is REST's
 * `limit`, `after` its `cursor`, and the two kinds of cursor are the same), each edge with the cursor
 * that continues after it, and the total counted only when `totalCount` is selected.
 */
export async function devicesConnection(ctx: RequestContext, rawArgs: DeviceConnectionInput): Promise<Connection<DeviceView>> {
  const { first, after, ...filters } = parseInput(DeviceConnectionArgs, rawArgs);
  const page = await listDevices(ctx, { ...filters, cursor: after, limit: first });
  if (!('nextCursor' in page)) throw new Error('listDevices answered an offset page to a cursor query');
  const [field] = SORTS[filters.sort];
  const kind = `${filters.sort}.${filters.sortDir}`;
  const rows = await loadedDevices(ctx, page.devices.map((device) => device.id));
  const edges = page.devices.map((node) => ({ node, cursor: wrapCursor(encodeCursor({ value: sortValue(rows.get(node.id)!, field), id: node.id }), kind) }));
  return {
    edges,
    pageInfo: { hasNextPage: page.nextCursor !== null, endCursor: edges.at(-1)?.cursor ?? null },
    totalCount: async () => {
      const counted = await listDevices(ctx, { ...filters, limit: 1, includeTotal: true });
      return 'total' in counted && counted.total !== undefined ? counted.total : 0;
    },
  };
}

/** The rows behind views `listDevices` just answered (their sort values: a pending device's view hides them), from the identity map. */
async function loadedDevices(ctx: RequestContext, ids: string[]): Promise<Map<string, Device>> {
  const rows = new Map<string, Device>();
  for (const id of ids) {
    const row = ctx.em.getUnitOfWork().getById<Device>(Device.name, id);
    if (row) rows.set(id, row);
  }
  const missing = ids.filter((id) => !rows.has(id));
  if (missing.length > 0) for (const row of await ctx.em.find(Device, { id: { $in: missing } })) rows.set(row.id, row);
  return rows;
}
