import type { AuditActionTable } from '../../events/types.js';

/** A run of an automation: started (status running), or ended (completed; failed and partial end as automation.failed). */
export type AutomationRunEventData = {
  automationId: string;
  runId: string;
  orgId: string;
  name: string;
  /** what started the run: schedule, event, webhook or manual */
  source: string;
  status: string;
  deviceCount: number;
  /** devices that failed a step (ended runs) */
  failedDeviceIds?: string[];
  startedAt: string;
  completedAt: string | null;
};

/** Automation audit actions, each with the event its mutation emits (null: recorded, not published). */
export const automationsAuditActions = {
  // Automations: the runs' own events (automation.started/completed/failed) come from the run engine.
  'automation.create': null,
  'automation.update': null,
  'automation.delete': null,
  'automation.run': null,
  'automation.notify': null,
} as const satisfies AuditActionTable;
type AutomationsAuditActions = typeof automationsAuditActions;

declare module '../../events/types.js' {
  interface DomainEventMap {
    'automation.started': AutomationRunEventData;
    'automation.completed': AutomationRunEventData;
    'automation.failed': AutomationRunEventData;
  }
  interface AuditActionMap extends AutomationsAuditActions {}
}
