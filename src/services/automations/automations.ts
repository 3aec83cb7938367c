import { LockMode, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import {
  AUTOMATION_ON_FAILURE,
  AUTOMATION_STEP_TYPES,
  AUTOMATION_TARGET_TYPES,
  AUTOMATION_TRIGGER_TYPES,
  Automation,
  type StoredJson,
} from '../../../entities/automation.js';
import type { RequestContext } from '../../auth/context.js';
import type { Permission } from '../../auth/permissions.js';
import { authorize, loadOwned, permits, requirePrincipal, targetOrgId, tenantWhere } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { containsPattern } from '../../db/like.js';
import { badRequest } from '../../errors.js';
import { WEBHOOK_EVENT_TYPES } from '../../events/types.js';
import { PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { randomToken } from '../../secrets.js';
import { enumValues, parseInput, queryBoolean, timestamp, uuid } from '../../validation.js';
import { requireOrgChannels } from '../alerts/api.js';
import { recordAudit } from '../audit/api.js';
import { CreateCommandSchema, checkTargets, mayTarget, toTarget, type Target } from '../devices/api.js';
import { secretParameterNames } from '../scripts/api.js';
import { JsonObjectSchema } from '../shared/json.js';
import { applyChanges, providedFields } from '../shared/changes.js';
import { cronError, isTimeZone, nextStart, type CronSchedule } from '../shared/schedule.js';
import { uniqueNameGuard } from '../shared/unique-name.js';

/*
 * Automations: an organization's steps (run a script, queue a command, notify a channel, wait) run
 * on a target's devices when a trigger fires. This module holds the definitions; runs, triggers and
 * the step engine are in automation-runs.ts.
 */

const RESOURCE = 'Automation';
export const MAX_STEPS = 20;
const MAX_TARGET_IDS = 100;
const MAX_WAIT_SECONDS = 7 * 24 * 3600;
const MAX_FILTER_FIELDS = 20;

// ── schedules ───────────────────────────────────────────────────────────────────────────────────

/** A schedule trigger as the schedule engine reads it (the time zone is stored written out; UTC before). */
export function triggerSchedule(trigger: AutomationTrigger): CronSchedule {
  return { cron: trigger.cron!, timezone: trigger.timezone ?? 'UTC' };
}

// ── the contract ────────────────────────────────────────────────────────────────────────────────

const TriggerTypeSchema = z
  .enum(AUTOMATION_TRIGGER_TYPES)
  .meta({ title: 'AutomationTriggerType', description: 'what starts the automation' })
  .register(enumValues, {
    schedule: 'Its cron expression, read in its time zone, comes due.',
    event: 'A domain event of its eventType happens in its organization and matches its filter.',
    webhook: 'Someone POSTs to its webhookUrl (the token in the URL is the credential).',
    manual: 'Only a caller starting it (triggerAutomation, or REST trigger/run).',
  });
const TargetTypeSchema = z
  .enum(AUTOMATION_TARGET_TYPES)
  .meta({ title: 'AutomationTargetType', description: 'which devices a run acts on' })
  .register(enumValues, {
    organization: 'Every device of the automation’s organization.',
    site: 'The devices of the sites in siteIds.',
    group: 'The current members of the device groups in groupIds.',
    devices: 'The devices listed in deviceIds.',
  });
const StepTypeSchema = z
  .enum(AUTOMATION_STEP_TYPES)
  .meta({ title: 'AutomationStepType', description: 'what a step does' })
  .register(enumValues, {
    run_script: 'Runs the script scriptId with its parameters on each device; the step ends when every execution has finished.',
    command: 'Queues the device command commandType with its payload for each device.',
    notify: 'Sends a notice of the run to the alert channel channelId.',
    wait: 'Pauses the run for seconds before the next step.',
  });
export const OnFailureSchema = z
  .enum(AUTOMATION_ON_FAILURE)
  .meta({ title: 'AutomationOnFailure', description: 'after a device fails a step: stop (no further steps for it), continue, or notify (stop, and tell the channels of the notify steps)' })
  .register(enumValues, {
    stop: 'The device that failed takes no further steps; the other devices go on.',
    continue: 'The device that failed still takes the next steps (its failure still counts in the run’s status).',
    notify: 'As stop, and after each step some device failed, a notice of the failures goes to the alert channels of the automation’s notify steps.',
  });

/** Event types an automation may wait for: the webhook catalog's, except the automations' own (an automation started by a run's end could start itself forever). */
export const TRIGGER_EVENT_TYPES = WEBHOOK_EVENT_TYPES.filter((type) => !type.startsWith('automation.') && type !== 'webhook.test');
const EventTypeSchema = z.enum(TRIGGER_EVENT_TYPES as [string, ...string[]]).describe('the domain event that starts a run');

const FILTER_KEY = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
/** Equality matches on the event's top-level data fields; values are compared, never read as operators. */
const EventFilterSchema = z
  .record(z.string().regex(FILTER_KEY, 'filter keys are event data field names (letters, digits, _)'), z.union([z.string().max(1000), z.number(), z.boolean(), z.null()]))
  .refine((filter) => Object.keys(filter).length <= MAX_FILTER_FIELDS, `at most ${MAX_FILTER_FIELDS} fields`)
  .describe('event triggers: every field must equal the event data field of that name (strings, numbers, booleans or null)');

const triggerShape = {
  type: TriggerTypeSchema,
  cron: z.string().trim().min(1).max(100).optional().describe('schedule triggers: a five-field cron expression (minute hour day-of-month month day-of-week)'),
  timezone: z.string().trim().min(1).max(64).optional().describe('schedule triggers: the IANA time zone the cron is read in (default UTC)'),
  eventType: EventTypeSchema.optional(),
  filter: EventFilterSchema.optional(),
};
const TRIGGER_FIELDS: Record<z.output<typeof TriggerTypeSchema>, string[]> = { schedule: ['cron', 'timezone'], event: ['eventType', 'filter'], webhook: [], manual: [] };

/** Refuses fields another variant owns, and requires the variant's own. */
function checkVariant(value: Record<string, unknown>, allowed: string[], required: string[], ctx: z.RefinementCtx, what: string): void {
  for (const [key, given] of Object.entries(value)) {
    if (key !== 'type' && given !== undefined && !allowed.includes(key)) ctx.addIssue({ code: 'custom', path: [key], message: `not a field of ${what}` });
  }
  for (const key of required) if (value[key] === undefined) ctx.addIssue({ code: 'custom', path: [key], message: `required for ${what}` });
}

const TriggerInputSchema = z
  .strictObject(triggerShape)
  .superRefine((trigger, ctx) => {
    checkVariant(trigger, TRIGGER_FIELDS[trigger.type], trigger.type === 'schedule' ? ['cron'] : trigger.type === 'event' ? ['eventType'] : [], ctx, `${trigger.type} triggers`);
    if (trigger.type !== 'schedule' || !trigger.cron) return;
    const timezone = trigger.timezone ?? 'UTC';
    if (!isTimeZone(timezone)) {
      ctx.addIssue({ code: 'custom', path: ['timezone'], message: 'must be an IANA time zone such as Europe/Berlin' });
      return;
    }
    const error = cronError(trigger.cron);
    if (error) ctx.addIssue({ code: 'custom', path: ['cron'], message: `invalid cron expression: ${error}` });
  })
  .meta({ title: 'AutomationTriggerInput', description: 'schedule: cron and timezone; event: eventType and optional filter; webhook and manual: nothing else' });

const ids = (what: string) => z.array(uuid()).min(1).max(MAX_TARGET_IDS).optional().describe(`${what} of the automation's organization`);
const targetShape = { type: TargetTypeSchema, siteIds: ids('sites (site targets)'), groupIds: ids('device groups (group targets)'), deviceIds: ids('devices (devices targets)') };
const TARGET_FIELD: Record<z.output<typeof TargetTypeSchema>, string | null> = { organization: null, site: 'siteIds', group: 'groupIds', devices: 'deviceIds' };

const TargetInputSchema = z
  .strictObject(targetShape)
  .superRefine((target, ctx) => {
    const field = TARGET_FIELD[target.type];
    checkVariant(target, field ? [field] : [], field ? [field] : [], ctx, `${target.type} targets`);
  })
  .meta({ title: 'AutomationTargetInput', description: 'organization: every device; site: siteIds; group: groupIds; devices: deviceIds' });

const stepShape = {
  type: StepTypeSchema,
  scriptId: uuid().optional().describe('run_script steps: the script'),
  parameters: JsonObjectSchema.optional().describe('run_script steps: the script parameters'),
  commandType: z
    .string()
    .trim()
    .regex(/^[a-z][a-z0-9_]{0,99}$/, 'must be a command name such as refresh_inventory')
    .optional()
    .describe('command steps: the device command to queue'),
  payload: JsonObjectSchema.optional().describe('command steps: the command payload'),
  channelId: uuid().optional().describe('notify steps: the notification channel'),
  seconds: z.number().int().min(1).max(MAX_WAIT_SECONDS).optional().describe(`wait steps: how long, 1 to ${MAX_WAIT_SECONDS} seconds`),
};
const STEP_FIELDS: Record<z.output<typeof StepTypeSchema>, { allowed: string[]; required: string[] }> = {
  run_script: { allowed: ['scriptId', 'parameters'], required: ['scriptId'] },
  command: { allowed: ['commandType', 'payload'], required: ['commandType'] },
  notify: { allowed: ['channelId'], required: ['channelId'] },
  wait: { allowed: ['seconds'], required: ['seconds'] },
};

const StepInputSchema = z
  .strictObject(stepShape)
  .superRefine((step, ctx) => {
    checkVariant(step, STEP_FIELDS[step.type].allowed, STEP_FIELDS[step.type].required, ctx, `${step.type} steps`);
    if (step.type !== 'command' || !step.commandType) return;
    // A run_script command without its execution would run nothing the scripts service follows.
    if (step.commandType === 'run_script') ctx.addIssue({ code: 'custom', path: ['commandType'], message: 'scripts run through run_script steps' });
    // What the device-commands service would refuse when the step runs is refused now (payloads it checks).
    const command = CreateCommandSchema.safeParse({ type: step.commandType, payload: step.payload });
    for (const issue of command.error?.issues ?? []) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path[0] === 'type' ? ['commandType'] : issue.path.map(String) });
  })
  .meta({ title: 'AutomationStepInput', description: 'run_script: scriptId, parameters; command: commandType, payload; notify: channelId; wait: seconds' });

export type AutomationTrigger = z.output<typeof TriggerInputSchema>;
export type AutomationTarget = z.output<typeof TargetInputSchema>;
export type AutomationStep = z.output<typeof StepInputSchema>;

const automationName = z.string().trim().min(1).max(255).describe('a name for people, 1 to 255 characters (not required to be unique)');
const steps = z.array(StepInputSchema).min(1).max(MAX_STEPS).describe(`1 to ${MAX_STEPS} steps, run in order`);

export const CreateAutomationSchema = z.strictObject({
  orgId: uuid().optional().describe('organization users: their own organization by default; others: required'),
  name: automationName,
  enabled: z.boolean().default(true).describe('true by default; false: its schedule, event and webhook triggers start nothing (a caller may still run it)'),
  trigger: TriggerInputSchema,
  target: TargetInputSchema,
  steps,
  onFailure: OnFailureSchema.default('stop'),
}).describe('A new automation of an organization: what starts it, the devices it acts on and its steps.');
export type CreateAutomationInput = z.input<typeof CreateAutomationSchema>;

export const UpdateAutomationSchema = z.strictObject({
  name: automationName.optional(),
  enabled: z.boolean().optional().describe('false: its schedule, event and webhook triggers start nothing'),
  trigger: TriggerInputSchema.optional().describe('replaces the trigger (a new webhook trigger gets a new token)'),
  target: TargetInputSchema.optional(),
  steps: steps.optional(),
  onFailure: OnFailureSchema.optional(),
}).describe('An automation’s changes: the fields given replace the current ones, those left out stay.');
export type UpdateAutomationInput = z.input<typeof UpdateAutomationSchema>;

export const AutomationListQuery = PageQuery.extend({
  orgId: uuid().optional().describe('required for partner and system callers'),
  enabled: z.boolean().or(queryBoolean).optional().describe('only enabled (true) or only disabled (false) automations'),
  triggerType: TriggerTypeSchema.optional(),
  search: z.string().trim().min(1).max(255).optional().describe('part of the name'),
}).strict();
export type AutomationListInput = z.input<typeof AutomationListQuery>;

// Views: the same shapes as the inputs, as object types.
const TriggerViewSchema = z.object(triggerShape).meta({ title: 'AutomationTrigger', description: 'what starts the automation' });
const TargetViewSchema = z.object(targetShape).meta({ title: 'AutomationTarget', description: 'the devices a run acts on, resolved when it starts' });
const StepViewSchema = z.object(stepShape).meta({ title: 'AutomationStep', description: 'one step, run on every target device in order' });

export const AutomationViewSchema = z
  .object({
    id: uuid().describe('the automation'),
    orgId: uuid().describe('its organization, whose devices it acts on'),
    name: z.string().describe('its name for people'),
    enabled: z.boolean().describe('false: its schedule, event and webhook triggers start nothing (callers may still run it)'),
    trigger: TriggerViewSchema,
    target: TargetViewSchema,
    steps: z.array(StepViewSchema).describe('its steps, run in order on every target device'),
    onFailure: OnFailureSchema,
    webhookUrl: z
      .string()
      .nullable()
      .describe('webhook triggers: POST here (no other credentials) to start a run; the token in it is the credential, shown to callers who may run or change the automation on its whole target'),
    nextRunAt: timestamp().nullable().describe('enabled schedule triggers: the next time it fires'),
    createdBy: uuid().nullable().describe('the user who created it; null when no user was behind the request'),
    createdAt: timestamp().describe('when it was created'),
    updatedAt: timestamp().describe('when it last changed'),
  })
  .meta({ title: 'Automation', description: 'Steps run on a set of devices when a trigger fires' });
export type AutomationView = z.output<typeof AutomationViewSchema>;
export const AutomationPageSchema = pageSchema(AutomationViewSchema, 'AutomationPage');

/** Only the fields the stored value holds (the view's optional fields are left out, not null). */
const defined = (value: StoredJson) => Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== null));

/** `showToken`: the caller may start the automation anyway (run or write it), so its webhook URL is no new power. */
function automationView(ctx: RequestContext, automation: Automation, showToken: boolean): AutomationView {
  const token = showToken && automation.webhookToken && ctx.runtime.secrets.decrypt(automation.webhookToken);
  return {
    id: automation.id,
    orgId: automation.orgId,
    name: automation.name,
    enabled: automation.enabled,
    trigger: defined(automation.trigger) as AutomationView['trigger'],
    target: defined(automation.target) as AutomationView['target'],
    steps: automation.steps.map(defined) as AutomationView['steps'],
    onFailure: automation.onFailure,
    webhookUrl: token ? `${ctx.runtime.config.publicUrl}/api/v1/automations/${automation.id}/trigger?token=${encodeURIComponent(token)}` : null,
    nextRunAt: automation.nextRunAt?.toISOString() ?? null,
    createdBy: automation.createdBy,
    createdAt: automation.createdAt.toISOString(),
    updatedAt: automation.updatedAt.toISOString(),
  };
}

/**
 * The views of automations, each with its webhook URL when the caller may run or change it on its
 * whole target (the permission decided once per organization; a site-limited caller's reach per
 * automation): the URL starts it without credentials, on every device of the target.
 */
async function automationViews(ctx: RequestContext, automations: Automation[]): Promise<AutomationView[]> {
  const mayTrigger = new Map<string, boolean>();
  for (const orgId of new Set(automations.filter((a) => a.webhookToken).map((a) => a.orgId))) {
    mayTrigger.set(orgId, (await permits(ctx, 'automations:run', { orgId })) || (await permits(ctx, 'automations:write', { orgId })));
  }
  const views: AutomationView[] = [];
  for (const a of automations) views.push(automationView(ctx, a, !!mayTrigger.get(a.orgId) && (await mayTarget(ctx, automationTarget(a)))));
  return views;
}

const viewOf = async (ctx: RequestContext, automation: Automation) => (await automationViews(ctx, [automation]))[0]!;

// ── rules ───────────────────────────────────────────────────────────────────────────────────────

/** An automation the caller may act on with `permission`; another tenant's is 404. */
export function accessibleAutomation(ctx: RequestContext, id: string, permission: Permission): Promise<Automation> {
  return loadOwned(ctx, Automation, id, permission, { resource: RESOURCE });
}

/** A schedule's stored form: the time zone always written out. */
function normalizeTrigger(trigger: AutomationTrigger): AutomationTrigger {
  return trigger.type === 'schedule' ? { ...trigger, timezone: trigger.timezone ?? 'UTC' } : trigger;
}

/** Sets where the schedule tick will next look at the automation: its next occurrence after `now` while enabled, else never. */
export function reschedule(automation: Pick<Automation, 'enabled' | 'trigger' | 'nextRunAt' | 'scheduledAt'>, now: Date): void {
  const trigger = automation.trigger as AutomationTrigger;
  const scheduled = automation.enabled && trigger.type === 'schedule';
  automation.nextRunAt = scheduled ? nextStart(triggerSchedule(trigger), now) : null;
  automation.scheduledAt = scheduled ? now : null;
}

/** An automation's target (`{type, siteIds|groupIds|deviceIds}`, its public shape) as the common target. */
export function automationTarget(automation: { orgId: string; target: AutomationTarget | Automation['target'] }): Target {
  const { type, siteIds, groupIds, deviceIds } = automation.target as AutomationTarget;
  return toTarget({ orgId: automation.orgId, ...(type === 'site' && { siteIds }), ...(type === 'group' && { groupIds }), ...(type === 'devices' && { deviceIds }) });
}

/**
 * The scripts and channels the steps name are the automation's organization's (404 `Script not found`
 * or `Alert channel not found` otherwise, as another tenant's).
 */
async function checkSteps(ctx: RequestContext, orgId: string, steps: AutomationStep[]): Promise<void> {
  const named = (type: AutomationStep['type'], id: (step: AutomationStep) => string) => [...new Set(steps.filter((s) => s.type === type).map((s) => id(s).toLowerCase()))];
  // An automation is read by everyone with automations:read and kept as written: a secret value has no
  // place in it (the script's sealed default serves instead).
  const secrets = await secretParameterNames(ctx, orgId, named('run_script', (s) => s.scriptId!));
  for (const step of steps) {
    const secret = step.type === 'run_script' ? Object.keys(step.parameters ?? {}).find((name) => secrets.get(step.scriptId!.toLowerCase())?.has(name)) : undefined;
    if (secret) throw badRequest(`Parameter ${secret} is secret: give it a default on the script instead of a value in the automation`);
  }
  await requireOrgChannels(ctx, orgId, named('notify', (s) => s.channelId!));
}

const uniqueName = uniqueNameGuard('automation_org_id_name_unique', 'An automation');

// ── operations ──────────────────────────────────────────────────────────────────────────────────

export async function listAutomations(ctx: RequestContext, rawQuery: AutomationListInput): Promise<Page<AutomationView>> {
  const query = parseInput(AutomationListQuery, rawQuery);
  await authorize(ctx, 'automations:read');
  const where: FilterQuery<Automation>[] = [(await tenantWhere<Automation>(ctx, { org: 'orgId', requestedOrgId: query.orgId })) ?? {}];
  if (query.enabled !== undefined) where.push({ enabled: query.enabled });
  if (query.triggerType) where.push({ triggerType: query.triggerType });
  if (query.search) where.push({ name: { $ilike: containsPattern(query.search) } });
  const [rows, total] = await ctx.em.findAndCount(Automation, { $and: where }, { orderBy: { name: 'asc', id: 'asc' }, ...pageOptions(query) });
  return toPage(await automationViews(ctx, rows), total, query);
}

export async function getAutomation(ctx: RequestContext, id: string): Promise<AutomationView> {
  return viewOf(ctx, await accessibleAutomation(ctx, id, 'automations:read'));
}

export async function createAutomation(ctx: RequestContext, rawInput: CreateAutomationInput): Promise<AutomationView> {
  const input = parseInput(CreateAutomationSchema, rawInput);
  const orgId = await targetOrgId(ctx, input.orgId);
  const principal = await authorize(ctx, 'automations:write', { orgId, resource: 'Organization' });
  await checkTargets(ctx, automationTarget({ orgId, target: input.target }));
  await checkSteps(ctx, orgId, input.steps);
  const trigger = normalizeTrigger(input.trigger);
  return uniqueName(
    withTransaction(ctx, async (tx) => {
      const automation = tx.em.create(Automation, {
        orgId,
        name: input.name,
        enabled: input.enabled,
        trigger,
        triggerType: trigger.type,
        target: input.target,
        steps: input.steps,
        onFailure: input.onFailure,
        webhookToken: trigger.type === 'webhook' ? tx.runtime.secrets.encrypt(randomToken()) : null,
        createdBy: principal.userId,
      });
      reschedule(automation, tx.runtime.clock.now());
      await tx.em.flush();
      await recordAudit(tx, {
        action: 'automation.create',
        resourceType: 'automation',
        resourceId: automation.id,
        orgId,
        changes: providedFields({ ...input, orgId }),
        details: { name: automation.name, trigger: trigger.type },
      });
      return viewOf(tx, automation);
    }),
  );
}

export async function updateAutomation(ctx: RequestContext, id: string, rawInput: UpdateAutomationInput): Promise<AutomationView> {
  const input = parseInput(UpdateAutomationSchema, rawInput);
  const current = await accessibleAutomation(ctx, id, 'automations:write');
  requirePrincipal(ctx);
  // Users limited to some sites act only on automations aimed within them, and aim them only there.
  await checkTargets(ctx, automationTarget(current), { stored: true });
  if (input.target) await checkTargets(ctx, automationTarget({ orgId: current.orgId, target: input.target }));
  if (input.steps) await checkSteps(ctx, current.orgId, input.steps);
  const trigger = input.trigger && normalizeTrigger(input.trigger);
  return uniqueName(
    withTransaction(ctx, async (tx) => {
      const automation = await tx.em.findOneOrFail(Automation, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
      const changes = applyChanges(automation, { name: input.name, enabled: input.enabled, trigger, target: input.target, steps: input.steps, onFailure: input.onFailure });
      if (changes.length === 0) return viewOf(tx, automation);
      if (changes.includes('trigger')) {
        automation.triggerType = automation.trigger.type as Automation['triggerType'];
        // Another trigger type drops the token; a webhook trigger written again gets a new one.
        automation.webhookToken = automation.triggerType === 'webhook' ? tx.runtime.secrets.encrypt(randomToken()) : null;
      }
      // Enabling, disabling or a new cron: the tick's next look is recomputed (disabled: never).
      if (changes.includes('trigger') || changes.includes('enabled')) reschedule(automation, tx.runtime.clock.now());
      await tx.em.flush();
      await recordAudit(tx, { action: 'automation.update', resourceType: 'automation', resourceId: id, orgId: automation.orgId, changes, details: { name: automation.name } });
      return viewOf(tx, automation);
    }),
  );
}

/** The automation and its runs go; commands and script executions its runs started stay with their devices. */
export async function deleteAutomation(ctx: RequestContext, id: string): Promise<void> {
  const automation = await accessibleAutomation(ctx, id, 'automations:write');
  await checkTargets(ctx, automationTarget(automation), { stored: true });
  await withTransaction(ctx, async (tx) => {
    await tx.em.nativeDelete(Automation, { id });
    await recordAudit(tx, { action: 'automation.delete', resourceType: 'automation', resourceId: id, orgId: automation.orgId, details: { name: automation.name } });
  });
}
