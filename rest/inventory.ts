import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as inventory from '../src/services/inventory/inventory.js';
import { call, pathId, RestRouter } from './router.js';

export function inventoryRouter(openapi: OpenApiRegistry): RestRouter {
  const summary = 'What the device’s agent last reported of its software and network interfaces';
  return new RestRouter(openapi, 'Devices').get('/devices/:id/inventory', { summary, params: { id: pathId('Device') }, response: inventory.DeviceInventoryViewSchema }, call(inventory.getDeviceInventory));
}
