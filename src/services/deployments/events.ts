import type { AuditActionTable } from '../../events/types.js';

/** Staged rollout audit actions (null: recorded, not published; the spec's webhook catalog names no rollout event). */
export const deploymentAuditActions = {
  'deployment.create': null,
  'deployment.update': null,
  'deployment.delete': null,
  'deployment.initialize': null,
  'deployment.start': null,
  'deployment.pause': null,
  'deployment.resume': null,
  'deployment.cancel': null,
  'deployment.retry_device': null,
  // The system's own steps: a threshold missed, the last wave done.
  'deployment.auto_pause': null,
  'deployment.complete': null,
} as const satisfies AuditActionTable;
type DeploymentAuditActions = typeof deploymentAuditActions;

declare module '../../events/types.js' {
  interface AuditActionMap extends DeploymentAuditActions {}
}
