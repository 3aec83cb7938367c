import type { AuditActionTable } from '../../events/types.js';

/** A script execution as its status changed; `exitCode` once the agent reported one. */
export type ScriptExecutionEventData = {
  executionId: string;
  scriptId: string;
  deviceId: string;
  orgId: string;
  status: string;
  exitCode: number | null;
};

/** Script audit actions, each with the event its mutation emits (null: recorded, not published). */
export const scriptsAuditActions = {
  // Scripts: executions publish their script.* events from the agent's reports, not from these actions.
  'script.create': null,
  'script.update': null,
  'script.delete': null,
  'script.import': null,
  'script.execute': null,
  'script.execution.cancel': null,
  'script.version.create': null,
  'script.version.rollback': null,
  'script_category.create': null,
  'script_category.update': null,
  'script_category.delete': null,
  'script_tag.create': null,
  'script_tag.delete': null,
} as const satisfies AuditActionTable;
type ScriptsAuditActions = typeof scriptsAuditActions;

declare module '../../events/types.js' {
  interface DomainEventMap {
    'script.started': ScriptExecutionEventData;
    'script.completed': ScriptExecutionEventData;
    'script.failed': ScriptExecutionEventData;
    /** every status change of an execution (live updates; not a webhook event) */
    'script.execution_updated': ScriptExecutionEventData;
  }
  interface AuditActionMap extends ScriptsAuditActions {}
}
