import { randomUUID } from 'node:crypto';
import type { EntityClass } from '@mikro-orm/core';
import { z } from 'zod';
import type { Device } from '../../../entities/device.js';
import { DeviceNetworkInterface, DeviceSoftware } from '../../../entities/inventory.js';
import type { RequestContext } from '../../auth/context.js';
import { timestamp, uuid } from '../../validation.js';
import { accessibleDevice, inventoryPart } from '../devices/api.js';
import { boundedJson } from '../shared/json.js';
import { requiredText as text, optionalText } from '../shared/text.js';

// The inventory's software and network parts: each checked here, stored as rows per device
// (entities/inventory.ts) and read back through `GET /devices/:id/inventory`.

/** At most this many items per part and report. */
const MAX_ITEMS = 100_000;
/** Rows written per statement (PostgreSQL takes at most 65,535 parameters). */
const INSERT_BATCH = 1000;


/** A calendar date as agents send it (`2024-01-31`, `20240131` from the Windows registry, or a full ISO time), kept as `YYYY-MM-DD`. */
const reportedDate = z
  .string()
  .trim()
  .transform((value, ctx) => {
    const match = /^(\d{4})-?(\d{2})-?(\d{2})(?:$|T)/.exec(value);
    const date = match ? `${match[1]}-${match[2]}-${match[3]}` : '';
    if (date && new Date(`${date}T00:00:00Z`).toISOString().startsWith(date)) return date;
    ctx.addIssue({ code: 'custom', message: 'must be a date (YYYY-MM-DD, YYYYMMDD or an ISO date-time)' });
    return z.NEVER;
  })
  .nullish()
  .transform((value) => value ?? null);

const addresses = z
  .union([z.string().trim().max(100), z.array(z.string().trim().max(100)).max(100)])
  .optional()
  .transform((value) => (value === undefined ? [] : (Array.isArray(value) ? value : [value]).filter(Boolean)));

const list = <T extends z.ZodType>(item: T) => boundedJson(z.array(item).max(MAX_ITEMS));

// Items are objects with known fields; other fields an agent sends are ignored.
const SoftwareItemSchema = z.object({ name: text(500), version: optionalText(200), publisher: optionalText(500), installDate: reportedDate });
const NetworkInterfaceSchema = z.object({ mac: optionalText(50), ipv4: addresses, ipv6: addresses });
/** A list of interfaces, or an object of them by name (`{"eth0": {...}}`). */
const NetworkPartSchema = z.union([
  list(NetworkInterfaceSchema.extend({ name: text(200) })),
  boundedJson(z.record(text(200), NetworkInterfaceSchema)).transform((byName) => Object.entries(byName).map(([name, nic]) => ({ name, ...nic }))),
]);

/** Replaces the device's rows of one part with the reported ones, in the report's transaction. */
async function replaceRows<T extends object>(tx: RequestContext, entity: EntityClass<T>, deviceId: string, rows: Omit<T, 'id'>[]): Promise<void> {
  await tx.em.nativeDelete(entity, { deviceId } as never);
  // insertMany writes the rows as given (no entity initializers): the ids are made here.
  for (let i = 0; i < rows.length; i += INSERT_BATCH) await tx.em.insertMany(entity, rows.slice(i, i + INSERT_BATCH).map((row) => ({ id: randomUUID(), ...row })) as never[]);
}

const reported = (tx: RequestContext, device: Device) => ({ deviceId: device.id, reportedAt: tx.runtime.clock.now() });

export const softwareInventory = inventoryPart({
  schema: list(SoftwareItemSchema),
  ingest: (tx, device, items) => replaceRows(tx, DeviceSoftware, device.id, items.map((item) => ({ ...reported(tx, device), ...item }))),
});

export const networkInventory = inventoryPart({
  schema: NetworkPartSchema,
  ingest: (tx, device, nics) => replaceRows(tx, DeviceNetworkInterface, device.id, nics.map((nic) => ({ ...reported(tx, device), ...nic }))),
});

const date = () => z.iso.date().nullable();

const InstalledSoftwareSchema = z
  .object({
    name: z.string().describe('The application’s name.'),
    version: z.string().nullable().describe('Its version; null when the agent did not report one.'),
    publisher: z.string().nullable().describe('Who publishes it; null when not reported.'),
    installDate: date().describe('When it was installed (YYYY-MM-DD); null when not reported.'),
  })
  .meta({ title: 'InstalledSoftware', description: 'An application installed on the device, as its agent reported it.' });

const NetworkInterfaceViewSchema = z
  .object({
    name: z.string().describe('The interface’s name (eth0, Ethernet 2).'),
    mac: z.string().nullable().describe('Its hardware address; null when not reported.'),
    ipv4: z.array(z.string()).describe('Its IPv4 addresses.'),
    ipv6: z.array(z.string()).describe('Its IPv6 addresses.'),
  })
  .meta({ title: 'NetworkInterface', description: 'A network interface of the device, as its agent reported it.' });

export const DeviceInventoryViewSchema = z
  .object({
    deviceId: uuid().describe('The device.'),
    software: z.array(InstalledSoftwareSchema).describe('Installed applications, by name.'),
    network: z.array(NetworkInterfaceViewSchema).describe('Network interfaces, by name.'),
    reportedAt: timestamp().nullable().describe('When the latest of these parts was reported; null before any.'),
  })
  .meta({ title: 'DeviceInventory', description: 'What the device’s agent last reported of its software and network interfaces (its patches: `GET /patches?deviceId=`).' });
export type DeviceInventoryView = z.output<typeof DeviceInventoryViewSchema>;

/** A `date` column as `YYYY-MM-DD`, whichever way the driver hands it over. */
const dayOf = (value: string | Date | null) => (value instanceof Date ? value.toISOString().slice(0, 10) : value);

export async function getDeviceInventory(ctx: RequestContext, deviceId: string): Promise<DeviceInventoryView> {
  const device = await accessibleDevice(ctx, deviceId, 'devices:read');
  const where = { deviceId: device.id };
  // Shown, never changed: rows kept out of the identity map.
  const read = { disableIdentityMap: true } as const;
  const [software, network] = await Promise.all([
    ctx.em.find(DeviceSoftware, where, { ...read, orderBy: { name: 'asc', version: 'asc' } }),
    ctx.em.find(DeviceNetworkInterface, where, { ...read, orderBy: { name: 'asc' } }),
  ]);
  const times = [...software, ...network].map((row) => row.reportedAt.getTime());
  return {
    deviceId: device.id,
    software: software.map((s) => ({ name: s.name, version: s.version, publisher: s.publisher, installDate: dayOf(s.installDate) })),
    network: network.map((n) => ({ name: n.name, mac: n.mac, ipv4: n.ipv4, ipv6: n.ipv6 })),
    reportedAt: times.length > 0 ? new Date(Math.max(...times)).toISOString() : null,
  };
}
