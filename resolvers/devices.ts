import { ID, Int } from 'type-graphql';
import { arg, args, field, id, input, mutation, operations, pageArgs, query, subscription } from '../src/graphql/contract.js';
import {
  BulkCommandResultSchema,
  BulkCommandSchema,
  CommandListQuery,
  CommandPageSchema,
  CommandViewSchema,
  type CommandListInput,
  CreateCommandSchema,
  bulkCommands,
  cancelCommand,
  createCommand,
  deviceCommandPage,
} from '../src/services/devices/device-commands.js';
import { openAlertCount } from '../src/services/alerts/alerts.js';
import { DeviceGroupPageSchema, DeviceGroupsQuery, deviceGroupPage } from '../src/services/groups/device-groups.js';
import { DeviceStatusChangeSchema, subscribeCommandUpdates, subscribeDeviceStatus } from '../src/services/devices/device-events.js';
import {
  AutoUpdateSchema,
  DeviceConnectionArgs,
  DeviceViewSchema,
  MoveDeviceSchema,
  ProvisionDeviceSchema,
  ProvisionedDeviceSchema,
  UpdateDeviceSchema,
  decommissionDevice,
  devicesConnection,
  getDevice,
  moveDevice,
  provisionDevice,
  setAutoUpdate,
  updateDevice,
  type DeviceView,
} from '../src/services/devices/devices.js';
import { OrganizationViewSchema, visibleOrganization } from '../src/services/tenancy/organizations.js';
import { SiteViewSchema, visibleSite } from '../src/services/tenancy/sites.js';
import { connectionOf, pageConnectionOf, paged } from './shared.js';

// REST takes id lists comma-separated and flags as "true"/"false" in a query string; GraphQL has lists and booleans.
const ids = (what: string) => ({ type: () => [ID], description: `only devices of these ${what}` });

export const DeviceResolver = operations(DeviceViewSchema, {
  devices: query(
    connectionOf(DeviceViewSchema),
    [
      args('DeviceConnectionArgs', DeviceConnectionArgs, {
        fields: {
          orgIds: ids('organizations'),
          siteIds: ids('sites'),
          groupIds: ids('device groups'),
          includeDecommissioned: { type: () => Boolean, description: 'decommissioned devices are left out unless asked for (or `status: decommissioned`)' },
        },
      }),
    ],
    devicesConnection,
    { description: 'Devices the caller can see (users limited to some sites see theirs only): the keyset pages, filters and sorts of `GET /devices`' },
  ),
  device: query(DeviceViewSchema, [id], getDevice, { description: 'One device (REST `GET /devices/:id`).' }),
  organization: field(OrganizationViewSchema, [], (ctx, device: DeviceView) => visibleOrganization(ctx, device.orgId), {
    nullable: true,
    description: "The device's organization; null unless the caller may read it (organizations:read).",
  }),
  site: field(SiteViewSchema, [], (ctx, device: DeviceView) => visibleSite(ctx, device.orgId, device.siteId), {
    nullable: true,
    description: 'The site the device belongs to; null when it has none or the caller may not read it (sites:read).',
  }),
  openAlertsCount: field(Int, [], openAlertCount, {
    nullable: true,
    description: "The device's alerts not yet resolved (active, acknowledged or suppressed), as `GET /alerts/summary` counts `total`; null unless the caller may read alerts (alerts:read).",
  }),
  groups: field(pageConnectionOf(DeviceGroupPageSchema), [pageArgs('DeviceGroupsArgs', DeviceGroupsQuery)], paged(deviceGroupPage), {
    description: 'The device groups the device is a member of, by name (site-limited callers: those of their sites).',
  }),
  commands: field(pageConnectionOf(CommandPageSchema), [pageArgs('DeviceCommandListArgs', CommandListQuery)], paged((ctx, device: DeviceView, page: CommandListInput) => deviceCommandPage(ctx, device, page)), {
    description: 'The device’s commands, newest first',
  }),
  queueDeviceCommand: mutation(CommandViewSchema, [arg('deviceId', ID, { description: 'The device whose agent runs the command.' }), input('DeviceCommandInput', CreateCommandSchema)], createCommand, {
    description: 'Queues a command for the device’s agent (needs devices:execute)',
  }),
  cancelDeviceCommand: mutation(
    CommandViewSchema,
    [arg('deviceId', ID, { description: 'The device the command was queued for.' }), arg('commandId', ID, { description: 'The command to cancel.' })],
    cancelCommand,
    { description: 'Cancels a command not yet finished (needs devices:execute); a late result is ignored, a finished command is CONFLICT' },
  ),
  bulkDeviceCommands: mutation(BulkCommandResultSchema, [input('BulkDeviceCommandsInput', BulkCommandSchema)], bulkCommands, {
    description: 'The same command to many devices; those the caller cannot see fail as NOT_FOUND, decommissioned ones and duplicates are skipped',
  }),
  updateDevice: mutation(DeviceViewSchema, [id, input('UpdateDeviceInput', UpdateDeviceSchema)], updateDevice, { description: 'Sets the device’s site or tags' }),
  moveDevice: mutation(DeviceViewSchema, [id, input('MoveDeviceInput', MoveDeviceSchema)], moveDevice, {
    description: 'Moves the device to another organization of the same partner',
  }),
  setDeviceAutoUpdate: mutation(DeviceViewSchema, [id, input('DeviceAutoUpdateInput', AutoUpdateSchema)], setAutoUpdate, { description: 'Switches agent self-update on or off' }),
  decommissionDevice: mutation(Boolean, [id], decommissionDevice, { description: 'The device keeps its history; its agent token stops working and its open commands are cancelled' }),
  provisionDevice: mutation(ProvisionedDeviceSchema, [input('ProvisionDeviceInput', ProvisionDeviceSchema)], provisionDevice, {
    description: 'Pre-creates a pending device; the answer carries a single-use enrollment key that claims it',
  }),
  deviceStatusChanged: subscription(DeviceStatusChangeSchema, [arg('orgId', ID, { nullable: true, description: 'Only devices of this organization.' })], (ctx, orgId) => subscribeDeviceStatus(ctx, orgId ?? null), {
    description: 'Status changes of the devices the caller can see (of one organization when given), from any server instance',
  }),
  commandUpdated: subscription(CommandViewSchema, [arg('deviceId', ID, { description: 'The device whose commands to follow.' })], subscribeCommandUpdates, {
    description: 'The device’s commands as they are queued, sent, answered or time out, from any server instance',
  }),
});
