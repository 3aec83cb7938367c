import { z } from 'zod';
import { AlertChannel, AlertChannelDelivery } from '../../../entities/alert-channel.js';
import { AlertEscalation, AlertPolicy, type AlertPolicyTargets, type EscalationStep } from '../../../entities/alert-policy.js';
import { Alert, ALERT_SEVERITIES } from '../../../entities/alert.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, loadOwned, targetOrgId } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { notFound } from '../../errors.js';
import { emit } from '../../events/outbox.js';
import type { DomainEvent } from '../../events/types.js';
import { PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { parseInput, timestamp, uuid } from '../../validation.js';
import { queueChannelMessages, type QueuedMessage } from './alert-channels.js';
import { allFound, policyTarget } from './alert-policy-scope.js';
import { checkTargets, deviceGroupIds, matches } from '../devices/api.js';
import { AlertSeveritySchema } from './alert-conditions.js';
import { alertEventData } from './alerts.js';
import { recordAudit } from '../audit/api.js';
import { applyChanges } from '../shared/changes.js';
import type { ChannelMessage } from './channel-senders.js';
import { createNotifications } from '../notifications/api.js';

/*
 * Alert policies: which channels and users hear of which alerts (by severity, and by site, group or
 * device), and the escalation steps that reach further channels while an alert stays unacknowledged.
 * The alert-policies subscriber applies them to committed `alert.*` events; escalation steps wait as
 * `alert_escalation` rows, each scheduled with Agenda at its due time and also found by a frequent
 * check against the service's clock (so a missed or early job costs nothing).
 */

const RESOURCE = 'Alert policy';
export const ESCALATE_JOB = 'alert-policies.escalate';
export const ESCALATION_CHECK_JOB = 'alert-policies.escalation-check';
const ESCALATION_BATCH = 200;

const Ids = (max: number, min = 0) => z.array(uuid()).min(min).max(max).transform((ids) => [...new Set(ids.map((id) => id.toLowerCase()))]);

const targetsShape = {
  siteIds: Ids(100).optional().describe('alerts of devices of these sites'),
  groupIds: Ids(100).optional().describe('alerts of devices in these groups'),
  deviceIds: Ids(500).optional().describe('alerts of these devices'),
};
const TargetsInput = z.strictObject(targetsShape).meta({ title: 'AlertPolicyTargetsInput', description: 'A device matches through its site, its groups or its id; none given: every device of the organization' });
const StepShape = {
  afterMinutes: z.number().int().min(1).max(10_080).describe('minutes after the alert was raised, 1 to 10,080 (a week)'),
  channelIds: Ids(20, 1).describe('channels of the policy’s organization to notify'),
};
const StepInput = z.strictObject(StepShape).meta({ title: 'AlertEscalationStepInput', description: 'Sent when the alert is still unacknowledged after afterMinutes' });

const Name = z.string().trim().min(1).max(255);

export const CreateAlertPolicySchema = z.strictObject({
  orgId: uuid().optional().describe('required for partner and system callers'),
  name: Name.describe('shown in lists'),
  severities: z.array(AlertSeveritySchema).min(1).max(ALERT_SEVERITIES.length).transform((s) => [...new Set(s)]).describe('the severities of the alerts it takes'),
  channelIds: Ids(20).optional().describe('channels of the policy’s organization that receive the alerts (none: users only)'),
  targets: TargetsInput.nullable().optional(),
  notifyUserIds: Ids(100).optional().describe('users of the policy’s organization who receive in-app notifications'),
  escalationSteps: z.array(StepInput).max(10).optional().describe('up to 10 steps, in any order'),
  enabled: z.boolean().optional().describe('default true'),
}).meta({ title: 'CreateAlertPolicyInput', description: 'A new alert policy of an organization' });
export type CreateAlertPolicyInput = z.input<typeof CreateAlertPolicySchema>;

export const UpdateAlertPolicySchema = z
  .strictObject({
    name: Name.optional().describe('a new name'),
    severities: CreateAlertPolicySchema.shape.severities.optional().describe('replaces the severities'),
    channelIds: CreateAlertPolicySchema.shape.channelIds.describe('replaces the channels'),
    targets: TargetsInput.nullable().optional().describe('replaces the targets; null: every device of the organization'),
    notifyUserIds: CreateAlertPolicySchema.shape.notifyUserIds,
    escalationSteps: CreateAlertPolicySchema.shape.escalationSteps.describe('replaces the steps'),
    enabled: z.boolean().optional().describe('false: the policy takes no alerts until enabled again'),
  })
  .meta({ title: 'UpdateAlertPolicyInput', description: 'The fields to change; at least one' })
  .refine((input) => Object.values(input).some((v) => v !== undefined), 'Provide at least one field to change');
export type UpdateAlertPolicyInput = z.input<typeof UpdateAlertPolicySchema>;

export const ListAlertPoliciesQuery = PageQuery.extend({ orgId: uuid().optional().describe('required for partner and system callers') }).strict();
export type ListAlertPoliciesInput = z.input<typeof ListAlertPoliciesQuery>;

export const AlertPolicyViewSchema = z
  .object({
    id: uuid().describe('the policy'),
    orgId: uuid().describe('the organization it belongs to'),
    name: z.string().describe('shown in lists'),
    severities: z.array(AlertSeveritySchema).describe('the severities of the alerts it takes'),
    channelIds: z.array(uuid()).describe('channels that receive its alerts'),
    targets: z
      .object({ siteIds: z.array(uuid()).describe('devices of these sites'), groupIds: z.array(uuid()).describe('devices in these groups'), deviceIds: z.array(uuid()).describe('these devices') })
      .meta({ title: 'AlertPolicyTargets', description: 'A device matches through its site, its groups or its id' })
      .nullable()
      .describe('the devices whose alerts it takes; null: every device of the organization'),
    notifyUserIds: z.array(uuid()).describe('users who receive in-app notifications of its alerts'),
    escalationSteps: z
      .array(
        z
          .object({ afterMinutes: z.number().int().describe('minutes after the alert was raised'), channelIds: z.array(uuid()).describe('channels notified then') })
          .meta({ title: 'AlertEscalationStep', description: StepInput.description }),
      )
      .describe('by afterMinutes'),
    enabled: z.boolean().describe('a disabled policy takes no alerts'),
    createdBy: uuid().nullable().describe('the user who created it'),
    createdAt: timestamp().describe('when it was created'),
    updatedAt: timestamp().describe('when it last changed'),
  })
  .meta({ title: 'AlertPolicy', description: 'Which channels and users hear of which alerts of an organization, and how they escalate' });
export type AlertPolicyView = z.output<typeof AlertPolicyViewSchema>;
export const AlertPolicyPageSchema = pageSchema(AlertPolicyViewSchema, 'AlertPolicyPage').meta({ title: 'AlertPolicyPage', description: 'A page of alert policies, newest first' });

function policyView(policy: AlertPolicy): AlertPolicyView {
  const t = policy.targets;
  return {
    id: policy.id,
    orgId: policy.orgId,
    name: policy.name,
    severities: policy.severities as AlertPolicyView['severities'],
    channelIds: policy.channelIds,
    targets: t ? { siteIds: t.siteIds ?? [], groupIds: t.groupIds ?? [], deviceIds: t.deviceIds ?? [] } : null,
    notifyUserIds: policy.notifyUserIds,
    escalationSteps: policy.escalationSteps,
    enabled: policy.enabled,
    createdBy: policy.createdBy,
    createdAt: policy.createdAt.toISOString(),
    updatedAt: policy.updatedAt.toISOString(),
  };
}

/** Empty lists name nothing: targets that name nothing are the whole organization. */
function normalizeTargets(targets: z.output<typeof TargetsInput> | null | undefined): AlertPolicyTargets | null {
  if (!targets) return null;
  const named = Object.fromEntries(Object.entries(targets).filter(([, ids]) => ids && ids.length > 0)) as AlertPolicyTargets;
  return Object.keys(named).length > 0 ? named : null;
}

function sortedSteps(steps: EscalationStep[] | undefined): EscalationStep[] | undefined {
  return steps && [...steps].sort((a, b) => a.afterMinutes - b.afterMinutes);
}

/**
 * Everything a policy names must be its organization's: channels, users with an active membership
 * reaching it (of the organization, or of its partner for all or this one of its organizations), and
 * targets (`checkTargets`). Anything else is 404, as another tenant's resource is.
 */
async function checkReferences(ctx: RequestContext, orgId: string, refs: { channelIds?: string[]; escalationSteps?: EscalationStep[]; targets?: AlertPolicyTargets | null; notifyUserIds?: string[] }): Promise<void> {
  const channelIds = [...new Set([...(refs.channelIds ?? []), ...(refs.escalationSteps ?? []).flatMap((s) => s.channelIds)])];
  await allFound(ctx, AlertChannel, channelIds, { orgId }, 'Alert channel');
  // Users limited to some sites manage only policies within their sites: another's would send their channels other sites' alerts.
  if (refs.targets !== undefined) await checkTargets(ctx, policyTarget({ orgId, targets: refs.targets }));
  const userIds = refs.notifyUserIds ?? [];
  if (userIds.length > 0 && (await reachingUsers(ctx, orgId, userIds)).length !== userIds.length) throw notFound('User');
}

/**
 * Of `userIds`, those with an active membership reaching the organization: of the organization
 * (limited to some sites: only when `siteId` is one of them, when given), or of its partner for all
 * or this one of its organizations.
 */
async function reachingUsers(ctx: RequestContext, orgId: string, userIds: string[], site?: { siteId: string | null }): Promise<string[]> {
  const siteCondition = site ? `and (jsonb_array_length(m.site_ids) = 0 or m.site_ids @> to_jsonb(array[?::text]))` : '';
  const rows = (await ctx.em.execute(
    `select distinct m.user_id from membership m join organization o on o.id = ?
      where m.user_id in (?) and m.status = 'active'
        and ((m.org_id = o.id ${siteCondition}) or (m.scope = 'partner' and m.partner_id = o.partner_id and (m.org_access = 'all' or m.org_ids @> to_jsonb(array[o.id::text]))))`,
    [orgId, userIds, ...(site ? [site.siteId] : [])],
  )) as { user_id: string }[];
  return rows.map((r) => r.user_id);
}

function requirePolicy(ctx: RequestContext, id: string, access: 'read' | 'write'): Promise<AlertPolicy> {
  return loadOwned(ctx, AlertPolicy, id, access === 'read' ? 'alerts:read' : 'alerts:write', { resource: RESOURCE });
}

export async function listAlertPolicies(ctx: RequestContext, raw: ListAlertPoliciesInput): Promise<Page<AlertPolicyView>> {
  const query = parseInput(ListAlertPoliciesQuery, raw);
  const orgId = await targetOrgId(ctx, query.orgId, RESOURCE);
  await authorize(ctx, 'alerts:read', { orgId, resource: RESOURCE });
  const [rows, total] = await ctx.em.findAndCount(AlertPolicy, { orgId }, { orderBy: { createdAt: 'desc', id: 'desc' }, ...pageOptions(query) });
  return toPage(rows.map(policyView), total, query);
}

export async function getAlertPolicy(ctx: RequestContext, id: string): Promise<AlertPolicyView> {
  return policyView(await requirePolicy(ctx, id, 'read'));
}

export async function createAlertPolicy(ctx: RequestContext, raw: CreateAlertPolicyInput): Promise<AlertPolicyView> {
  const input = parseInput(CreateAlertPolicySchema, raw);
  const orgId = await targetOrgId(ctx, input.orgId, RESOURCE);
  const principal = await authorize(ctx, 'alerts:write', { orgId, resource: RESOURCE });
  const targets = normalizeTargets(input.targets);
  const escalationSteps = sortedSteps(input.escalationSteps) ?? [];
  await checkReferences(ctx, orgId, { channelIds: input.channelIds, escalationSteps, targets, notifyUserIds: input.notifyUserIds });
  return withTransaction(ctx, async (tx) => {
    const policy = tx.em.create(AlertPolicy, {
      orgId,
      name: input.name,
      severities: input.severities,
      channelIds: input.channelIds ?? [],
      targets,
      notifyUserIds: input.notifyUserIds ?? [],
      escalationSteps,
      enabled: input.enabled ?? true,
      createdBy: principal.userId,
    });
    await tx.em.flush();
    await recordAudit(tx, { action: 'alert_policy.create', resourceType: 'alert_policy', resourceId: policy.id, orgId, details: { name: policy.name } });
    return policyView(policy);
  });
}

export async function updateAlertPolicy(ctx: RequestContext, id: string, raw: UpdateAlertPolicyInput): Promise<AlertPolicyView> {
  const input = parseInput(UpdateAlertPolicySchema, raw);
  const policy = await requirePolicy(ctx, id, 'write');
  const targets = input.targets === undefined ? undefined : normalizeTargets(input.targets);
  const escalationSteps = sortedSteps(input.escalationSteps);
  await checkTargets(ctx, policyTarget(policy), { stored: true });
  await checkReferences(ctx, policy.orgId, { channelIds: input.channelIds, escalationSteps, targets, notifyUserIds: input.notifyUserIds });
  return withTransaction(ctx, async (tx) => {
    const changes = applyChanges(policy, { name: input.name, severities: input.severities, channelIds: input.channelIds, targets, notifyUserIds: input.notifyUserIds, escalationSteps, enabled: input.enabled });
    if (changes.length === 0) return policyView(policy);
    await tx.em.persistAndFlush(policy);
    await recordAudit(tx, { action: 'alert_policy.update', resourceType: 'alert_policy', resourceId: policy.id, orgId: policy.orgId, changes, details: { name: policy.name } });
    return policyView(policy);
  });
}

/** The policy and its waiting escalation steps go. */
export async function deleteAlertPolicy(ctx: RequestContext, id: string): Promise<void> {
  const policy = await requirePolicy(ctx, id, 'write');
  await checkTargets(ctx, policyTarget(policy), { stored: true });
  await withTransaction(ctx, async (tx) => {
    await tx.em.nativeDelete(AlertPolicy, { id: policy.id });
    await recordAudit(tx, { action: 'alert_policy.delete', resourceType: 'alert_policy', resourceId: policy.id, orgId: policy.orgId, details: { name: policy.name } });
  });
}

// ── applying policies to alerts ─────────────────────────────────────────────────────────────────

function messageOf(tx: RequestContext, alert: Alert, kind: ChannelMessage['kind'], escalationStep: number | null = null): ChannelMessage {
  return {
    kind,
    orgId: alert.orgId,
    alertId: alert.id,
    title: alert.title,
    message: alert.message,
    severity: alert.severity,
    status: alert.status,
    deviceId: alert.deviceId,
    ruleId: alert.ruleId,
    triggeredAt: alert.triggeredAt.toISOString(),
    escalationStep,
    timestamp: tx.runtime.clock.now().toISOString(),
  };
}

function suppressed(tx: RequestContext, alert: Alert): boolean {
  return alert.status === 'suppressed' || (alert.suppressedUntil !== null && alert.suppressedUntil > tx.runtime.clock.now());
}

/** Whether the alert still wants someone: not acknowledged, resolved or suppressed. */
function unattended(tx: RequestContext, alert: Alert): boolean {
  return alert.status === 'active' && alert.acknowledgedAt === null && alert.resolvedAt === null && !suppressed(tx, alert);
}

/** The enabled policies of the alert's organization that take its severity and whose targets hold its device. */
async function matchingPolicies(tx: RequestContext, alert: Alert): Promise<AlertPolicy[]> {
  const policies = (await tx.em.find(AlertPolicy, { orgId: alert.orgId, enabled: true }, { orderBy: { createdAt: 'asc' } })).filter((p) => p.severities.includes(alert.severity));
  const groupIds = alert.deviceId && policies.some((p) => p.targets?.groupIds) ? await deviceGroupIds(tx.em, alert.deviceId) : [];
  return policies.filter((p) => matches({ id: alert.deviceId, orgId: alert.orgId, siteId: alert.siteId }, policyTarget(p), groupIds));
}

/**
 * An alert was raised: its policies' channels and users hear of it, and their escalation steps start
 * waiting. Only suppression silences it: one acknowledged or resolved before its event came through was
 * still raised (its steps will not escalate, and a resolve follows its own event).
 */
async function alertTriggered(tx: RequestContext, alert: Alert): Promise<void> {
  if (suppressed(tx, alert)) return;
  const policies = await matchingPolicies(tx, alert);
  const message = messageOf(tx, alert, 'triggered');
  const messages: QueuedMessage[] = policies.flatMap((policy) =>
    policy.channelIds.map((channelId) => ({ channelId, orgId: alert.orgId, kind: 'triggered' as const, alertId: alert.id, policyId: policy.id, dedupKey: `${alert.id}:triggered`, message })),
  );
  await queueChannelMessages(tx, messages);
  // Only users who may still see the alert: a membership changed since the policy named them, or limited to other sites, gets nothing.
  const named = [...new Set(policies.flatMap((p) => p.notifyUserIds))];
  const userIds = named.length > 0 ? await reachingUsers(tx, alert.orgId, named, { siteId: alert.siteId }) : [];
  await createNotifications(
    tx,
    userIds.map((userId) => ({ userId, orgId: alert.orgId, type: 'alert', title: alert.title, message: alert.message, severity: alert.severity, alertId: alert.id, dedupKey: `alert:${alert.id}:triggered` })),
  );
  const steps = policies.flatMap((policy) => policy.escalationSteps.map((step, index) => ({ policy, step, index })));
  if (steps.length === 0) return;
  const values = steps.map(() => '(gen_random_uuid(), ?::uuid, ?::uuid, ?::uuid, ?, ?::timestamptz, ?::timestamptz)').join(', ');
  const rows = (await tx.em.execute(
    `insert into alert_escalation (id, org_id, alert_id, policy_id, step, due_at, created_at) values ${values}
     on conflict (alert_id, policy_id, step) do nothing returning id, due_at`,
    steps.flatMap(({ policy, step, index }) => [alert.orgId, alert.id, policy.id, index, new Date(alert.triggeredAt.getTime() + step.afterMinutes * 60_000), tx.runtime.clock.now()]),
  )) as { id: string; due_at: Date }[];
  tx.afterCommit(async () => {
    for (const row of rows) await tx.runtime.jobs.schedule(ESCALATE_JOB, { escalationId: row.id }, new Date(row.due_at));
  });
}

/** Acknowledged, resolved or suppressed: its waiting escalation steps are settled. */
async function cancelEscalations(tx: RequestContext, alertId: string): Promise<void> {
  await tx.em.nativeUpdate(AlertEscalation, { alertId, status: 'pending' }, { status: 'cancelled', settledAt: tx.runtime.clock.now() });
}

/** A resolved alert: every channel that was told of it hears it is over (PagerDuty resolves the incident by its dedup key). */
async function alertResolved(tx: RequestContext, alert: Alert): Promise<void> {
  await cancelEscalations(tx, alert.id);
  const told = (await tx.em.find(AlertChannelDelivery, { alertId: alert.id, kind: { $in: ['triggered', 'escalated'] } }, { fields: ['channelId', 'policyId'] })) as AlertChannelDelivery[];
  const message = messageOf(tx, alert, 'resolved');
  const channels = new Map(told.map((d) => [d.channelId, d.policyId]));
  await queueChannelMessages(
    tx,
    [...channels].map(([channelId, policyId]) => ({ channelId, orgId: alert.orgId, kind: 'resolved' as const, alertId: alert.id, policyId, dedupKey: `${alert.id}:resolved`, message })),
  );
}

/** The alert-policies subscriber's work for one committed alert event (idempotent: deliveries, notifications and steps are keyed). */
export async function applyAlertPolicies(tx: RequestContext, event: DomainEvent): Promise<void> {
  const alertId = (event.data as { alertId?: string }).alertId;
  if (!alertId) return;
  const alert = await tx.em.findOne(Alert, { id: alertId }, { refresh: true });
  if (!alert) return;
  if (event.type === 'alert.triggered') await alertTriggered(tx, alert);
  else if (event.type === 'alert.resolved') await alertResolved(tx, alert);
  else await cancelEscalations(tx, alert.id);
}

export const EscalateJobSchema = z.object({ escalationId: uuid() });

/**
 * Escalation steps that are due by the service's clock (only `escalationId`, when given): each either
 * escalates (its channels are sent the alert and `alert.escalated` is emitted) or, when the alert was
 * attended to meanwhile, is cancelled. Steps are claimed `for update skip locked`, so instances never
 * escalate one twice. Answers how many escalated.
 */
export async function escalateDue(ctx: RequestContext, escalationId?: string): Promise<number> {
  return withTransaction(ctx, async (tx) => {
    const now = tx.runtime.clock.now();
    const due = (await tx.em.execute(
      `select id from alert_escalation where status = 'pending' and due_at <= ? ${escalationId ? 'and id = ?' : ''} order by due_at limit ${ESCALATION_BATCH} for update skip locked`,
      escalationId ? [now, escalationId] : [now],
    )) as { id: string }[];
    if (due.length === 0) return 0;
    const escalations = await tx.em.find(AlertEscalation, { id: { $in: due.map((d) => d.id) } }, { refresh: true });
    let escalated = 0;
    for (const escalation of escalations) {
      const [alert, policy] = await Promise.all([tx.em.findOne(Alert, { id: escalation.alertId }, { refresh: true }), tx.em.findOne(AlertPolicy, { id: escalation.policyId })]);
      const step = policy?.escalationSteps[escalation.step];
      escalation.settledAt = now;
      if (!alert || !policy || !step || !unattended(tx, alert)) {
        escalation.status = 'cancelled';
        continue;
      }
      escalation.status = 'escalated';
      escalated++;
      const message = messageOf(tx, alert, 'escalated', escalation.step + 1);
      await queueChannelMessages(
        tx,
        step.channelIds.map((channelId) => ({ channelId, orgId: alert.orgId, kind: 'escalated' as const, alertId: alert.id, policyId: policy.id, dedupKey: `${alert.id}:escalated:${policy.id}:${escalation.step}`, message })),
      );
      await emit(tx, { type: 'alert.escalated', orgId: alert.orgId, data: alertEventData(alert) });
    }
    await tx.em.flush();
    return escalated;
  });
}
