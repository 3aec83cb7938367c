import type { FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import type { DeviceCommand } from '../../../entities/device-command.js';
import { DeviceSoftware } from '../../../entities/software.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, permits, requirePrincipal } from '../../auth/policy.js';
import { containsPattern, escapeLike } from '../../db/like.js';
import { requestRows, statement } from '../../db/prepared.js';
import { withTransaction } from '../../db/transaction.js';
import { notFound } from '../../errors.js';
import { cursorListFields, cursorPageSchema, decodeCursor, encodeCursor, finishCursorPage, keysetWhere, pageInfoOf, type Connection, type CursorConnectionInput } from '../../pagination.js';
import { parseInput, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { accessibleDevice, inventoryPart, queueCommand, visibleDevicesSql, type CommandResult } from '../devices/api.js';
import { dayOf, replaceDeviceRows, reportedDate } from '../shared/device-rows.js';
import { boundedJson } from '../shared/json.js';
import { optionalText, requiredText } from '../shared/text.js';
import { UNINSTALL_SOFTWARE } from './software-commands.js';

/*
 * The applications devices' agents report installed (the inventory's `software` part, one row per item
 * and device), the fleet's view of them grouped by name and version, and uninstalling one through the
 * device's agent.
 */

// ── the agents' report ──────────────────────────────────────────────────────────────────────────

/** At most this many items per report. */
const MAX_ITEMS = 100_000;

// Other fields an agent sends are ignored; `publisher` is the inventory's older name of `vendor`.
const SoftwareItemSchema = z
  .object({ name: requiredText(500), version: optionalText(200), vendor: optionalText(500), publisher: optionalText(500), installDate: reportedDate })
  .transform(({ publisher, ...item }) => ({ ...item, vendor: item.vendor ?? publisher }));

/** The device's reported list replaces its rows. */
export const softwareReport = inventoryPart({
  schema: boundedJson(z.array(SoftwareItemSchema).max(MAX_ITEMS)),
  ingest: (tx, device, items) => replaceDeviceRows(tx, DeviceSoftware, device.id, items.map((item) => ({ deviceId: device.id, reportedAt: tx.runtime.clock.now(), ...item }))),
});

type InstalledItem = { id: string; name: string; version: string | null; vendor: string | null; installDate: string | null; reportedAt: Date };

/**
 * The device's applications by name, for the inventory domain's view of a device the caller may read
 * (decided there); empty for a caller without `software:read` on its organization (the software's own rule).
 */
export async function installedSoftware(ctx: RequestContext, device: { id: string; orgId: string }): Promise<InstalledItem[]> {
  return (await installedSoftwareOf(ctx, [device])).get(device.id) ?? [];
}

/** `installedSoftware` of several devices in one statement (a policy's evaluation), by device id. */
export async function installedSoftwareOf(ctx: RequestContext, devices: readonly { id: string; orgId: string }[]): Promise<Map<string, InstalledItem[]>> {
  const byDevice = new Map<string, InstalledItem[]>();
  const readable = new Map<string, boolean>();
  for (const orgId of new Set(devices.map((d) => d.orgId))) readable.set(orgId, await permits(ctx, 'software:read', { orgId }));
  const ids = devices.filter((d) => readable.get(d.orgId)).map((d) => d.id);
  if (ids.length === 0) return byDevice;
  const rows = await ctx.em.find(DeviceSoftware, { deviceId: { $in: ids } }, { orderBy: { deviceId: 'asc', name: 'asc', version: 'asc' }, disableIdentityMap: true });
  for (const s of rows) {
    const item = { id: s.id, name: s.name, version: s.version, vendor: s.vendor, installDate: dayOf(s.installDate), reportedAt: s.reportedAt };
    const own = byDevice.get(s.deviceId);
    if (own) own.push(item);
    else byDevice.set(s.deviceId, [item]);
  }
  return byDevice;
}

// ── the fleet's inventory ───────────────────────────────────────────────────────────────────────

export const SoftwareInventoryItemSchema = z
  .object({
    name: z.string().describe('the application’s name'),
    version: z.string().nullable().describe('its version; null when agents did not report one'),
    vendor: z.string().nullable().describe('who publishes it, as reported; null when not reported'),
    deviceCount: z.number().int().describe('how many of the devices the caller sees report it'),
  })
  .meta({ title: 'SoftwareInventoryItem', description: 'An application and version installed on the fleet, with how many devices report it' });
type InventoryItem = z.output<typeof SoftwareInventoryItemSchema>;

const inventoryFilters = {
  orgId: uuid().optional().describe('only devices of this organization (partner and system callers)'),
  siteId: uuid().optional().describe('only devices of this site'),
  search: z.string().trim().min(1).max(255).optional().describe('text found in the name or vendor, in any case'),
  vendor: z.string().trim().min(1).max(500).optional().describe('only this vendor (any case)'),
};
const InventoryFilters = z.strictObject(inventoryFilters);
export const SoftwareInventoryListQuery = z.strictObject({ ...inventoryFilters, ...cursorListFields });
export type SoftwareInventoryListInput = z.input<typeof SoftwareInventoryListQuery>;
export const SoftwareInventoryPageSchema = cursorPageSchema(SoftwareInventoryItemSchema, 'SoftwareInventoryPage', 'applications and versions, by name');
type SoftwareInventoryPage = z.output<typeof SoftwareInventoryPageSchema>;

/** The groups' conditions over the devices the caller sees (their sites only for site-limited users). */
async function inventoryConditions(ctx: RequestContext, query: z.output<typeof InventoryFilters>): Promise<{ sql: string; params: unknown[] }> {
  await authorize(ctx, 'software:read');
  const conditions: string[] = [];
  const params: unknown[] = [];
  const devices = await visibleDevicesSql(ctx, 's.device_id', { orgId: query.orgId, siteId: query.siteId });
  conditions.push(devices.sql);
  params.push(...devices.params);
  if (query.search) {
    conditions.push('(s.name ilike ? or s.publisher ilike ?)');
    params.push(containsPattern(query.search), containsPattern(query.search));
  }
  if (query.vendor) {
    conditions.push('s.publisher ilike ?');
    params.push(escapeLike(query.vendor));
  }
  return { sql: conditions.length > 0 ? conditions.join(' and ') : 'true', params };
}

// A group's key in the keyset order after its name (cursors carry a uuid): a digest of name and version,
// given a version 4 uuid's version and variant digits so the cursor checks pass.
const GROUPS = (where: string) => `select s.name, s.version, max(s.publisher) as vendor, count(distinct s.device_id)::int as device_count,
      overlay(overlay(md5(json_build_array(s.name, s.version)::text) placing '4' from 13) placing '8' from 17)::uuid as key
    from device_software s
    where ${where}
    group by s.name, s.version`;

interface InventoryEdge {
  node: InventoryItem;
  cursor: string;
}

/** One page of the groups and whether more follow: one grouped statement. */
async function inventoryEdges(ctx: RequestContext, query: z.output<typeof SoftwareInventoryListQuery>): Promise<{ edges: InventoryEdge[]; more: boolean }> {
  const where = await inventoryConditions(ctx, query);
  const after = query.cursor ? decodeCursor(query.cursor, 'string') : null;
  const rows = await requestRows<{ name: string; version: string | null; vendor: string | null; device_count: number; key: string }>(
    ctx.em,
    statement(`select * from (${GROUPS(where.sql)}) g ${after ? 'where (g.name, g.key) > (?, ?::uuid)' : ''} order by g.name, g.key limit ?`),
    [...where.params, ...(after ? [after.value, after.id] : []), query.limit + 1],
  );
  const edges = rows.slice(0, query.limit).map((row) => ({
    node: { name: row.name, version: row.version, vendor: row.vendor, deviceCount: row.device_count },
    cursor: encodeCursor({ value: row.name, id: row.key }),
  }));
  return { edges, more: rows.length > query.limit };
}

/** Each application and version installed on the devices the caller sees, with how many report it, by name. */
export async function listSoftwareInventory(ctx: RequestContext, raw: SoftwareInventoryListInput): Promise<SoftwareInventoryPage> {
  const { edges, more } = await inventoryEdges(ctx, parseInput(SoftwareInventoryListQuery, raw));
  return { data: edges.map((e) => e.node), nextCursor: more ? edges.at(-1)!.cursor : null };
}

/** The fleet inventory as a GraphQL connection (`first`/`after`), its `totalCount` counted when asked. */
export async function softwareInventoryConnection(ctx: RequestContext, args: Omit<SoftwareInventoryListInput, 'cursor' | 'limit'> & CursorConnectionInput): Promise<Connection<InventoryItem>> {
  const { first, after, ...filters } = args;
  const { edges, more } = await inventoryEdges(ctx, parseInput(SoftwareInventoryListQuery, { ...filters, cursor: after, limit: first }));
  const totalCount = async () => {
    const where = await inventoryConditions(ctx, parseInput(InventoryFilters, filters));
    const [row] = await requestRows<{ n: number }>(ctx.em, statement(`select count(*)::int as n from (${GROUPS(where.sql)}) g`), where.params);
    return row!.n;
  };
  return { edges, pageInfo: pageInfoOf(edges, more, after != null), totalCount };
}

// ── one device's software ───────────────────────────────────────────────────────────────────────

export const DeviceSoftwareViewSchema = z
  .object({
    id: uuid().describe('the item (the `softwareId` of an uninstall)'),
    name: z.string().describe('the application’s name'),
    version: z.string().nullable().describe('its version; null when not reported'),
    vendor: z.string().nullable().describe('who publishes it; null when not reported'),
    installDate: z.iso.date().nullable().describe('when it was installed (YYYY-MM-DD); null when not reported'),
  })
  .meta({ title: 'DeviceSoftwareItem', description: 'An application the device’s agent last reported installed' });
type DeviceSoftwareView = z.output<typeof DeviceSoftwareViewSchema>;

export const DeviceSoftwareListQuery = z.strictObject({ ...cursorListFields });
export type DeviceSoftwareListInput = z.input<typeof DeviceSoftwareListQuery>;
export const DeviceSoftwarePageSchema = cursorPageSchema(DeviceSoftwareViewSchema, 'DeviceSoftwarePage', 'applications, by name');
type DeviceSoftwarePage = z.output<typeof DeviceSoftwarePageSchema>;

const deviceSoftwareView = (s: DeviceSoftware): DeviceSoftwareView => ({ id: s.id, name: s.name, version: s.version, vendor: s.vendor, installDate: dayOf(s.installDate) });

/** The applications the device's agent last reported, by name (the device not visible: 404). */
export async function listDeviceSoftware(ctx: RequestContext, deviceId: string, raw: DeviceSoftwareListInput): Promise<DeviceSoftwarePage> {
  const query = parseInput(DeviceSoftwareListQuery, raw);
  const device = await accessibleDevice(ctx, deviceId, 'software:read');
  const keyset = keysetWhere('name', 'string', 'asc', query.cursor);
  const rows = await ctx.em.find(DeviceSoftware, { $and: [{ deviceId: device.id }, keyset.where] } as FilterQuery<DeviceSoftware>, { orderBy: keyset.orderBy, limit: query.limit + 1, disableIdentityMap: true });
  const page = finishCursorPage(rows, query.limit, (s) => s.name);
  return { data: page.items.map(deviceSoftwareView), nextCursor: page.nextCursor };
}

export async function countDeviceSoftware(ctx: RequestContext, deviceId: string): Promise<number> {
  const device = await accessibleDevice(ctx, deviceId, 'software:read');
  return ctx.em.count(DeviceSoftware, { deviceId: device.id });
}

// ── uninstall ───────────────────────────────────────────────────────────────────────────────────

export const UninstallQueuedSchema = z.object({ commandId: uuid().describe('the command queued for the device’s agent') }).meta({ title: 'SoftwareUninstallQueued', description: 'The uninstall command queued' });
type UninstallQueued = z.output<typeof UninstallQueuedSchema>;

/** Queues `uninstall_software` for the item on its device; a completed result removes the item (`removeUninstalledItem`). */
export async function uninstallDeviceSoftware(ctx: RequestContext, deviceId: string, softwareId: string): Promise<UninstallQueued> {
  const device = await accessibleDevice(ctx, deviceId, 'software:write');
  const item = uuid().safeParse(softwareId).success ? await ctx.em.findOne(DeviceSoftware, { id: softwareId, deviceId: device.id }) : null;
  if (!item) throw notFound('Software');
  return withTransaction(ctx, async (tx) => {
    const payload = { softwareId: item.id, name: item.name, version: item.version };
    const command = await queueCommand(tx, device, { type: UNINSTALL_SOFTWARE, payload }, requirePrincipal(tx).userId);
    await recordAudit(tx, { action: 'software_inventory.uninstall', resourceType: 'device', resourceId: device.id, orgId: device.orgId, details: { commandId: command.id, ...payload } });
    return { commandId: command.id };
  });
}

/** A completed uninstall of an inventory item removes it at once (the next report would too); a failed one leaves it. */
export async function removeUninstalledItem(tx: RequestContext, command: DeviceCommand, result: CommandResult): Promise<void> {
  const softwareId = command.payload.softwareId;
  if (result.status === 'completed' && typeof softwareId === 'string') await tx.em.nativeDelete(DeviceSoftware, { id: softwareId, deviceId: command.deviceId });
}
