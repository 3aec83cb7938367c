import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as deviceCommands from '../src/services/devices/device-commands.js';
import * as devices from '../src/services/devices/devices.js';
import { call, pathId, RestRouter } from './router.js';

export function devicesRouter(openapi: OpenApiRegistry): RestRouter {
  const device = { id: pathId('Device') };
  return new RestRouter(openapi, 'Devices')
    .get('/devices', { summary: 'Devices you can see: keyset pages by default (`nextCursor`), offset pages when `page` is given', query: devices.DeviceListQuery, response: devices.DeviceListSchema }, call(devices.listDevices))
    .get('/devices/:id', { summary: 'One device', params: device, response: devices.DeviceViewSchema }, call(devices.getDevice))
    .patch('/devices/:id', { summary: 'Set a device’s site or tags', params: device, body: devices.UpdateDeviceSchema, response: devices.DeviceViewSchema }, call(devices.updateDevice))
    .post('/devices/provision', { summary: 'Pre-create a device; the answer carries a single-use enrollment key that claims it', body: devices.ProvisionDeviceSchema, status: 201, response: devices.ProvisionedDeviceSchema }, call(devices.provisionDevice))
    .post('/devices/:id/move-org', { summary: 'Move a device to another organization of the same partner', params: device, body: devices.MoveDeviceSchema, response: devices.DeviceViewSchema }, call(devices.moveDevice))
    .post('/devices/:id/auto-update', { summary: 'Switch agent self-update on or off', params: device, body: devices.AutoUpdateSchema, response: devices.DeviceViewSchema }, call(devices.setAutoUpdate))
    .delete('/devices/:id', { summary: 'Decommission a device: its agent token stops working', params: device, status: 204 }, call(devices.decommissionDevice))
    .post('/devices/:id/commands', { summary: 'Queue a command for the device’s agent', params: device, body: deviceCommands.CreateCommandSchema, status: 201, response: deviceCommands.CommandViewSchema }, call(deviceCommands.createCommand))
    .post(
      '/devices/:id/commands/:commandId/cancel',
      { summary: 'Cancel a command not yet finished (a late result is ignored); a finished one is 409', params: { ...device, commandId: pathId('Command') }, response: deviceCommands.CommandViewSchema },
      call(deviceCommands.cancelCommand))
    .get('/devices/:id/commands', { summary: 'The device’s commands, newest first', params: device, query: deviceCommands.CommandListQuery, response: deviceCommands.CommandPageSchema }, call(deviceCommands.listCommands))
    .post('/devices/bulk/commands', { summary: 'The same command to many devices', body: deviceCommands.BulkCommandSchema, response: deviceCommands.BulkCommandResultSchema }, call(deviceCommands.bulkCommands));
}
