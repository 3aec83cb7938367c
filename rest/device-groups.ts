import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as deviceGroups from '../src/services/groups/device-groups.js';
import { call, pathId, RestRouter } from './router.js';

/** Device groups: static (devices added by hand) and dynamic (a filter, kept current), with pins and a membership log. */
export function groupsRouter(openapi: OpenApiRegistry): RestRouter {
  const group = { id: pathId('Group') };
  const member = { ...group, deviceId: pathId('Device') };
  return new RestRouter(openapi, 'Groups')
    .get('/groups', { summary: 'Device groups you can see', query: deviceGroups.GroupListQuery, response: deviceGroups.DeviceGroupPageSchema }, call(deviceGroups.listGroups))
    .post('/groups', { summary: 'Create a static or dynamic group', body: deviceGroups.CreateGroupSchema, status: 201, response: deviceGroups.DeviceGroupViewSchema }, call(deviceGroups.createGroup))
    .get('/groups/:id', { summary: 'One group', params: group, response: deviceGroups.DeviceGroupViewSchema }, call(deviceGroups.getGroup))
    .patch('/groups/:id', { summary: 'Rename a group or change a dynamic group’s filter (membership is recomputed)', params: group, body: deviceGroups.UpdateGroupSchema, response: deviceGroups.DeviceGroupViewSchema }, call(deviceGroups.updateGroup))
    .delete('/groups/:id', { summary: 'Delete a group (its devices stay)', params: group, status: 204 }, call(deviceGroups.deleteGroup))
    .get('/groups/:id/devices', { summary: 'The group’s devices, by hostname', params: group, query: deviceGroups.GroupDeviceListQuery, response: deviceGroups.DevicePageSchema }, call(deviceGroups.listGroupDevices))
    .post('/groups/:id/devices', { summary: 'Add devices to a static group', params: group, body: deviceGroups.AddGroupDevicesSchema, response: deviceGroups.AddGroupDevicesResultSchema }, call(deviceGroups.addGroupDevices))
    .delete('/groups/:id/devices/:deviceId', { summary: 'Take a device out of a static group', params: member, status: 204 }, call(deviceGroups.removeGroupDevice))
    .post('/groups/:id/preview', { summary: 'What a dynamic group would hold under a filter (its own by default) and its pins; changes nothing', params: group, body: deviceGroups.PreviewGroupSchema, response: deviceGroups.GroupPreviewSchema }, call(deviceGroups.previewGroup))
    .post('/groups/:id/devices/:deviceId/pin', { summary: 'Pin a device in (include) or out of (exclude) a dynamic group, whatever its filter says', params: member, body: deviceGroups.PinGroupDeviceSchema, response: deviceGroups.GroupMembershipSchema }, call(deviceGroups.pinGroupDevice))
    .delete('/groups/:id/devices/:deviceId/pin', { summary: 'Drop a device’s pin: the filter decides again; answers the resulting membership', params: member, response: deviceGroups.GroupMembershipSchema }, call(deviceGroups.unpinGroupDevice))
    .get('/groups/:id/membership-log', { summary: 'Joins and leaves of the group with their reasons, newest first', params: group, query: deviceGroups.MembershipLogQuery, response: deviceGroups.GroupLogPageSchema }, call(deviceGroups.listMembershipLog));
}
