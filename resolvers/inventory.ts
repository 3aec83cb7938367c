import { ID } from 'type-graphql';
import { arg, operations, query } from '../src/graphql/contract.js';
import * as inventory from '../src/services/inventory/inventory.js';

export const InventoryResolver = operations({
  deviceInventory: query(inventory.DeviceInventoryViewSchema, [arg('deviceId', ID, { description: 'The device.' })], inventory.getDeviceInventory, {
    description: 'What the device’s agent last reported of its software and network interfaces (as GET /devices/:id/inventory).',
  }),
});
