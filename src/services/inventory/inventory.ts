import { z } from 'zod';
import { DeviceNetworkInterface } from '../../../entities/inventory.js';
import type { RequestContext } from '../../auth/context.js';
import { timestamp, uuid } from '../../validation.js';
import { accessibleDevice, inventoryPart } from '../devices/api.js';
import { replaceDeviceRows } from '../shared/device-rows.js';
import { boundedJson } from '../shared/json.js';
import { requiredText as text, optionalText } from '../shared/text.js';
import { installedSoftware } from '../software/api.js';

// The inventory's network part: checked here, stored as rows per device (entities/inventory.ts) and read
// back through `GET /devices/:id/inventory`, with the software part the software domain keeps.

/** At most this many interfaces per report. */
const MAX_ITEMS = 100_000;

const addresses = z
  .union([z.string().trim().max(100), z.array(z.string().trim().max(100)).max(100)])
  .optional()
  .transform((value) => (value === undefined ? [] : (Array.isArray(value) ? value : [value]).filter(Boolean)));

const list = <T extends z.ZodType>(item: T) => boundedJson(z.array(item).max(MAX_ITEMS));

// Items are objects with known fields; other fields an agent sends are ignored.
const NetworkInterfaceSchema = z.object({ mac: optionalText(50), ipv4: addresses, ipv6: addresses });
/** A list of interfaces, or an object of them by name (`{"eth0": {...}}`). */
const NetworkPartSchema = z.union([
  list(NetworkInterfaceSchema.extend({ name: text(200) })),
  boundedJson(z.record(text(200), NetworkInterfaceSchema)).transform((byName) => Object.entries(byName).map(([name, nic]) => ({ name, ...nic }))),
]);

export const networkInventory = inventoryPart({
  schema: NetworkPartSchema,
  ingest: (tx, device, nics) => replaceDeviceRows(tx, DeviceNetworkInterface, device.id, nics.map((nic) => ({ deviceId: device.id, reportedAt: tx.runtime.clock.now(), ...nic }))),
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

export async function getDeviceInventory(ctx: RequestContext, deviceId: string): Promise<DeviceInventoryView> {
  const device = await accessibleDevice(ctx, deviceId, 'devices:read');
  const where = { deviceId: device.id };
  // Shown, never changed: rows kept out of the identity map.
  const read = { disableIdentityMap: true } as const;
  const [software, network] = await Promise.all([installedSoftware(ctx, device), ctx.em.find(DeviceNetworkInterface, where, { ...read, orderBy: { name: 'asc' } })]);
  const times = [...software, ...network].map((row) => row.reportedAt.getTime());
  return {
    deviceId: device.id,
    software: software.map((s) => ({ name: s.name, version: s.version, publisher: s.vendor, installDate: s.installDate })),
    network: network.map((n) => ({ name: n.name, mac: n.mac, ipv4: n.ipv4, ipv6: n.ipv6 })),
    reportedAt: times.length > 0 ? new Date(Math.max(...times)).toISOString() : null,
  };
}
