import { DeviceNetworkInterface, DeviceSoftware } from '../../../entities/inventory.js';
import { InventoryResolver } from '../../../resolvers/inventory.js';
import { inventoryRouter } from '../../../rest/inventory.js';
import { defineDomain } from '../../domain-module.js';
import { networkInventory, softwareInventory } from './inventory.js';

/**
 * What agents report of their devices' software and network interfaces, as rows per device.
 * Reading it is `devices:read` on the device. The patching domain owns the `patches` part; the software
 * domain takes its part over when it comes (docs/decisions.md).
 */
export const inventoryDomain = defineDomain({
  name: 'inventory',
  entities: [DeviceSoftware, DeviceNetworkInterface],
  rest: [inventoryRouter],
  resolvers: [InventoryResolver],
  deviceReports: { inventory: { software: softwareInventory, network: networkInventory } },
  // An agent asked for its inventory twice would only report it twice.
  commandTypes: { refresh_inventory: { singleton: true } },
});
