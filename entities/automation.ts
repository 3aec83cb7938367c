import { randomUUID } from 'node:crypto';
import { Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Device } from './device.js';
import { Organization } from './organization.js';

export const AUTOMATION_TRIGGER_TYPES = ['schedule', 'event', 'webhook', 'manual'] as const;
export type AutomationTriggerType = (typeof AUTOMATION_TRIGGER_TYPES)[number];
export const AUTOMATION_TARGET_TYPES = ['organization', 'site', 'group', 'devices'] as const;
export type AutomationTargetType = (typeof AUTOMATION_TARGET_TYPES)[number];
export const AUTOMATION_STEP_TYPES = ['run_script', 'command', 'notify', 'wait'] as const;
export type AutomationStepType = (typeof AUTOMATION_STEP_TYPES)[number];
export const AUTOMATION_ON_FAILURE = ['stop', 'continue', 'notify'] as const;
export type AutomationOnFailure = (typeof AUTOMATION_ON_FAILURE)[number];
export const AUTOMATION_RUN_STATUSES = ['running', 'completed', 'failed', 'partial'] as const;
export type AutomationRunStatus = (typeof AUTOMATION_RUN_STATUSES)[number];
/** what a run is doing between two advances: starting its next step, waiting for a `wait` step's time, or for its script executions */
export const AUTOMATION_RUN_PHASES = ['ready', 'waiting', 'executing'] as const;
export type AutomationRunPhase = (typeof AUTOMATION_RUN_PHASES)[number];
/** how a run was started: its automation's trigger, or a caller asking for it now (`trigger`/`run` routes) */
export const AUTOMATION_RUN_SOURCES = ['schedule', 'event', 'webhook', 'manual'] as const;
export type AutomationRunSource = (typeof AUTOMATION_RUN_SOURCES)[number];
export const AUTOMATION_RESULT_STATUSES = ['running', 'completed', 'failed'] as const;
export type AutomationResultStatus = (typeof AUTOMATION_RESULT_STATUSES)[number];

/** The trigger, target and steps as the service's schemas parse them (typed there; stored as JSON). */
export type StoredJson = Record<string, unknown>;

/**
 * Steps an organization runs on a set of its devices when a trigger fires: a cron schedule in a time
 * zone, a domain event, a webhook call with the automation's token, or a caller asking for it.
 */
@Entity()
@Unique({ properties: ['orgId', 'name'] })
// The schedule tick reads the schedules that are due; the event subscriber an organization's event automations.
@Index({ properties: ['nextRunAt'] })
@Index({ properties: ['orgId', 'triggerType'] })
export class Automation extends BaseEntity<'enabled' | 'webhookToken' | 'nextRunAt' | 'scheduledAt' | 'createdBy'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'boolean' })
  enabled: boolean = true;

  /** `{type, cron?, timezone?, eventType?, filter?}` */
  @Property({ type: 'json' })
  trigger!: StoredJson;

  /** the trigger's type, also in `trigger`: event automations are looked up by it */
  @Property({ type: 'string', length: 20 })
  triggerType!: AutomationTriggerType;

  /** `{type, siteIds?, groupIds?, deviceIds?}` */
  @Property({ type: 'json' })
  target!: StoredJson;

  @Property({ type: 'json' })
  steps!: StoredJson[];

  @Property({ type: 'string', length: 20 })
  onFailure!: AutomationOnFailure;

  /** webhook automations: the token of their URL, encrypted (it is shown in the URL, so not hashed) */
  @Property({ type: 'text', nullable: true, hidden: true })
  webhookToken: string | null = null;

  /** enabled schedules: the next occurrence of the cron in its time zone that the tick looks at */
  @Property({ type: 'timestamptz', nullable: true })
  nextRunAt: Date | null = null;

  /** when (by the runtime's clock) `nextRunAt` was computed: a clock now before it was moved back, and the schedule is computed again */
  @Property({ type: 'timestamptz', nullable: true })
  scheduledAt: Date | null = null;

  @Property({ type: 'uuid', nullable: true })
  createdBy: string | null = null;
}

/** One firing of an automation: the devices it resolved at its start, and where it is in its steps. */
@Entity()
@Index({ properties: ['automationId', 'startedAt', 'id'] })
// An event starts an automation once, however often the outbox hands it over.
@Unique({ properties: ['automationId', 'eventId'] })
export class AutomationRun {
  [OptionalProps]?: 'id' | 'status' | 'phase' | 'stepIndex' | 'resumeAt' | 'completedAt' | 'eventId';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Automation, { mapToPk: true, fieldName: 'automation_id', deleteRule: 'cascade' })
  automationId!: string;

  @Property({ type: 'uuid' })
  @Index()
  orgId!: string;

  @Property({ type: 'string', length: 20 })
  source!: AutomationRunSource;

  /** event-triggered runs: the event that started it */
  @Property({ type: 'uuid', nullable: true })
  eventId: string | null = null;

  @Property({ type: 'string', length: 20 })
  status: AutomationRunStatus = 'running';

  @Property({ type: 'string', length: 20 })
  phase: AutomationRunPhase = 'ready';

  /** the step under way (or next to start) */
  @Property({ type: 'integer' })
  stepIndex: number = 0;

  /** the automation's steps and onFailure as they were when the run started: an edit mid-run does not change it */
  @Property({ type: 'json' })
  plan!: { steps: StoredJson[]; onFailure: AutomationOnFailure };

  /** the target's devices, resolved at the start */
  @Property({ type: 'json' })
  deviceIds!: string[];

  /** a `wait` step: when the run goes on */
  @Property({ type: 'timestamptz', nullable: true })
  @Index()
  resumeAt: Date | null = null;

  @Property({ type: 'timestamptz' })
  startedAt!: Date;

  @Property({ type: 'timestamptz', nullable: true })
  completedAt: Date | null = null;
}

/** One device's outcome of one step of a run. */
@Entity()
@Unique({ properties: ['runId', 'stepIndex', 'deviceId'] })
export class AutomationRunResult {
  [OptionalProps]?: 'id' | 'executionId' | 'commandId' | 'error';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => AutomationRun, { mapToPk: true, fieldName: 'run_id', deleteRule: 'cascade' })
  runId!: string;

  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  deviceId!: string;

  @Property({ type: 'integer' })
  stepIndex!: number;

  @Property({ type: 'string', length: 20 })
  status!: AutomationResultStatus;

  /** `run_script` steps: the script execution on the device */
  @Property({ type: 'uuid', nullable: true })
  @Index()
  executionId: string | null = null;

  /** `command` steps: the queued device command */
  @Property({ type: 'uuid', nullable: true })
  commandId: string | null = null;

  @Property({ type: 'text', nullable: true })
  error: string | null = null;
}
