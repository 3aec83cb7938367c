import { ID } from 'type-graphql';
import { arg, id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import * as deviceGroups from '../src/services/groups/device-groups.js';
import * as tags from '../src/services/groups/tags.js';
import { pageConnectionOf, paged } from './shared.js';

const deviceId = arg('deviceId', ID, { description: 'The device (NOT_FOUND when the caller cannot see it).' });

export const DeviceGroupResolver = operations({
  groups: query(pageConnectionOf(deviceGroups.DeviceGroupPageSchema), [pageArgs('GroupListArgs', deviceGroups.GroupListQuery)], paged(deviceGroups.listGroups), { description: 'Device groups the caller can see (users limited to some sites: those of their sites).' }),
  group: query(deviceGroups.DeviceGroupViewSchema, [id], deviceGroups.getGroup, { description: 'One device group.' }),
  groupDevices: query(pageConnectionOf(deviceGroups.DevicePageSchema, 'GroupDevice'), [id, pageArgs('GroupDeviceListArgs', deviceGroups.GroupDeviceListQuery)], paged(deviceGroups.listGroupDevices), { description: 'The group’s devices, by hostname' }),
  groupMembershipLog: query(pageConnectionOf(deviceGroups.GroupLogPageSchema), [id, pageArgs('GroupMembershipLogArgs', deviceGroups.MembershipLogQuery)], paged(deviceGroups.listMembershipLog), {
    description: 'Joins and leaves of the group with their reasons, newest first',
  }),
  tags: query(pageConnectionOf(tags.TagPageSchema), [pageArgs('TagListArgs', tags.TagListQuery)], paged(tags.listTags), { description: 'Every tag on the devices the caller can see, with device counts' }),
  createGroup: mutation(deviceGroups.DeviceGroupViewSchema, [input('CreateGroupInput', deviceGroups.CreateGroupSchema)], deviceGroups.createGroup, { description: 'Creates a static or dynamic group (a dynamic group’s members are computed at once).' }),
  updateGroup: mutation(deviceGroups.DeviceGroupViewSchema, [id, input('UpdateGroupInput', deviceGroups.UpdateGroupSchema)], deviceGroups.updateGroup, {
    description: 'Renames a group or changes a dynamic group’s filter (membership is recomputed)',
  }),
  deleteGroup: mutation(Boolean, [id], deviceGroups.deleteGroup, { description: 'Deletes the group; its devices stay' }),
  addGroupDevices: mutation(deviceGroups.AddGroupDevicesResultSchema, [id, input('AddGroupDevicesInput', deviceGroups.AddGroupDevicesSchema)], deviceGroups.addGroupDevices, { description: 'Adds devices to a static group' }),
  removeGroupDevice: mutation(Boolean, [id, deviceId], deviceGroups.removeGroupDevice, { description: 'Takes a device out of a static group' }),
  pinGroupDevice: mutation(deviceGroups.GroupMembershipSchema, [id, deviceId, input('PinGroupDeviceInput', deviceGroups.PinGroupDeviceSchema, { nullable: true })], (ctx, group, device, pin) => deviceGroups.pinGroupDevice(ctx, group, device, pin ?? {}), {
    description: 'Keeps a device in (include, the default) or out of (exclude) a dynamic group whatever its filter says',
  }),
  unpinGroupDevice: mutation(deviceGroups.GroupMembershipSchema, [id, deviceId], deviceGroups.unpinGroupDevice, { description: 'Drops a device’s pin; the filter decides again' }),
  previewGroup: mutation(deviceGroups.GroupPreviewSchema, [id, input('PreviewGroupInput', deviceGroups.PreviewGroupSchema, { nullable: true })], (ctx, group, preview) => deviceGroups.previewGroup(ctx, group, preview ?? {}), {
    description: 'What a dynamic group would hold under a filter (its own by default) and its pins; changes nothing',
  }),
});
