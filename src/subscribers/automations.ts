import type { EventSubscriber } from '../events/types.js';
import { TRIGGER_EVENT_TYPES } from '../services/automations/automations.js';
import { recordScriptOutcomes, startEventRuns } from '../services/automations/automation-runs.js';

/**
 * Event triggers: each committed event starts the matching event automations of its organization.
 * The dispatcher hands an event to one instance at a time and a run remembers its event, so an event
 * starts an automation once however many instances run.
 */
export const automationEventTriggers: EventSubscriber = {
  name: 'automations.event-triggers',
  on: [...TRIGGER_EVENT_TYPES],
  handle: (tx, event) => startEventRuns(tx, [event]),
  handleBatch: (tx, events) => startEventRuns(tx, events),
};

/** A run_script step goes on once its executions have reported (their script.completed/script.failed events). */
export const automationScriptOutcomes: EventSubscriber = {
  name: 'automations.script-outcomes',
  on: ['script.completed', 'script.failed'],
  handle: (tx, event) => recordScriptOutcomes(tx, [event]),
  handleBatch: (tx, events) => recordScriptOutcomes(tx, events),
};
