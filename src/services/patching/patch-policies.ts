import type { FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { PatchPolicy, type PatchAutoApproveRule, type PatchPolicySchedule } from '../../../entities/patch.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, loadOwned, targetOrgId, tenantWhere, visibleSiteIds } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { forbidden } from '../../errors.js';
import { cursorListFields, cursorPageSchema, finishCursorPage, keysetWhere } from '../../pagination.js';
import { enumValues, parseInput, queryBoolean, timestamp, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { checkTargets, toTarget } from '../devices/api.js';
import { applyChanges } from '../shared/changes.js';
import { policyTargetsInput, policyTargetsView, storedTargets, targetsView } from '../shared/policy-targets.js';
import { cronError, isTimeZone } from '../shared/schedule.js';
import { uniqueNameGuard } from '../shared/unique-name.js';
import { applyPatchPolicy, policyTarget } from './auto-approval.js';
import { installForPolicy } from './patch-jobs.js';
import { PATCH_SEVERITIES, PATCH_SOURCES, PatchSeveritySchema, PatchSourceSchema } from './patches.js';

/*
 * Patch policies: which devices of an organization (sites, groups, devices; none: all of them), the
 * rules by which their pending patches are approved at once (auto-approval.ts), when approved patches
 * are installed (at once or on a cron in a time zone) and whether the devices restart afterwards.
 */

const RESOURCE = 'Patch policy';

export const REBOOT_BEHAVIORS = ['never', 'if_required', 'always'] as const;
export const RebootBehaviorSchema = z
  .enum(REBOOT_BEHAVIORS)
  .meta({ title: 'PatchRebootBehavior', description: 'Whether devices restart after installing patches' })
  .register(enumValues, { never: 'Never restart.', if_required: 'Restart when a patch requires it.', always: 'Always restart after installing.' });

export const SCHEDULE_TYPES = ['immediate', 'cron'] as const;
export const PatchScheduleTypeSchema = z
  .enum(SCHEDULE_TYPES)
  .meta({ title: 'PatchScheduleType', description: 'When approved patches are installed' })
  .register(enumValues, { immediate: 'As soon as they are approved.', cron: 'At the times a cron expression names, in a time zone.' });

const TargetsInput = policyTargetsInput('PatchPolicyTargetsInput');

const RuleInput = z
  .strictObject({
    sources: z.array(PatchSourceSchema).min(1).max(PATCH_SOURCES.length).transform((s) => [...new Set(s)]).optional().describe('the patch’s source is one of these'),
    severities: z.array(PatchSeveritySchema).min(1).max(PATCH_SEVERITIES.length).transform((s) => [...new Set(s)]).optional().describe('the patch’s severity is one of these'),
    minAgeDays: z.number().int().min(0).max(3650).optional().describe('the patch was released at least this many days before today (UTC); a patch without a release date does not match'),
  })
  .meta({ title: 'PatchAutoApproveRuleInput', description: 'A pending patch matching every field given is approved by the policy' });

const ScheduleInput = z
  .strictObject({
    type: PatchScheduleTypeSchema,
    cron: z.string().trim().min(1).max(100).optional().describe('cron: a five-field cron expression (minute hour day-of-month month day-of-week)'),
    timezone: z.string().trim().min(1).max(64).optional().describe('cron: the IANA time zone the cron is read in'),
  })
  .superRefine((schedule, ctx) => {
    if (schedule.type === 'immediate') {
      for (const key of ['cron', 'timezone'] as const) if (schedule[key] !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: 'not a field of immediate schedules' });
      return;
    }
    if (schedule.cron === undefined) ctx.addIssue({ code: 'custom', path: ['cron'], message: 'required for cron schedules' });
    if (schedule.timezone === undefined) ctx.addIssue({ code: 'custom', path: ['timezone'], message: 'required for cron schedules' });
    else if (!isTimeZone(schedule.timezone)) ctx.addIssue({ code: 'custom', path: ['timezone'], message: 'must be an IANA time zone such as Europe/Berlin' });
    const error = schedule.cron === undefined ? null : cronError(schedule.cron);
    if (error) ctx.addIssue({ code: 'custom', path: ['cron'], message: `invalid cron expression: ${error}` });
  })
  .meta({ title: 'PatchScheduleInput', description: 'immediate: nothing else; cron: cron and timezone' });

const Name = z.string().trim().min(1).max(255);
const Rules = z.array(RuleInput).max(20);

export const CreatePatchPolicySchema = z
  .strictObject({
    orgId: uuid().optional().describe('required for partner and system callers'),
    name: Name.describe('unique in the organization'),
    enabled: z.boolean().optional().describe('default true; a disabled policy approves nothing'),
    targets: TargetsInput.describe('the devices it applies to; empty: every device of the organization'),
    autoApprove: Rules.describe('up to 20 rules; a pending patch a targeted device reports that matches one is approved'),
    schedule: ScheduleInput,
    rebootBehavior: RebootBehaviorSchema,
  })
  .meta({ title: 'CreatePatchPolicyInput', description: 'A new patch policy of an organization' });
export type CreatePatchPolicyInput = z.input<typeof CreatePatchPolicySchema>;

export const UpdatePatchPolicySchema = z
  .strictObject({
    name: Name.optional().describe('a new name'),
    enabled: z.boolean().optional().describe('false: the policy approves nothing until enabled again'),
    targets: TargetsInput.optional().describe('replaces the targets; empty: every device of the organization'),
    autoApprove: Rules.optional().describe('replaces the rules'),
    schedule: ScheduleInput.optional().describe('replaces the schedule'),
    rebootBehavior: RebootBehaviorSchema.optional(),
  })
  .meta({ title: 'UpdatePatchPolicyInput', description: 'The fields to change; at least one' })
  .refine((input) => Object.values(input).some((v) => v !== undefined), 'Provide at least one field to change');
export type UpdatePatchPolicyInput = z.input<typeof UpdatePatchPolicySchema>;

export const PatchPolicyViewSchema = z
  .object({
    id: uuid().describe('the policy'),
    orgId: uuid().describe('the organization it belongs to'),
    name: z.string().describe('unique in the organization'),
    enabled: z.boolean().describe('a disabled policy approves nothing'),
    targets: policyTargetsView('PatchPolicyTargets'),
    autoApprove: z
      .array(
        z
          .object({
            sources: z.array(PatchSourceSchema).optional().describe('the patch’s source is one of these'),
            severities: z.array(PatchSeveritySchema).optional().describe('the patch’s severity is one of these'),
            minAgeDays: z.number().int().optional().describe('released at least this many days before today (UTC)'),
          })
          .meta({ title: 'PatchAutoApproveRule', description: RuleInput.description }),
      )
      .describe('a pending patch matching one of these is approved'),
    schedule: z
      .object({
        type: PatchScheduleTypeSchema,
        cron: z.string().optional().describe('cron schedules: the cron expression'),
        timezone: z.string().optional().describe('cron schedules: the IANA time zone it is read in'),
      })
      .meta({ title: 'PatchSchedule', description: 'When approved patches are installed' }),
    rebootBehavior: RebootBehaviorSchema,
    createdAt: timestamp().describe('when it was created'),
    updatedAt: timestamp().describe('when it last changed'),
  })
  .meta({ title: 'PatchPolicy', description: 'Which devices of an organization, which of their patches are approved at once, and when and how they are installed' });
export type PatchPolicyView = z.output<typeof PatchPolicyViewSchema>;

function policyView(policy: PatchPolicy): PatchPolicyView {
  return {
    id: policy.id,
    orgId: policy.orgId,
    name: policy.name,
    enabled: policy.enabled,
    targets: targetsView(policy.targets),
    autoApprove: policy.autoApprove as PatchPolicyView['autoApprove'],
    schedule: policy.schedule as PatchPolicyView['schedule'],
    rebootBehavior: policy.rebootBehavior as PatchPolicyView['rebootBehavior'],
    createdAt: policy.createdAt.toISOString(),
    updatedAt: policy.updatedAt.toISOString(),
  };
}

/** The targets in the common normal form (`toTarget`: ids lower-cased, deduplicated, sorted, empty lists dropped); naming nothing: null, the whole organization. */
function normalizeTargets(orgId: string, targets: z.output<typeof TargetsInput>): PatchPolicy['targets'] {
  return storedTargets(toTarget({ orgId, ...targets }));
}

const normalizeRules = (rules: z.output<typeof Rules>): PatchAutoApproveRule[] => rules.map((rule) => Object.fromEntries(Object.entries(rule).filter(([, v]) => v !== undefined)));
const normalizeSchedule = (schedule: z.output<typeof ScheduleInput>): PatchPolicySchedule =>
  schedule.type === 'cron' ? { type: 'cron', cron: schedule.cron!, timezone: schedule.timezone! } : { type: 'immediate' };

/**
 * A policy's approvals hold for each patch in its whole organization, as a manual decision does: users
 * limited to some sites do not write policies (403, after their targets are checked as everywhere).
 */
async function checkWriter(ctx: RequestContext, policy: Pick<PatchPolicy, 'orgId' | 'targets'>, stored = false): Promise<void> {
  await checkTargets(ctx, policyTarget(policy), { stored });
  if (visibleSiteIds(ctx) !== null) throw forbidden('Users limited to some sites cannot write patch policies: their approvals hold for the whole organization');
}

const uniqueName = uniqueNameGuard('patch_policy_org_id_name_unique', 'A patch policy');

function requirePolicy(ctx: RequestContext, id: string, access: 'read' | 'write'): Promise<PatchPolicy> {
  return loadOwned(ctx, PatchPolicy, id, access === 'read' ? 'patches:read' : 'patches:write', { resource: RESOURCE });
}

// ── lists ───────────────────────────────────────────────────────────────────────────────────────

const filters = {
  orgId: uuid().optional().describe('only policies of this organization'),
  enabled: z.boolean().or(queryBoolean).optional().describe('only enabled (true) or only disabled (false) policies'),
};
const PolicyFilters = z.strictObject(filters);
export const PatchPolicyListQuery = z.strictObject({ ...filters, ...cursorListFields });
export type PatchPolicyListInput = z.input<typeof PatchPolicyListQuery>;
export const PatchPolicyPageSchema = cursorPageSchema(PatchPolicyViewSchema, 'PatchPolicyPage', 'patch policies, newest first');
export type PatchPolicyPage = z.output<typeof PatchPolicyPageSchema>;

async function policyFilter(ctx: RequestContext, query: z.output<typeof PolicyFilters>): Promise<FilterQuery<PatchPolicy>> {
  await authorize(ctx, 'patches:read');
  const where: FilterQuery<PatchPolicy>[] = [(await tenantWhere<PatchPolicy>(ctx, { org: 'orgId', requestedOrgId: query.orgId })) ?? {}];
  if (query.enabled !== undefined) where.push({ enabled: query.enabled });
  return { $and: where } as FilterQuery<PatchPolicy>;
}

/** The patch policies of the organizations the caller sees, newest first, in keyset pages. */
export async function listPatchPolicies(ctx: RequestContext, raw: PatchPolicyListInput): Promise<PatchPolicyPage> {
  const query = parseInput(PatchPolicyListQuery, raw);
  const filter = await policyFilter(ctx, query);
  const keyset = keysetWhere('createdAt', 'date', 'desc', query.cursor);
  const rows = await ctx.em.find(PatchPolicy, { $and: [filter, keyset.where] } as FilterQuery<PatchPolicy>, { orderBy: keyset.orderBy, limit: query.limit + 1, disableIdentityMap: true });
  const page = finishCursorPage(rows, query.limit, (p) => p.createdAt.toISOString());
  return { data: page.items.map(policyView), nextCursor: page.nextCursor };
}

/** How many policies the list's filters select (its connection's `totalCount`). */
export async function countPatchPolicies(ctx: RequestContext, raw: z.input<typeof PolicyFilters>): Promise<number> {
  return ctx.em.count(PatchPolicy, await policyFilter(ctx, parseInput(PolicyFilters, raw)));
}

export async function getPatchPolicy(ctx: RequestContext, id: string): Promise<PatchPolicyView> {
  return policyView(await requirePolicy(ctx, id, 'read'));
}

// ── writes ──────────────────────────────────────────────────────────────────────────────────────

/** Creates the policy and, when enabled, approves at once what it matches (one transaction). */
export async function createPatchPolicy(ctx: RequestContext, raw: CreatePatchPolicyInput): Promise<PatchPolicyView> {
  const input = parseInput(CreatePatchPolicySchema, raw);
  const orgId = await targetOrgId(ctx, input.orgId, RESOURCE);
  await authorize(ctx, 'patches:write', { orgId, resource: RESOURCE });
  const targets = normalizeTargets(orgId, input.targets);
  await checkWriter(ctx, { orgId, targets });
  return uniqueName(
    withTransaction(ctx, async (tx) => {
      const policy = tx.em.create(PatchPolicy, {
        orgId,
        name: input.name,
        enabled: input.enabled ?? true,
        targets,
        autoApprove: normalizeRules(input.autoApprove),
        schedule: normalizeSchedule(input.schedule),
        rebootBehavior: input.rebootBehavior,
      });
      await tx.em.flush();
      const approved = await applyPatchPolicy(tx, policy);
      await installForPolicy(tx, policy);
      await recordAudit(tx, { action: 'patch_policy.create', resourceType: 'patch_policy', resourceId: policy.id, orgId, details: { name: policy.name, approved } });
      return policyView(policy);
    }),
  );
}

/** Changes the policy and, when it is enabled afterwards, approves at once what it now matches (one transaction). */
export async function updatePatchPolicy(ctx: RequestContext, id: string, raw: UpdatePatchPolicyInput): Promise<PatchPolicyView> {
  const input = parseInput(UpdatePatchPolicySchema, raw);
  const policy = await requirePolicy(ctx, id, 'write');
  const targets = input.targets === undefined ? undefined : normalizeTargets(policy.orgId, input.targets);
  await checkWriter(ctx, policy, true);
  if (targets !== undefined) await checkWriter(ctx, { orgId: policy.orgId, targets });
  return uniqueName(
    withTransaction(ctx, async (tx) => {
      const changes = applyChanges(policy, {
        name: input.name,
        enabled: input.enabled,
        targets,
        autoApprove: input.autoApprove && normalizeRules(input.autoApprove),
        schedule: input.schedule && normalizeSchedule(input.schedule),
        rebootBehavior: input.rebootBehavior,
      });
      if (changes.length === 0) return policyView(policy);
      await tx.em.persistAndFlush(policy);
      const approved = await applyPatchPolicy(tx, policy);
      await installForPolicy(tx, policy);
      await recordAudit(tx, { action: 'patch_policy.update', resourceType: 'patch_policy', resourceId: policy.id, orgId: policy.orgId, changes, details: { name: policy.name, approved } });
      return policyView(policy);
    }),
  );
}

/** The policy goes; the approvals it made stay (with its id). */
export async function deletePatchPolicy(ctx: RequestContext, id: string): Promise<void> {
  const policy = await requirePolicy(ctx, id, 'write');
  await checkWriter(ctx, policy, true);
  await withTransaction(ctx, async (tx) => {
    await tx.em.nativeDelete(PatchPolicy, { id: policy.id });
    await recordAudit(tx, { action: 'patch_policy.delete', resourceType: 'patch_policy', resourceId: policy.id, orgId: policy.orgId, details: { name: policy.name } });
  });
}
