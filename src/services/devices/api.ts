/** What other domains may use of the devices domain (the dependency check refuses any other way in). */
export { CreateCommandSchema, JsonObjectSchema, createCommand, queueCommand, registerCommandType, type CommandResult } from './device-commands.js';
export { DeviceStatusSchema, DeviceViewSchema, OsTypeSchema, accessibleDevice, authorizeDevice, changeStatus, deviceViews, maySeeDevice, type DeviceView } from './devices.js';
export { type DeviceEventData } from './events.js';
export { checkTargetSite } from './enrollment-keys.js';
export {
  TargetSchema,
  checkTargets,
  deviceGroupIds,
  deviceWhere,
  installGroupMembership,
  matches,
  mayTarget,
  toTarget,
  type GroupMembership,
  type Target,
  type TargetInput,
  type TargetedDevice,
} from './targeting.js';
