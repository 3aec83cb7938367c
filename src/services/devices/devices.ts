import crypto from 'node:crypto';
import { LockMode, raw, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { DEVICE_STATUSES, Device, OS_TYPES, type DeviceStatus } from '../../../entities/device.js';
import { DeviceGroup } from '../../../entities/device-group.js';
import { Organization } from '../../../entities/organization.js';
import type { RequestContext } from '../../auth/context.js';
import type { Permission } from '../../auth/permissions.js';
import { authorize, isUuid, loadOwned, permits, targetOrgId, tenantWhere, visibleSiteIds } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { AppError, badRequest, notFound } from '../../errors.js';
import { emit } from '../../events/outbox.js';
import type { DeviceEventData } from './events.js';
import { MAX_LIMIT, PaginationSchema, encodeCursor, keysetWhere, pageInfoOf, type Connection, type CursorKind } from '../../pagination.js';
import { enumValues, parseInput, queryBoolean, timestamp, uuid } from '../../validation.js';
import { recordAudit, recordChange } from '../audit/api.js';
import { applyChanges } from '../shared/changes.js';
import { checkTargetSite, issueKey } from './enrollment-keys.js';
import { JsonObjectSchema } from '../shared/json.js';
import { inventoryPart } from './device-reports.js';
import { cancelOpenCommands } from './command-types.js';
import { shownWhen } from '../../events/sight.js';
import type { DomainEventMap } from '../../events/types.js';

export const DeviceStatusSchema = z
  .enum(DEVICE_STATUSES)
  .meta({ title: 'DeviceStatus', description: 'Where a device stands, from its agent’s heartbeats.' })
  .register(enumValues, {
    pending: 'Provisioned or enrolling: its agent has not reported yet.',
    online: 'Its agent reports on time.',
    offline: 'Its agent has missed its heartbeats.',
    updating: 'Its agent is installing a new version.',
    maintenance: 'An active maintenance occurrence covers it (its heartbeats still update `lastSeenAt`).',
    decommissioned: 'Retired: its agent token no longer works; it keeps its history.',
  });
export const OsTypeSchema = z
  .enum(OS_TYPES)
  .meta({ title: 'OsType', description: 'A device’s operating system family.' })
  .register(enumValues, { windows: 'Microsoft Windows.', macos: 'Apple macOS.', linux: 'Linux.' });

export const DeviceViewSchema = z
  .object({
    id: uuid().describe('Unique ID.'),
    orgId: uuid().describe('The organization the device belongs to.'),
    siteId: uuid().nullable().describe('The site it belongs to; null for none.'),
    agentId: uuid().describe('The ID its agent authenticates with.'),
    hostname: z.string().describe('Host name, as the agent last reported it.'),
    status: DeviceStatusSchema.describe('Where the device stands, from its heartbeats.'),
    osType: OsTypeSchema.nullable().describe('Operating system family; null until the agent reports it.'),
    osVersion: z.string().nullable().describe('Operating system version as reported; null until known.'),
    architecture: z.string().nullable().describe('CPU architecture as reported (amd64, arm64, …); null until known.'),
    agentVersion: z.string().nullable().describe('Version of the running agent; null until known.'),
    machineId: z
      .string()
      .nullable()
      .describe('The machine’s own stable identifier, as reported; null until known, and for callers who may not write the organization’s devices (it is what re-enrollment matches on).'),
    hardwareInfo: z.record(z.string(), z.unknown()).nullable().describe('The last inventory’s hardware details (JSON); null until one arrives.'),
    metrics: z.record(z.string(), z.unknown()).nullable().describe("the last heartbeat's metrics"),
    autoUpdate: z.boolean().describe('Whether the agent updates itself (within the update window).'),
    tags: z.array(z.string()).describe('Free-form labels, in the order they were set.'),
    watchdogStatus: z.string().nullable().describe('The watchdog service’s state as the agent reports it; null when unknown.'),
    mainAgentSilentSince: timestamp().nullable().describe('When the watchdog last saw the main agent go quiet; null while it reports.'),
    lastSeenAt: timestamp().nullable().describe('When the agent last reported (its last heartbeat); null if never.'),
    enrolledAt: timestamp().nullable().describe('When an agent enrolled the device; null for a provisioned device not claimed yet.'),
    statusChangedAt: timestamp().describe('When status last changed.'),
    decommissionedAt: timestamp().nullable().describe('When the device was decommissioned; null while in service.'),
    createdAt: timestamp().describe('When the device record was created.'),
  })
  .meta({ title: 'Device', description: 'A managed machine running the agent.' });
export type DeviceView = z.output<typeof DeviceViewSchema>;

/** `showMachineId`: the caller may write the organization's devices (see `deviceViews`). */
function deviceView(device: Device, showMachineId: boolean): DeviceView {
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
    machineId: showMachineId ? device.machineId : null,
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

/**
 * Devices as the caller may see them: `machineId`, which an enrollment key of the device's site
 * re-enrolls, only for callers who may write the organization's devices (and create such keys).
 */
export async function deviceViews(ctx: RequestContext, devices: Device[]): Promise<DeviceView[]> {
  const writable = new Set<string>();
  for (const orgId of new Set(devices.map((d) => d.orgId))) if (await permits(ctx, 'devices:write', { orgId })) writable.add(orgId);
  return devices.map((device) => deviceView(device, writable.has(device.orgId)));
}

/** A device still `pending` has never been seen nor enrolled (the columns hold its creation time for sorting). */
function seen(device: Device, at: Date): string | null {
  return device.status === 'pending' ? null : at.toISOString();
}

export function deviceEventData(device: Device, previousStatus: DeviceStatus | null): DeviceEventData {
  const lastSeen = seen(device, device.lastSeenAt);
  return { deviceId: device.id, orgId: device.orgId, siteId: device.siteId, hostname: device.hostname, status: device.status, previousStatus, lastSeenAt: lastSeen, lastSeen };
}

const STATUS_EVENTS = { online: 'device.online', offline: 'device.offline', updating: 'device.updated', maintenance: 'device.updated', decommissioned: 'device.decommissioned' } as const;

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

export const deviceDecommissioned = () => new AppError(409, 'DEVICE_DECOMMISSIONED', 'The device is decommissioned');

/**
 * The device locked for update in the caller's transaction, with the access decision made on the
 * locked row, so a move committed meanwhile is decided on. A decommissioned device takes no more
 * writes (409) unless `decommissioned: 'allow'`.
 */
async function lockedDevice(tx: RequestContext, id: string, permission: Permission, decommissioned: 'refuse' | 'allow' = 'refuse'): Promise<Device> {
  if (isUuid(id)) await tx.em.findOne(Device, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
  const device = await accessibleDevice(tx, id, permission);
  if (decommissioned === 'refuse' && device.status === 'decommissioned') throw deviceDecommissioned();
  return device;
}

/** Users limited to some sites see only those sites' devices (and none without a site). */
function inVisibleSite(ctx: RequestContext, device: Pick<Device, 'orgId' | 'siteId'>): boolean {
  const sites = visibleSiteIds(ctx, device.orgId);
  return sites === null || (device.siteId !== null && sites.includes(device.siteId));
}

/** `accessibleDevice`'s decision for a device already in hand (a view just answered): 404 unless the caller may act on it. */
export async function authorizeDevice(ctx: RequestContext, device: Pick<Device, 'orgId' | 'siteId'>, permission: Permission): Promise<void> {
  await authorize(ctx, permission, { orgId: device.orgId, resource: 'Device' });
  if (!inVisibleSite(ctx, device)) throw notFound('Device');
}

/** The same decision as a boolean, for what is shown only to those who may read the device (live events). */
export async function maySeeDevice(ctx: RequestContext, device: Pick<Device, 'orgId' | 'siteId'>): Promise<boolean> {
  return (await permits(ctx, 'devices:read', { orgId: device.orgId })) && inVisibleSite(ctx, device);
}

/** The devices domain's events reach those who may see the device (a command's: its device as it is now). */
export const deviceEventSight = shownWhen(async (ctx, event) => {
  if (event.type !== 'device.command_updated') return maySeeDevice(ctx, event.data as DeviceEventData);
  // A fresh EntityManager per event: the subscription lives long, its rows must not come from a cache.
  const device = await ctx.em.fork().findOne(Device, { id: (event.data as DomainEventMap['device.command_updated']).deviceId }, { fields: ['orgId', 'siteId'] });
  return !!device && (await maySeeDevice(ctx, device));
});

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
// Checked by unwrapCursor: anything the server did not mint is `Invalid cursor`, whatever its length.
const cursor = z.string();

const SORTS = { hostname: ['hostname', 'string'], lastSeen: ['lastSeenAt', 'date'], enrolled: ['enrolledAt', 'date'] } as const satisfies Record<string, [keyof Device, CursorKind]>;

export const DeviceListQuery = z
  .object({
    cursor: cursor.optional().describe('`nextCursor` of the previous page'),
    page: z.coerce.number().int().min(1).optional().describe('legacy mode: a page number instead of a cursor'),
    limit: z.coerce.number().int().min(1).max(DEVICE_LIMIT_MAX).default(DEVICE_LIMIT_DEFAULT).describe(`1 to ${DEVICE_LIMIT_MAX}, 50 by default`),
    sort: z
      .enum(['hostname', 'lastSeen', 'enrolled'])
      .meta({ title: 'DeviceSort', description: 'The order of a device list.' })
      .register(enumValues, { hostname: 'By hostname.', lastSeen: 'By last heartbeat (lastSeenAt).', enrolled: 'By enrollment time (enrolledAt).' })
      .default('hostname')
      .describe('What the list is sorted by (then by id).'),
    sortDir: z
      .enum(['asc', 'desc'])
      .meta({ title: 'SortDirection', description: 'Ascending or descending.' })
      .register(enumValues, { asc: 'Smallest (or earliest, or A) first.', desc: 'Largest (or latest, or Z) first.' })
      .default('asc')
      .describe('The sort direction.'),
    orgIds: idList('organization ids').optional(),
    siteIds: idList('site ids').optional(),
    groupIds: idList('group ids').optional(),
    status: DeviceStatusSchema.optional().describe('Only devices in this state.'),
    tag: z.string().max(100).optional().describe('only devices with this tag'),
    includeDecommissioned: flag.optional(),
    includeTotal: flag.optional(),
  })
  .strict();
export type DeviceListInput = z.input<typeof DeviceListQuery>;
type DeviceQuery = z.output<typeof DeviceListQuery>;

const DeviceCursorPageSchema = z
  .object({
    devices: z.array(DeviceViewSchema),
    nextCursor: z.string().nullable(),
    limit: z.number().int(),
    total: z.number().int().optional().describe('only with includeTotal=true'),
  })
  .meta({ title: 'DeviceCursorPage' });
const DeviceLegacyPageSchema = z.object({ devices: z.array(DeviceViewSchema), pagination: PaginationSchema }).meta({ title: 'DeviceLegacyPage' });
export const DeviceListSchema = z.union([DeviceCursorPageSchema, DeviceLegacyPageSchema]).meta({ title: 'DeviceList' });
export type DeviceListResult = z.output<typeof DeviceListSchema>;

/**
 * Keyset pages by default (stable and fast however deep), each sort on an index of (sort value, id);
 * `page` switches to the legacy offset mode. A cursor is bound to its sort and direction: one from
 * another is `Invalid cursor`.
 */
export async function listDevices(ctx: RequestContext, rawQuery: DeviceListInput): Promise<DeviceListResult> {
  const query = parseInput(DeviceListQuery, rawQuery);
  const filter = await deviceFilter(ctx, query);
  if (query.page !== undefined) {
    const [field] = SORTS[query.sort];
    const [rows, total] = await ctx.em.findAndCount(Device, filter, { orderBy: { [field]: query.sortDir, id: query.sortDir }, limit: query.limit, offset: (query.page - 1) * query.limit });
    return { devices: await deviceViews(ctx, rows), pagination: { page: query.page, limit: query.limit, total } };
  }
  const [page, total] = await Promise.all([keysetPage(ctx, filter, query), query.includeTotal ? ctx.em.count(Device, filter) : undefined]);
  const last = page.rows.at(-1);
  return {
    devices: await deviceViews(ctx, page.rows),
    nextCursor: page.hasMore && last ? cursorAfter(last, query) : null,
    limit: query.limit,
    ...(total === undefined ? {} : { total }),
  };
}

/** What the caller may see (tenant and sites) narrowed by the list's filters. */
async function deviceFilter(ctx: RequestContext, query: DeviceQuery): Promise<FilterQuery<Device>> {
  await authorize(ctx, 'devices:read');
  const where: FilterQuery<Device>[] = [(await tenantWhere<Device>(ctx, { org: 'orgId', site: 'siteId' })) ?? {}];
  if (query.orgIds) where.push({ orgId: { $in: query.orgIds } });
  if (query.siteIds) where.push({ siteId: { $in: query.siteIds } });
  if (query.groupIds) where.push(await inVisibleGroups(ctx, query.groupIds));
  if (query.tag) where.push({ tags: { $contains: [query.tag] } } as FilterQuery<Device>);
  if (query.status) where.push({ status: query.status });
  else if (!query.includeDecommissioned) where.push({ status: { $ne: 'decommissioned' } });
  return { $and: where } as FilterQuery<Device>;
}

/** The page after `query.cursor`, in the query's sort and direction. */
async function keysetPage(ctx: RequestContext, filter: FilterQuery<Device>, query: DeviceQuery): Promise<{ rows: Device[]; hasMore: boolean }> {
  const [field, kind] = SORTS[query.sort];
  const keyset = keysetWhere(field, kind, query.sortDir, unwrapCursor(query.cursor, cursorKind(query)));
  const rows = await ctx.em.find(Device, { $and: [filter, keyset.where] } as FilterQuery<Device>, { orderBy: keyset.orderBy, limit: query.limit + 1 });
  return { rows: rows.slice(0, query.limit), hasMore: rows.length > query.limit };
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

// A cursor carries its sort and direction, so one minted for another order cannot skip or repeat rows.
const cursorKind = (query: Pick<DeviceQuery, 'sort' | 'sortDir'>) => Buffer.from(`${query.sort}.${query.sortDir}`).toString('base64url');

/** The cursor that continues right after `device` (a pending device's view hides its sort value; the row has it). */
function cursorAfter(device: Device, query: Pick<DeviceQuery, 'sort' | 'sortDir'>): string {
  const [field] = SORTS[query.sort];
  const value = field === 'hostname' ? device.hostname : device[field].toISOString();
  return `${cursorKind(query)}.${encodeCursor({ value, id: device.id })}`;
}

function unwrapCursor(cursor: string | undefined, kind: string): string | undefined {
  if (cursor === undefined) return undefined;
  const dot = cursor.indexOf('.');
  if (dot !== kind.length || !cursor.startsWith(kind)) throw badRequest('Invalid cursor');
  return cursor.slice(dot + 1);
}

export async function getDevice(ctx: RequestContext, id: string): Promise<DeviceView> {
  const [view] = await deviceViews(ctx, [await accessibleDevice(ctx, id, 'devices:read')]);
  return view!;
}

// ── provisioning, moves, auto-update, decommission ──────────────────────────────────────────────

export const ProvisionDeviceSchema = z
  .object({
    orgId: uuid().optional().describe('The organization; organization callers: their own by default.'),
    siteId: uuid().nullable().optional().describe('The site it will belong to; none when null or left out.'),
    hostname: z.string().trim().min(1).max(255).optional().describe('until the agent reports its own'),
  })
  .strict().describe('A device to pre-create before its agent enrolls.');
export type ProvisionDeviceInput = z.input<typeof ProvisionDeviceSchema>;
export const ProvisionedDeviceSchema = z.object({ deviceId: uuid().describe('The new pending device.'), enrollmentKey: z.string().describe('single use; claims this device') }).meta({ title: 'ProvisionedDevice', description: 'A provisioned device and the key that claims it.' });
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

export const MoveDeviceSchema = z.object({ orgId: uuid().describe('The organization to move to (of the same partner).'), siteId: uuid().nullable().optional().describe('A site of that organization; none when null or left out.') }).strict().describe('Where to move a device.');
export type MoveDeviceInput = z.input<typeof MoveDeviceSchema>;

/**
 * To another organization of the same partner, which the caller must also be allowed to write to.
 * The device's commands stay with the organization that queued them (their payloads and output are
 * its own): its open ones are cancelled, as on decommissioning. A move that changes nothing writes nothing.
 */
export async function moveDevice(ctx: RequestContext, id: string, rawInput: MoveDeviceInput): Promise<DeviceView> {
  const input = parseInput(MoveDeviceSchema, rawInput);
  return withTransaction(ctx, async (tx) => {
    const device = await lockedDevice(tx, id, 'devices:write');
    await authorize(tx, 'devices:write', { orgId: input.orgId, resource: 'Organization' });
    const [from, to] = await Promise.all([tx.em.findOneOrFail(Organization, { id: device.orgId }), tx.em.findOne(Organization, { id: input.orgId })]);
    if (!to) throw notFound('Organization');
    if (from.partnerId !== to.partnerId) throw badRequest('A device can only move to an organization of the same partner');
    const siteId = await checkTargetSite(tx, to.id, input.siteId);
    if (to.id !== device.orgId) await cancelDeviceCommands(tx, device);
    const changes = applyChanges(device, { orgId: to.id, siteId });
    if (changes.length === 0) return deviceView(device, true);
    await tx.em.flush();
    await recordChange(
      tx,
      { action: 'device.move', resourceType: 'device', resourceId: id, orgId: to.id, changes, details: { from: from.id, to: to.id } },
      { ...deviceEventData(device, null), changes },
    );
    return deviceView(device, true);
  });
}

const tag = z.string().trim().min(1).max(100);
export const UpdateDeviceSchema = z
  .object({
    siteId: uuid().nullable().optional().describe("a site of the device's organization"),
    tags: z.array(tag).max(100).optional().describe('replaces the device’s tags'),
  })
  .strict().describe('Changes to a device; a field left out keeps its value.');
export type UpdateDeviceInput = z.input<typeof UpdateDeviceSchema>;

/** What the dashboard sets on a device (the agent reports the rest). */
export async function updateDevice(ctx: RequestContext, id: string, rawInput: UpdateDeviceInput): Promise<DeviceView> {
  const input = parseInput(UpdateDeviceSchema, rawInput);
  return withTransaction(ctx, async (tx) => {
    const device = await lockedDevice(tx, id, 'devices:write');
    const siteId = input.siteId === undefined ? undefined : await checkTargetSite(tx, device.orgId, input.siteId);
    const changes = applyChanges(device, { siteId, tags: input.tags && [...new Set(input.tags)].sort() });
    if (changes.length === 0) return deviceView(device, true);
    await tx.em.flush();
    await recordChange(
      tx,
      { action: 'device.update', resourceType: 'device', resourceId: id, orgId: device.orgId, changes, details: { hostname: device.hostname } },
      { ...deviceEventData(device, null), changes },
    );
    return deviceView(device, true);
  });
}

export const AutoUpdateSchema = z.object({ enabled: z.boolean().describe('true: the agent updates itself within the update window; false: never.') }).strict().describe('Whether the agent updates itself.');
export type AutoUpdateInput = z.input<typeof AutoUpdateSchema>;

export async function setAutoUpdate(ctx: RequestContext, id: string, rawInput: AutoUpdateInput): Promise<DeviceView> {
  const input = parseInput(AutoUpdateSchema, rawInput);
  return withTransaction(ctx, async (tx) => {
    const device = await lockedDevice(tx, id, 'devices:write');
    if (device.autoUpdate === input.enabled) return deviceView(device, true);
    device.autoUpdate = input.enabled;
    await tx.em.flush();
    await recordChange(
      tx,
      { action: 'device.update', resourceType: 'device', resourceId: id, orgId: device.orgId, changes: ['autoUpdate'], details: { autoUpdate: input.enabled } },
      { ...deviceEventData(device, null), changes: ['autoUpdate'] },
    );
    return deviceView(device, true);
  });
}

/**
 * Decommissioned devices keep their history; their token stops working at once and their open
 * commands are cancelled. Decommissioning one again changes nothing.
 */
export async function decommissionDevice(ctx: RequestContext, id: string): Promise<void> {
  await withTransaction(ctx, async (tx) => {
    const device = await lockedDevice(tx, id, 'devices:delete', 'allow');
    if (device.status === 'decommissioned') return;
    device.tokenHash = null;
    device.decommissionedAt = tx.runtime.clock.now();
    await cancelDeviceCommands(tx, device);
    await recordAudit(tx, { action: 'device.decommission', resourceType: 'device', resourceId: id, orgId: device.orgId, details: { hostname: device.hostname } });
    await changeStatus(tx, device, 'decommissioned');
  });
}

/** The device's open commands are cancelled (decommissioned or moved), each type told. */
async function cancelDeviceCommands(tx: RequestContext, device: Device): Promise<void> {
  for (const command of await cancelOpenCommands(tx, device.id)) {
    await emit(tx, { type: 'device.command_updated', orgId: command.orgId, data: { commandId: command.id, deviceId: device.id, orgId: command.orgId, type: command.type, status: 'cancelled' } });
  }
}

// ── GraphQL: the list as a connection ───────────────────────────────────────────────────────────

export const DeviceConnectionArgs = DeviceListQuery.omit({ cursor: true, page: true, limit: true, includeTotal: true })
  .extend({
    first: DeviceListQuery.shape.limit,
    after: cursor.optional().describe('`endCursor` (or an edge\'s `cursor`) of the previous page'),
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
  const query = parseInput(DeviceListQuery, { ...filters, cursor: after, limit: first });
  const filter = await deviceFilter(ctx, query);
  const page = await keysetPage(ctx, filter, query);
  const views = await deviceViews(ctx, page.rows);
  const edges = page.rows.map((device, i) => ({ node: views[i]!, cursor: cursorAfter(device, query) }));
  return {
    edges,
    pageInfo: pageInfoOf(edges, page.hasMore, after !== undefined),
    totalCount: () => ctx.em.count(Device, filter),
  };
}

/** The inventory's `hardware` part is the device's own `hardwareInfo` (the device view shows the latest). */
export const hardwareInventory = inventoryPart({
  schema: JsonObjectSchema,
  async ingest(tx, device, hardware) {
    await tx.em.nativeUpdate(Device, { id: device.id }, { hardwareInfo: hardware, updatedAt: tx.runtime.clock.now() });
  },
});
