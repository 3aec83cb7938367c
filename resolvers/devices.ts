import { ID, Int } from 'type-graphql';
import { arg, args, field, id, input, mutation, operations, pageArgs, query, subscription } from '../src/graphql/contract.js';
import * as deviceCommands from '../src/services/devices/device-commands.js';
import * as alerts from '../src/services/alerts/alerts.js';
import * as deviceGroups from '../src/services/groups/device-groups.js';
import * as deviceEvents from '../src/services/devices/device-events.js';
import * as devices from '../src/services/devices/devices.js';
import * as organizations from '../src/services/tenancy/organizations.js';
import * as sites from '../src/services/tenancy/sites.js';
import { connectionOf, pageConnectionOf, paged } from './shared.js';

// REST takes id lists comma-separated and flags as "true"/"false" in a query string; GraphQL has lists and booleans.
const ids = (what: string) => ({ type: () => [ID], description: `only devices of these ${what}` });

export const DeviceResolver = operations(devices.DeviceViewSchema, {
  devices: query(
    connectionOf(devices.DeviceViewSchema),
    [
      args('DeviceConnectionArgs', devices.DeviceConnectionArgs, {
        fields: {
          orgIds: ids('organizations'),
          siteIds: ids('sites'),
          groupIds: ids('device groups'),
          includeDecommissioned: { type: () => Boolean, description: 'decommissioned devices are left out unless asked for (or `status: decommissioned`)' },
        },
      }),
    ],
    devices.devicesConnection,
    { description: 'Devices the caller can see (users limited to some sites see theirs only): the keyset pages, filters and sorts of `GET /devices`' },
  ),
  device: query(devices.DeviceViewSchema, [id], devices.getDevice, { description: 'One device (REST `GET /devices/:id`).' }),
  organization: field(organizations.OrganizationViewSchema, [], (ctx, device: devices.DeviceView) => organizations.visibleOrganization(ctx, device.orgId), {
    nullable: true,
    description: "The device's organization; null unless the caller may read it (organizations:read).",
  }),
  site: field(sites.SiteViewSchema, [], (ctx, device: devices.DeviceView) => sites.visibleSite(ctx, device.orgId, device.siteId), {
    nullable: true,
    description: 'The site the device belongs to; null when it has none or the caller may not read it (sites:read).',
  }),
  openAlertsCount: field(Int, [], alerts.openAlertCount, {
    nullable: true,
    description: "The device's alerts not yet resolved (active, acknowledged or suppressed), as `GET /alerts/summary` counts `total`; null unless the caller may read alerts (alerts:read).",
  }),
  groups: field(pageConnectionOf(deviceGroups.DeviceGroupPageSchema), [pageArgs('DeviceGroupsArgs', deviceGroups.DeviceGroupsQuery)], paged(deviceGroups.deviceGroupPage), {
    description: 'The device groups the device is a member of, by name (site-limited callers: those of their sites).',
  }),
  commands: field(pageConnectionOf(deviceCommands.CommandPageSchema), [pageArgs('DeviceCommandListArgs', deviceCommands.CommandListQuery)], paged((ctx, device: devices.DeviceView, page: deviceCommands.CommandListInput) => deviceCommands.deviceCommandPage(ctx, device, page)), {
    description: 'The device’s commands, newest first',
  }),
  queueDeviceCommand: mutation(deviceCommands.CommandViewSchema, [arg('deviceId', ID, { description: 'The device whose agent runs the command.' }), input('DeviceCommandInput', deviceCommands.CreateCommandSchema)], deviceCommands.createCommand, {
    description: 'Queues a command for the device’s agent (needs devices:execute)',
  }),
  cancelDeviceCommand: mutation(
    deviceCommands.CommandViewSchema,
    [arg('deviceId', ID, { description: 'The device the command was queued for.' }), arg('commandId', ID, { description: 'The command to cancel.' })],
    deviceCommands.cancelCommand,
    { description: 'Cancels a command not yet finished (needs devices:execute); a late result is ignored, a finished command is CONFLICT' },
  ),
  bulkDeviceCommands: mutation(deviceCommands.BulkCommandResultSchema, [input('BulkDeviceCommandsInput', deviceCommands.BulkCommandSchema)], deviceCommands.bulkCommands, {
    description: 'The same command to many devices; those the caller cannot see fail as NOT_FOUND, decommissioned ones and duplicates are skipped',
  }),
  updateDevice: mutation(devices.DeviceViewSchema, [id, input('UpdateDeviceInput', devices.UpdateDeviceSchema)], devices.updateDevice, { description: 'Sets the device’s site or tags' }),
  moveDevice: mutation(devices.DeviceViewSchema, [id, input('MoveDeviceInput', devices.MoveDeviceSchema)], devices.moveDevice, {
    description: 'Moves the device to another organization of the same partner',
  }),
  setDeviceAutoUpdate: mutation(devices.DeviceViewSchema, [id, input('DeviceAutoUpdateInput', devices.AutoUpdateSchema)], devices.setAutoUpdate, { description: 'Switches agent self-update on or off' }),
  decommissionDevice: mutation(Boolean, [id], devices.decommissionDevice, { description: 'The device keeps its history; its agent token stops working and its open commands are cancelled' }),
  provisionDevice: mutation(devices.ProvisionedDeviceSchema, [input('ProvisionDeviceInput', devices.ProvisionDeviceSchema)], devices.provisionDevice, {
    description: 'Pre-creates a pending device; the answer carries a single-use enrollment key that claims it',
  }),
  deviceStatusChanged: subscription(deviceEvents.DeviceStatusChangeSchema, [arg('orgId', ID, { nullable: true, description: 'Only devices of this organization.' })], (ctx, orgId) => deviceEvents.subscribeDeviceStatus(ctx, orgId ?? null), {
    description: 'Status changes of the devices the caller can see (of one organization when given), from any server instance',
  }),
  commandUpdated: subscription(deviceCommands.CommandViewSchema, [arg('deviceId', ID, { description: 'The device whose commands to follow.' })], deviceEvents.subscribeCommandUpdates, {
    description: 'The device’s commands as they are queued, sent, answered or time out, from any server instance',
  }),
});
