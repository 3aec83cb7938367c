import type { FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { ConfigurationPolicy } from '../../../entities/configuration-policy.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, requirePrincipal, targetOrgId, tenantWhere } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { conflict, notFound } from '../../errors.js';
import { cursorListFields, cursorPageSchema, finishCursorPage, keysetWhere } from '../../pagination.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { checkTargets } from '../devices/api.js';
import { applyChanges, providedFields } from '../shared/changes.js';
import { policyTargetsInput, policyTargetsView, storedTargets, targetsView } from '../shared/policy-targets.js';
import { optionalText } from '../shared/text.js';
import { evaluatePolicy, lockPolicy, policyTarget, releaseDevices, requirePolicy } from './evaluation.js';
import { checkRemediationRefs } from './remediation.js';
import { RuleViewSchema, RulesInput, storedRules } from './rules.js';

/*
 * Configuration policies: which devices of an organization (sites, groups, devices; none: all of them)
 * and the rules they must pass. A new policy is `inactive`; activating it evaluates it at once and
 * keeps it evaluated (reports, the interval); deactivating stops that.
 */

const RESOURCE = 'Configuration policy';

export const POLICY_STATUSES = ['active', 'inactive'] as const;
export const PolicyStatusSchema = z
  .enum(POLICY_STATUSES)
  .meta({ title: 'ConfigurationPolicyStatus', description: 'Whether a configuration policy is evaluated' })
  .register(enumValues, { active: 'Evaluated on activation, on inventory reports and on the interval.', inactive: 'Not evaluated.' });

const TargetsInput = policyTargetsInput('ConfigurationPolicyTargetsInput');
const Name = z.string().trim().min(1).max(255);
const Description = optionalText(4000);

const policyFields = {
  name: Name.describe('the policy’s name'),
  description: Description.describe('what it is for; left out: none'),
  targets: TargetsInput.describe('the devices it applies to; empty: every device of the organization'),
  rules: RulesInput,
};

export const CreateConfigurationPolicySchema = z
  .strictObject({ orgId: uuid().optional().describe('required for partner and system callers'), ...policyFields })
  .meta({ title: 'CreateConfigurationPolicyInput', description: 'A new configuration policy of an organization (inactive until activated)' });
export type CreateConfigurationPolicyInput = z.input<typeof CreateConfigurationPolicySchema>;

export const ReplaceConfigurationPolicySchema = z
  .strictObject(policyFields)
  .meta({ title: 'ReplaceConfigurationPolicyInput', description: 'Every field of a configuration policy (PUT)' });
export type ReplaceConfigurationPolicyInput = z.input<typeof ReplaceConfigurationPolicySchema>;

export const UpdateConfigurationPolicySchema = z
  .strictObject({
    name: Name.optional().describe('a new name'),
    description: z.string().trim().max(4000).nullable().optional().describe('a new description; null or empty clears it'),
    targets: TargetsInput.optional().describe('replaces the targets; empty: every device of the organization'),
    rules: RulesInput.optional().describe('replaces the rules'),
  })
  .meta({ title: 'UpdateConfigurationPolicyInput', description: 'The fields to change; at least one' })
  .refine((input) => Object.values(input).some((v) => v !== undefined), 'Provide at least one field to change');
export type UpdateConfigurationPolicyInput = z.input<typeof UpdateConfigurationPolicySchema>;

export const ConfigurationPolicyViewSchema = z
  .object({
    id: uuid().describe('the policy'),
    orgId: uuid().describe('the organization it belongs to'),
    name: z.string().describe('its name'),
    description: z.string().nullable().describe('what it is for; null when not given'),
    targets: policyTargetsView('ConfigurationPolicyTargets'),
    rules: z.array(RuleViewSchema).describe('a device complies when it passes all of them'),
    status: PolicyStatusSchema,
    lastEvaluatedAt: timestamp().nullable().describe('when it was last evaluated on all its devices; null: never'),
    createdAt: timestamp().describe('when it was created'),
    updatedAt: timestamp().describe('when it last changed'),
  })
  .meta({ title: 'ConfigurationPolicy', description: 'Rules an organization’s targeted devices must pass, checked against their inventory and by their agents' });
export type ConfigurationPolicyView = z.output<typeof ConfigurationPolicyViewSchema>;

export function policyView(policy: ConfigurationPolicy): ConfigurationPolicyView {
  return {
    id: policy.id,
    orgId: policy.orgId,
    name: policy.name,
    description: policy.description,
    targets: targetsView(policy.targets),
    rules: policy.rules as ConfigurationPolicyView['rules'],
    status: policy.status as ConfigurationPolicyView['status'],
    lastEvaluatedAt: policy.lastEvaluatedAt?.toISOString() ?? null,
    createdAt: policy.createdAt.toISOString(),
    updatedAt: policy.updatedAt.toISOString(),
  };
}


// ── lists ───────────────────────────────────────────────────────────────────────────────────────

const filters = {
  orgId: uuid().optional().describe('only policies of this organization'),
  status: PolicyStatusSchema.optional().describe('only active or only inactive policies'),
};
const PolicyFilters = z.strictObject(filters);
export const ConfigurationPolicyListQuery = z.strictObject({ ...filters, ...cursorListFields });
export type ConfigurationPolicyListInput = z.input<typeof ConfigurationPolicyListQuery>;
export const ConfigurationPolicyPageSchema = cursorPageSchema(ConfigurationPolicyViewSchema, 'ConfigurationPolicyPage', 'configuration policies, newest first');
type ConfigurationPolicyPage = z.output<typeof ConfigurationPolicyPageSchema>;

/** `policies:read`; another tenant's organization named by `orgId` is 404. */
export async function authorizeLists(ctx: RequestContext, orgId: string | undefined): Promise<void> {
  await authorize(ctx, 'policies:read');
  if (orgId) await authorize(ctx, 'policies:read', { orgId, resource: 'Organization' });
}

async function policyFilter(ctx: RequestContext, query: z.output<typeof PolicyFilters>): Promise<FilterQuery<ConfigurationPolicy>> {
  await authorizeLists(ctx, query.orgId);
  const where: FilterQuery<ConfigurationPolicy>[] = [(await tenantWhere<ConfigurationPolicy>(ctx, { org: 'orgId', requestedOrgId: query.orgId })) ?? {}];
  if (query.status) where.push({ status: query.status });
  return { $and: where } as FilterQuery<ConfigurationPolicy>;
}

/** The configuration policies of the organizations the caller sees, newest first, in keyset pages. */
export async function listConfigurationPolicies(ctx: RequestContext, raw: ConfigurationPolicyListInput): Promise<ConfigurationPolicyPage> {
  const query = parseInput(ConfigurationPolicyListQuery, raw);
  const filter = await policyFilter(ctx, query);
  const keyset = keysetWhere('createdAt', 'date', 'desc', query.cursor);
  const rows = await ctx.em.find(ConfigurationPolicy, { $and: [filter, keyset.where] } as FilterQuery<ConfigurationPolicy>, { orderBy: keyset.orderBy, limit: query.limit + 1, disableIdentityMap: true });
  const page = finishCursorPage(rows, query.limit, (p) => p.createdAt.toISOString());
  return { data: page.items.map(policyView), nextCursor: page.nextCursor };
}

export async function countConfigurationPolicies(ctx: RequestContext, raw: z.input<typeof PolicyFilters>): Promise<number> {
  return ctx.em.count(ConfigurationPolicy, await policyFilter(ctx, parseInput(PolicyFilters, raw)));
}

export async function getConfigurationPolicy(ctx: RequestContext, id: string): Promise<ConfigurationPolicyView> {
  return policyView(await requirePolicy(ctx, id, 'policies:read'));
}

// ── writes ──────────────────────────────────────────────────────────────────────────────────────

/** Checks what a policy names: its targets (404 for another tenant's site, group or device) and its rules' remediations (catalog versions, scripts). */
async function checkPolicyRefs(ctx: RequestContext, orgId: string, targets: ConfigurationPolicy['targets'], rules: ConfigurationPolicy['rules']): Promise<void> {
  await checkTargets(ctx, policyTarget({ orgId, targets }));
  await checkRemediationRefs(ctx, orgId, rules);
}

export async function createConfigurationPolicy(ctx: RequestContext, raw: CreateConfigurationPolicyInput): Promise<ConfigurationPolicyView> {
  const input = parseInput(CreateConfigurationPolicySchema, raw);
  const orgId = await targetOrgId(ctx, input.orgId, RESOURCE);
  await authorize(ctx, 'policies:write', { orgId, resource: RESOURCE });
  const targets = storedTargets(policyTarget({ orgId, targets: input.targets }));
  const rules = storedRules(input.rules);
  await checkPolicyRefs(ctx, orgId, targets, rules);
  return withTransaction(ctx, async (tx) => {
    const policy = tx.em.create(ConfigurationPolicy, { orgId, name: input.name, description: input.description, targets, rules });
    await tx.em.flush();
    await recordAudit(tx, { action: 'configuration_policy.create', resourceType: 'configuration_policy', resourceId: policy.id, orgId, changes: providedFields(input), details: { name: policy.name } });
    return policyView(policy);
  });
}

/** PUT and PATCH: the fields given change; an active policy evaluates its devices again when its targets or rules did. */
async function changePolicy(ctx: RequestContext, id: string, input: z.output<typeof UpdateConfigurationPolicySchema>): Promise<ConfigurationPolicyView> {
  const policy = await requirePolicy(ctx, id, 'policies:write');
  await checkTargets(ctx, policyTarget(policy), { stored: true });
  const targets = input.targets === undefined ? undefined : storedTargets(policyTarget({ orgId: policy.orgId, targets: input.targets }));
  const rules = input.rules === undefined ? undefined : storedRules(input.rules);
  await checkPolicyRefs(ctx, policy.orgId, targets ?? policy.targets, rules ?? policy.rules);
  return withTransaction(ctx, async (tx) => {
    // Locked, as activation and evaluations take it: a concurrent deactivation is neither lost nor evaluated past.
    const locked = await lockedPolicy(tx, policy.id);
    const description = input.description === undefined ? undefined : input.description || null;
    const changes = applyChanges(locked, { name: input.name, description, targets, rules });
    if (changes.length === 0) return policyView(locked);
    await tx.em.flush();
    if (locked.status === 'active' && (changes.includes('targets') || changes.includes('rules'))) await evaluatePolicy(tx, locked, { createdBy: requirePrincipal(tx).userId });
    await recordAudit(tx, { action: 'configuration_policy.update', resourceType: 'configuration_policy', resourceId: locked.id, orgId: locked.orgId, changes, details: { name: locked.name } });
    return policyView(locked);
  });
}

export async function replaceConfigurationPolicy(ctx: RequestContext, id: string, raw: ReplaceConfigurationPolicyInput): Promise<ConfigurationPolicyView> {
  const input = parseInput(ReplaceConfigurationPolicySchema, raw);
  return changePolicy(ctx, id, { ...input, description: input.description ?? null });
}

export async function updateConfigurationPolicy(ctx: RequestContext, id: string, raw: UpdateConfigurationPolicyInput): Promise<ConfigurationPolicyView> {
  return changePolicy(ctx, id, parseInput(UpdateConfigurationPolicySchema, raw));
}

/** The policy goes with its devices' evaluations. */
export async function deleteConfigurationPolicy(ctx: RequestContext, id: string): Promise<void> {
  const policy = await requirePolicy(ctx, id, 'policies:write');
  await checkTargets(ctx, policyTarget(policy), { stored: true });
  await withTransaction(ctx, async (tx) => {
    await releaseDevices(tx, policy, 'the policy was deleted');
    await tx.em.nativeDelete(ConfigurationPolicy, { id: policy.id });
    await recordAudit(tx, { action: 'configuration_policy.delete', resourceType: 'configuration_policy', resourceId: policy.id, orgId: policy.orgId, details: { name: policy.name } });
  });
}

/** Activates the policy and evaluates it at once; 409 when it is active already. */
export async function activateConfigurationPolicy(ctx: RequestContext, id: string): Promise<ConfigurationPolicyView> {
  const policy = await requirePolicy(ctx, id, 'policies:write');
  await checkTargets(ctx, policyTarget(policy), { stored: true });
  return withTransaction(ctx, async (tx) => {
    const locked = await lockedPolicy(tx, policy.id);
    if (locked.status === 'active') throw conflict('The policy is already active');
    locked.status = 'active';
    const { evaluationId, devices } = await evaluatePolicy(tx, locked, { createdBy: requirePrincipal(tx).userId });
    await recordAudit(tx, { action: 'configuration_policy.activate', resourceType: 'configuration_policy', resourceId: locked.id, orgId: locked.orgId, details: { name: locked.name, evaluationId, devices } });
    return policyView(locked);
  });
}

/** Deactivates the policy: it is no longer evaluated (its devices' last evaluations stay); 409 when it is inactive already. */
export async function deactivateConfigurationPolicy(ctx: RequestContext, id: string): Promise<ConfigurationPolicyView> {
  const policy = await requirePolicy(ctx, id, 'policies:write');
  await checkTargets(ctx, policyTarget(policy), { stored: true });
  return withTransaction(ctx, async (tx) => {
    const locked = await lockedPolicy(tx, policy.id);
    if (locked.status === 'inactive') throw conflict('The policy is already inactive');
    locked.status = 'inactive';
    await tx.em.flush();
    await releaseDevices(tx, locked, 'the policy was deactivated');
    await recordAudit(tx, { action: 'configuration_policy.deactivate', resourceType: 'configuration_policy', resourceId: locked.id, orgId: locked.orgId, details: { name: locked.name } });
    return policyView(locked);
  });
}

export const EvaluationStartedSchema = z
  .object({ evaluationId: uuid().describe('the evaluation (named by policy.evaluated)'), devices: z.number().int().describe('how many devices it covers') })
  .meta({ title: 'ConfigurationPolicyEvaluation', description: 'An evaluation of a policy just started' });
type EvaluationStarted = z.output<typeof EvaluationStartedSchema>;

/** Evaluates an active policy on its devices now (409 while inactive). */
export async function evaluateConfigurationPolicy(ctx: RequestContext, id: string): Promise<EvaluationStarted> {
  const policy = await requirePolicy(ctx, id, 'policies:write');
  await checkTargets(ctx, policyTarget(policy), { stored: true });
  return withTransaction(ctx, async (tx) => {
    const locked = await lockedPolicy(tx, policy.id);
    if (locked.status !== 'active') throw conflict('Activate the policy to evaluate it');
    const started = await evaluatePolicy(tx, locked, { createdBy: requirePrincipal(tx).userId });
    await recordAudit(tx, { action: 'configuration_policy.evaluate', resourceType: 'configuration_policy', resourceId: locked.id, orgId: locked.orgId, details: started });
    return started;
  });
}

/** The policy's row locked for a whole evaluation (activation, deactivation and evaluations decide in turn); gone meanwhile: 404. */
async function lockedPolicy(tx: RequestContext, id: string): Promise<ConfigurationPolicy> {
  const policy = await lockPolicy(tx, id);
  if (!policy) throw notFound(RESOURCE);
  return policy;
}
