import { DeviceNetworkInterface, DevicePatch, DeviceSoftware } from '../../../entities/inventory.js';
import { InventoryResolver } from '../../../resolvers/inventory.js';
import { inventoryRouter } from '../../../rest/inventory.js';
import { defineDomain } from '../../domain-module.js';
import { networkInventory, patchInventory, softwareInventory } from './inventory.js';

/**
 * What agents report of their devices' software, patches and network interfaces, as rows per device.
 * Reading it is `devices:read` on the device. The patching and software domains take their parts over
 * when they come (docs/decisions.md).
 */
export const inventoryDomain = defineDomain({
  name: 'inventory',
  entities: [DeviceSoftware, DevicePatch, DeviceNetworkInterface],
  rest: [inventoryRouter],
  resolvers: [InventoryResolver],
  deviceReports: { inventory: { software: softwareInventory, patches: patchInventory, network: networkInventory } },
  // An agent asked for its inventory twice would only report it twice.
  commandTypes: { refresh_inventory: { singleton: true } },
});
