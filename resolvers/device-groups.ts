import { ID } from 'type-graphql';
import { arg, id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
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
import { TagListQuery, TagPageSchema, listTags } from '../src/services/groups/tags.js';
import { pageConnectionOf, paged } from './shared.js';

const deviceId = arg('deviceId', ID, { description: 'The device (NOT_FOUND when the caller cannot see it).' });

export const DeviceGroupResolver = operations({
  groups: query(pageConnectionOf(DeviceGroupPageSchema), [pageArgs('GroupListArgs', GroupListQuery)], paged(listGroups), { description: 'Device groups the caller can see (users limited to some sites: those of their sites).' }),
  group: query(DeviceGroupViewSchema, [id], getGroup, { description: 'One device group.' }),
  groupDevices: query(pageConnectionOf(DevicePageSchema, 'GroupDevice'), [id, pageArgs('GroupDeviceListArgs', GroupDeviceListQuery)], paged(listGroupDevices), { description: 'The group’s devices, by hostname' }),
  groupMembershipLog: query(pageConnectionOf(GroupLogPageSchema), [id, pageArgs('GroupMembershipLogArgs', MembershipLogQuery)], paged(listMembershipLog), {
    description: 'Joins and leaves of the group with their reasons, newest first',
  }),
  tags: query(pageConnectionOf(TagPageSchema), [pageArgs('TagListArgs', TagListQuery)], paged(listTags), { description: 'Every tag on the devices the caller can see, with device counts' }),
  createGroup: mutation(DeviceGroupViewSchema, [input('CreateGroupInput', CreateGroupSchema)], createGroup, { description: 'Creates a static or dynamic group (a dynamic group’s members are computed at once).' }),
  updateGroup: mutation(DeviceGroupViewSchema, [id, input('UpdateGroupInput', UpdateGroupSchema)], updateGroup, {
    description: 'Renames a group or changes a dynamic group’s filter (membership is recomputed)',
  }),
  deleteGroup: mutation(Boolean, [id], deleteGroup, { description: 'Deletes the group; its devices stay' }),
  addGroupDevices: mutation(AddGroupDevicesResultSchema, [id, input('AddGroupDevicesInput', AddGroupDevicesSchema)], addGroupDevices, { description: 'Adds devices to a static group' }),
  removeGroupDevice: mutation(Boolean, [id, deviceId], removeGroupDevice, { description: 'Takes a device out of a static group' }),
  pinGroupDevice: mutation(GroupMembershipSchema, [id, deviceId, input('PinGroupDeviceInput', PinGroupDeviceSchema, { nullable: true })], (ctx, group, device, pin) => pinGroupDevice(ctx, group, device, pin ?? {}), {
    description: 'Keeps a device in (include, the default) or out of (exclude) a dynamic group whatever its filter says',
  }),
  unpinGroupDevice: mutation(GroupMembershipSchema, [id, deviceId], unpinGroupDevice, { description: 'Drops a device’s pin; the filter decides again' }),
  previewGroup: mutation(GroupPreviewSchema, [id, input('PreviewGroupInput', PreviewGroupSchema, { nullable: true })], (ctx, group, preview) => previewGroup(ctx, group, preview ?? {}), {
    description: 'What a dynamic group would hold under a filter (its own by default) and its pins; changes nothing',
  }),
});
