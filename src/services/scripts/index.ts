import { Script, ScriptCategory, ScriptExecution, ScriptTag, ScriptVersion } from '../../../entities/script.js';
import { scriptsRouter } from '../../../rest/scripts.js';
import { scriptLibraryRouter } from '../../../rest/script-library.js';
import { ScriptResolver } from '../../../resolvers/scripts.js';
import { defineDomain } from '../../domain-module.js';
import { scriptJobs } from '../../jobs/scripts.js';
import { scriptsAuditActions } from './events.js';
import { executionEventSight, scriptCommandTypes } from './script-executions.js';

const permissions = {
  scripts: ['read', 'write', 'execute'],
} as const;
type ScriptsPermissions = typeof permissions;
declare module '../../auth/permissions.js' {
  interface PermissionCatalog extends ScriptsPermissions {}
}

/** Scripts, their executions on devices, and the script library. */
export const scriptsDomain = defineDomain({
  name: 'scripts',
  eventSight: { script: executionEventSight },
  entities: [Script, ScriptVersion, ScriptExecution, ScriptCategory, ScriptTag],
  rest: [scriptsRouter, scriptLibraryRouter],
  resolvers: [ScriptResolver],
  jobs: [...scriptJobs],
  commandTypes: scriptCommandTypes,
  auditActions: scriptsAuditActions,
  permissions,
  orgWork: ['scripts'],
});
