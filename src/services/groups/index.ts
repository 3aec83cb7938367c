import { DeviceGroup, DeviceGroupLog, DeviceGroupMember } from '../../../entities/device-group.js';
import { groupsRouter } from '../../../rest/device-groups.js';
import { tagsRouter } from '../../../rest/tags.js';
import { DeviceGroupResolver } from '../../../resolvers/device-groups.js';
import { defineDomain } from '../../domain-module.js';
import { deviceGroupMembership } from '../../subscribers/device-groups.js';
import { groupsAuditActions } from './events.js';

/** Static and dynamic device groups, and tags. */
export const groupsDomain = defineDomain({
  name: 'groups',
  entities: [DeviceGroup, DeviceGroupMember, DeviceGroupLog],
  rest: [groupsRouter, tagsRouter],
  resolvers: [DeviceGroupResolver],
  subscribers: [deviceGroupMembership],
  auditActions: groupsAuditActions,
});
