import { DeviceNetworkInterface } from '../../../entities/inventory.js';
import { InventoryResolver } from '../../../resolvers/inventory.js';
import { inventoryRouter } from '../../../rest/inventory.js';
import { defineDomain } from '../../domain-module.js';
import { networkInventory } from './inventory.js';

/**
 * What agents report of their devices' network interfaces, as rows per device, and the device's
 * inventory view. Reading it is `devices:read` on the device. The patching domain owns the `patches`
 * part, the software domain the `software` part (read here through its api.ts).
 */
export const inventoryDomain = defineDomain({
  name: 'inventory',
  entities: [DeviceNetworkInterface],
  rest: [inventoryRouter],
  resolvers: [InventoryResolver],
  deviceReports: { inventory: { network: networkInventory } },
  // An agent asked for its inventory twice would only report it twice.
  commandTypes: { refresh_inventory: { singleton: true } },
});
