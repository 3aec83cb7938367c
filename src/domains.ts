import type { EntityClass } from '@mikro-orm/core';
import { installPermissions } from './auth/permissions.js';
import type { DomainModule } from './domain-module.js';
import { installAuditActions } from './events/types.js';
import { dueWorkJob } from './jobs/due-work.js';
import { platformDomain } from './services/platform/index.js';
import { tenancyDomain } from './services/tenancy/index.js';
import { identityDomain } from './services/identity/index.js';
import { auditDomain } from './services/audit/index.js';
import { ssoDomain } from './services/sso/index.js';
import { webhooksDomain } from './services/webhooks/index.js';
import { devicesDomain } from './services/devices/index.js';
import { groupsDomain } from './services/groups/index.js';
import { alertsDomain } from './services/alerts/index.js';
import { notificationsDomain } from './services/notifications/index.js';
import { maintenanceDomain } from './services/maintenance/index.js';
import { scriptsDomain } from './services/scripts/index.js';
import { automationsDomain } from './services/automations/index.js';
import { inventoryDomain } from './services/inventory/index.js';
import { patchingDomain } from './services/patching/index.js';
import { securityDomain } from './services/security/index.js';
import { softwareDomain } from './services/software/index.js';
import { policiesDomain } from './services/policies/index.js';
import { deploymentsDomain } from './services/deployments/index.js';
import { installCommandTypes } from './services/devices/command-types.js';
import { installDeviceReports } from './services/devices/device-reports.js';
import { installEventSights } from './events/sight.js';
import { installGroupMembership } from './services/devices/api.js';
import { groupMembership } from './services/groups/api.js';

/**
 * Every domain, by its manifest: the one list a new domain is added to. Every registry is derived
 * from it (docs/architecture.md, "Adding a domain"); the order is the permission catalog's.
 */
export const domains: readonly DomainModule[] = [platformDomain, tenancyDomain, identityDomain, auditDomain, ssoDomain, webhooksDomain, devicesDomain, groupsDomain, alertsDomain, notificationsDomain, maintenanceDomain, scriptsDomain, automationsDomain, inventoryDomain, patchingDomain, securityDomain, softwareDomain, policiesDomain, deploymentsDomain];

type Item<K extends keyof DomainModule> = NonNullable<DomainModule[K]> extends readonly (infer T)[] ? T : never;
const collect = <K extends keyof DomainModule>(key: K): Item<K>[] => domains.flatMap((domain) => (domain[key] ?? []) as unknown as Item<K>[]);

export const domainEntities: EntityClass<object>[] = collect('entities');
export const domainRouters = collect('rest');
export const domainResolvers = collect('resolvers');
export const domainJobs = [...collect('jobs'), dueWorkJob(collect('dueWork'))];
export const domainSubscribers = collect('subscribers');

const present = <T>(value: T | undefined): T[] => (value ? [value] : []);

/** Installs the registries that lower layers and the devices domain read at run time (permissions, audit actions, device reports, command types) and the groups' answers to targeting; idempotent. */
export function installDomains(): void {
  installPermissions(domains);
  installAuditActions(domains.flatMap((domain) => present(domain.auditActions)));
  installDeviceReports(domains.flatMap((domain) => present(domain.deviceReports)));
  installCommandTypes(domains.flatMap((domain) => present(domain.commandTypes)));
  installEventSights(domains.flatMap((domain) => present(domain.eventSight)));
  installGroupMembership(groupMembership);
}
