/** What other domains may use of the devices domain (the dependency check refuses any other way in). */
export { type CommandResult, type CommandTypeHooks } from './command-types.js';
export { CreateCommandSchema, cancelQueuedCommands, commandWasSent, createCommand, queueCommand } from './device-commands.js';
export { agentVersionRegistered, pinAgentVersion, unpinAgentVersion, versionInput } from './agent-builds.js';
export { factsOf, inventoryPart, type DeviceFacts, type DeviceReportListeners, type InventoryPart } from './device-reports.js';
export { DeviceStatusSchema, DeviceViewSchema, OsTypeSchema, accessibleDevice, authorizeDevice, changeStatus, deviceViews, type DeviceView } from './devices.js';
export { type DeviceEventData } from './events.js';
export { checkTargetSite } from './enrollment-keys.js';
export {
  TargetSchema,
  checkTargets,
  deviceGroupIds,
  deviceWhere,
  findDevices,
  installGroupMembership,
  matches,
  siteLimitedDevicesSql,
  visibleDevicesSql,
  mayTarget,
  toTarget,
  type GroupMembership,
  type DeviceSelection,
  type Target,
  type TargetInput,
  type TargetedDevice,
} from './targeting.js';
