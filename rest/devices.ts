import type { OpenApiRegistry } from '../src/http/openapi.js';
import {
  BulkCommandResultSchema,
  BulkCommandSchema,
  CommandListQuery,
  CommandPageSchema,
  CommandViewSchema,
  CreateCommandSchema,
  bulkCommands,
  cancelCommand,
  createCommand,
  listCommands,
} from '../src/services/devices/device-commands.js';
import {
  AutoUpdateSchema,
  DeviceListQuery,
  DeviceListSchema,
  DeviceViewSchema,
  MoveDeviceSchema,
  ProvisionDeviceSchema,
  ProvisionedDeviceSchema,
  decommissionDevice,
  getDevice,
  listDevices,
  moveDevice,
  provisionDevice,
  UpdateDeviceSchema,
  setAutoUpdate,
  updateDevice,
} from '../src/services/devices/devices.js';
import { RestRouter, pathId } from './router.js';

export function devicesRouter(openapi: OpenApiRegistry): RestRouter {
  const device = { id: pathId('Device') };
  return new RestRouter(openapi, 'Devices')
    .get('/devices', { summary: 'Devices you can see: keyset pages by default (`nextCursor`), offset pages when `page` is given', query: DeviceListQuery, response: DeviceListSchema }, (ctx, { query }) =>
      listDevices(ctx, query),
    )
    .get('/devices/:id', { summary: 'One device', params: device, response: DeviceViewSchema }, (ctx, { params }) => getDevice(ctx, params.id))
    .patch('/devices/:id', { summary: 'Set a device’s site or tags', params: device, body: UpdateDeviceSchema, response: DeviceViewSchema }, (ctx, { params, body }) =>
      updateDevice(ctx, params.id, body),
    )
    .post('/devices/provision', { summary: 'Pre-create a device; the answer carries a single-use enrollment key that claims it', body: ProvisionDeviceSchema, status: 201, response: ProvisionedDeviceSchema }, (ctx, { body }) =>
      provisionDevice(ctx, body),
    )
    .post('/devices/:id/move-org', { summary: 'Move a device to another organization of the same partner', params: device, body: MoveDeviceSchema, response: DeviceViewSchema }, (ctx, { params, body }) =>
      moveDevice(ctx, params.id, body),
    )
    .post('/devices/:id/auto-update', { summary: 'Switch agent self-update on or off', params: device, body: AutoUpdateSchema, response: DeviceViewSchema }, (ctx, { params, body }) =>
      setAutoUpdate(ctx, params.id, body),
    )
    .delete('/devices/:id', { summary: 'Decommission a device: its agent token stops working', params: device, status: 204 }, (ctx, { params }) => decommissionDevice(ctx, params.id))
    .post('/devices/:id/commands', { summary: 'Queue a command for the device’s agent', params: device, body: CreateCommandSchema, status: 201, response: CommandViewSchema }, (ctx, { params, body }) =>
      createCommand(ctx, params.id, body),
    )
    .post(
      '/devices/:id/commands/:commandId/cancel',
      { summary: 'Cancel a command not yet finished (a late result is ignored); a finished one is 409', params: { ...device, commandId: pathId('Command') }, response: CommandViewSchema },
      (ctx, { params }) => cancelCommand(ctx, params.id, params.commandId),
    )
    .get('/devices/:id/commands', { summary: 'The device’s commands, newest first', params: device, query: CommandListQuery, response: CommandPageSchema }, (ctx, { params, query }) =>
      listCommands(ctx, params.id, query),
    )
    .post('/devices/bulk/commands', { summary: 'The same command to many devices', body: BulkCommandSchema, response: BulkCommandResultSchema }, (ctx, { body }) => bulkCommands(ctx, body));
}
