import { DeviceSecurityScore, SecurityPolicy, SecurityRecommendation, SecurityScoreSample } from '../../../entities/security-posture.js';
import { DeviceSecurityState, SecurityScan, SecurityThreat } from '../../../entities/security.js';
import { SecurityPostureResolver } from '../../../resolvers/security-posture.js';
import { SecurityThreatResolver } from '../../../resolvers/security-threats.js';
import { securityPostureRouter } from '../../../rest/security-posture.js';
import { securityThreatsRouter } from '../../../rest/security-threats.js';
import { defineDomain } from '../../domain-module.js';
import { securityThreatsDueWork } from '../../jobs/security-threats.js';
import { securityAuditActions } from './events.js';
import { securityEventSight } from './posture.js';
import { securityReport } from './security-reports.js';
import { scanCommandTypes } from './security-scans.js';
import { threatCommandTypes } from './threats.js';

const permissions = {
  security: ['read', 'write'],
} as const;
type SecurityPermissions = typeof permissions;
declare module '../../auth/permissions.js' {
  interface PermissionCatalog extends SecurityPermissions {}
}

/** Devices' security posture (the inventory's `security` part), the threats their antivirus detects, and the scores and recommendations made of them. */
export const securityDomain = defineDomain({
  name: 'security',
  entities: [DeviceSecurityState, SecurityThreat, SecurityScan, SecurityPolicy, DeviceSecurityScore, SecurityScoreSample, SecurityRecommendation],
  eventSight: { security: securityEventSight },
  rest: [securityThreatsRouter, securityPostureRouter],
  resolvers: [SecurityThreatResolver, SecurityPostureResolver],
  commandTypes: { ...threatCommandTypes, ...scanCommandTypes },
  deviceReports: { inventory: { security: securityReport } },
  auditActions: securityAuditActions,
  permissions,
  orgWork: ['security'],
  dueWork: securityThreatsDueWork,
});
