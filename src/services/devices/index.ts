import { AgentVersion } from '../../../entities/agent-version.js';
import { Device } from '../../../entities/device.js';
import { DeviceCommand } from '../../../entities/device-command.js';
import { EnrollmentKey } from '../../../entities/enrollment-key.js';
import { enrollmentKeysRouter } from '../../../rest/enrollment-keys.js';
import { agentsRouter } from '../../../rest/agents.js';
import { devicesRouter } from '../../../rest/devices.js';
import { agentVersionsRouter } from '../../../rest/agent-versions.js';
import { DeviceResolver } from '../../../resolvers/devices.js';
import { EnrollmentKeyResolver } from '../../../resolvers/enrollment-keys.js';
import { AgentVersionResolver } from '../../../resolvers/agent-versions.js';
import { defineDomain } from '../../domain-module.js';
import { deviceJobs } from '../../jobs/devices.js';
import { deviceCommandTypes } from './device-commands.js';
import { deviceEventSight, hardwareInventory } from './devices.js';
import { enrollmentKeyEventSight } from './enrollment-keys.js';
import { devicesAuditActions } from './events.js';

const permissions = {
  devices: ['read', 'write', 'delete', 'execute'],
} as const;
type DevicesPermissions = typeof permissions;
declare module '../../auth/permissions.js' {
  interface PermissionCatalog extends DevicesPermissions {}
}

/** Devices and their agents: enrollment, heartbeats and the dispatch of device reports, commands, the agent channel, agent releases. */
export const devicesDomain = defineDomain({
  name: 'devices',
  eventSight: { device: deviceEventSight, enrollment_key: enrollmentKeyEventSight },
  entities: [Device, DeviceCommand, EnrollmentKey, AgentVersion],
  rest: [enrollmentKeysRouter, agentsRouter, devicesRouter, agentVersionsRouter],
  resolvers: [DeviceResolver, EnrollmentKeyResolver, AgentVersionResolver],
  jobs: [...deviceJobs],
  deviceReports: { inventory: { hardware: hardwareInventory } },
  commandTypes: deviceCommandTypes,
  auditActions: devicesAuditActions,
  permissions,
  orgWork: ['devices'],
});
