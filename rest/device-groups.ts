import type { OpenApiRegistry } from '../src/http/openapi.js';
import {
  AddGroupDevicesResultSchema,
  AddGroupDevicesSchema,
  CreateGroupSchema,
  DeviceGroupPageSchema,
  DeviceGroupViewSchema,
  DevicePageSchema,
  GroupDeviceListQuery,
  GroupListQuery,
  GroupLogPageSchema,
  GroupMembershipSchema,
  GroupPreviewSchema,
  MembershipLogQuery,
  PinGroupDeviceSchema,
  PreviewGroupSchema,
  UpdateGroupSchema,
  addGroupDevices,
  createGroup,
  deleteGroup,
  getGroup,
  listGroupDevices,
  listGroups,
  listMembershipLog,
  pinGroupDevice,
  previewGroup,
  removeGroupDevice,
  unpinGroupDevice,
  updateGroup,
} from '../src/services/groups/device-groups.js';
import { RestRouter, pathId } from './router.js';

/** Device groups: static (devices added by hand) and dynamic (a filter, kept current), with pins and a membership log. */
export function groupsRouter(openapi: OpenApiRegistry): RestRouter {
  const group = { id: pathId('Group') };
  const member = { ...group, deviceId: pathId('Device') };
  return new RestRouter(openapi, 'Groups')
    .get('/groups', { summary: 'Device groups you can see', query: GroupListQuery, response: DeviceGroupPageSchema }, (ctx, { query }) => listGroups(ctx, query))
    .post('/groups', { summary: 'Create a static or dynamic group', body: CreateGroupSchema, status: 201, response: DeviceGroupViewSchema }, (ctx, { body }) => createGroup(ctx, body))
    .get('/groups/:id', { summary: 'One group', params: group, response: DeviceGroupViewSchema }, (ctx, { params }) => getGroup(ctx, params.id))
    .patch('/groups/:id', { summary: 'Rename a group or change a dynamic group’s filter (membership is recomputed)', params: group, body: UpdateGroupSchema, response: DeviceGroupViewSchema }, (ctx, { params, body }) =>
      updateGroup(ctx, params.id, body),
    )
    .delete('/groups/:id', { summary: 'Delete a group (its devices stay)', params: group, status: 204 }, (ctx, { params }) => deleteGroup(ctx, params.id))
    .get('/groups/:id/devices', { summary: 'The group’s devices, by hostname', params: group, query: GroupDeviceListQuery, response: DevicePageSchema }, (ctx, { params, query }) =>
      listGroupDevices(ctx, params.id, query),
    )
    .post('/groups/:id/devices', { summary: 'Add devices to a static group', params: group, body: AddGroupDevicesSchema, response: AddGroupDevicesResultSchema }, (ctx, { params, body }) =>
      addGroupDevices(ctx, params.id, body),
    )
    .delete('/groups/:id/devices/:deviceId', { summary: 'Take a device out of a static group', params: member, status: 204 }, (ctx, { params }) => removeGroupDevice(ctx, params.id, params.deviceId))
    .post('/groups/:id/preview', { summary: 'What a dynamic group would hold under a filter (its own by default) and its pins; changes nothing', params: group, body: PreviewGroupSchema, response: GroupPreviewSchema }, (ctx, { params, body }) =>
      previewGroup(ctx, params.id, body),
    )
    .post('/groups/:id/devices/:deviceId/pin', { summary: 'Pin a device in (include) or out of (exclude) a dynamic group, whatever its filter says', params: member, body: PinGroupDeviceSchema, response: GroupMembershipSchema }, (ctx, { params, body }) =>
      pinGroupDevice(ctx, params.id, params.deviceId, body),
    )
    .delete('/groups/:id/devices/:deviceId/pin', { summary: 'Drop a device’s pin: the filter decides again; answers the resulting membership', params: member, response: GroupMembershipSchema }, (ctx, { params }) =>
      unpinGroupDevice(ctx, params.id, params.deviceId),
    )
    .get('/groups/:id/membership-log', { summary: 'Joins and leaves of the group with their reasons, newest first', params: group, query: MembershipLogQuery, response: GroupLogPageSchema }, (ctx, { params, query }) =>
      listMembershipLog(ctx, params.id, query),
    );
}
