import { z } from 'zod';
import { SecurityPolicy, type SecurityPolicySettings } from '../../../entities/security-posture.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, loadOwned, targetOrgId, tenantWhere } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { cursorListFields, cursorPageSchema, finishCursorPage, keysetWhere } from '../../pagination.js';
import { parseInput, timestamp, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { checkTargets, toTarget } from '../devices/api.js';
import { applyChanges } from '../shared/changes.js';
import { policyTargetsInput, policyTargetsView, storedTargets, targetsView } from '../shared/policy-targets.js';
import { DEFAULT_POLICY_SETTINGS } from './security-factors.js';
import { recomputeOrganization, securityPolicyTarget } from './security-scores.js';

/*
 * Security policies: which devices of an organization (sites, groups, devices; none: all of them) and
 * the thresholds their scores are measured against. When several target a device, the most recently
 * updated one applies. Saving one recomputes the organization's scores in the same transaction.
 * `autoQuarantine` is acted on where threats are added (threats.ts `autoQuarantine`).
 */

const RESOURCE = 'Security policy';

const TargetsInput = policyTargetsInput('SecurityPolicyTargetsInput');

const SettingsInput = z
  .strictObject({
    passwordMinLength: z.number().int().min(0).max(1024).optional().describe(`passwords must be at least this long (default ${DEFAULT_POLICY_SETTINGS.passwordMinLength})`),
    maxLocalAdmins: z.number().int().min(0).max(500).optional().describe(`at most this many local administrators (default ${DEFAULT_POLICY_SETTINGS.maxLocalAdmins})`),
    autoQuarantine: z.boolean().optional().describe('threats reported detected are sent to quarantine at once (default false)'),
  })
  .meta({ title: 'SecurityPolicySettingsInput', description: 'The thresholds; each left out takes its default' });

const policyFields = {
  name: z.string().trim().min(1).max(255).describe('the policy’s name'),
  targets: TargetsInput.describe('the devices it applies to; empty: every device of the organization'),
  settings: SettingsInput.optional().describe('left out: every default'),
};

export const CreateSecurityPolicySchema = z
  .strictObject({ orgId: uuid().optional().describe('required for partner and system callers'), ...policyFields })
  .meta({ title: 'CreateSecurityPolicyInput', description: 'A new security policy of an organization' });
export type CreateSecurityPolicyInput = z.input<typeof CreateSecurityPolicySchema>;

export const ReplaceSecurityPolicySchema = z.strictObject(policyFields).meta({ title: 'ReplaceSecurityPolicyInput', description: 'The whole policy, replacing what it was (settings left out take their defaults)' });
export type ReplaceSecurityPolicyInput = z.input<typeof ReplaceSecurityPolicySchema>;

export const SecurityPolicyViewSchema = z
  .object({
    id: uuid().describe('the policy'),
    orgId: uuid().describe('the organization it belongs to'),
    name: z.string().describe('its name'),
    targets: policyTargetsView('SecurityPolicyTargets'),
    settings: z
      .object({
        passwordMinLength: z.number().int().describe('passwords must be at least this long'),
        maxLocalAdmins: z.number().int().describe('at most this many local administrators'),
        autoQuarantine: z.boolean().describe('threats reported detected are sent to quarantine at once'),
      })
      .meta({ title: 'SecurityPolicySettings', description: 'The thresholds a targeted device’s score is measured against' }),
    createdAt: timestamp().describe('when it was created'),
    updatedAt: timestamp().describe('when it last changed'),
  })
  .meta({ title: 'SecurityPolicy', description: 'Which devices of an organization, and the thresholds their security scores are measured against' });
export type SecurityPolicyView = z.output<typeof SecurityPolicyViewSchema>;

function policyView(policy: SecurityPolicy): SecurityPolicyView {
  return {
    id: policy.id,
    orgId: policy.orgId,
    name: policy.name,
    targets: targetsView(policy.targets),
    settings: { ...policy.settings },
    createdAt: policy.createdAt.toISOString(),
    updatedAt: policy.updatedAt.toISOString(),
  };
}

/** The targets in the common normal form; naming nothing: null, the whole organization. */
function normalizeTargets(orgId: string, targets: z.output<typeof TargetsInput>): SecurityPolicy['targets'] {
  return storedTargets(toTarget({ orgId, ...targets }));
}

const settingsOf = (input: z.output<typeof SettingsInput> | undefined): SecurityPolicySettings => ({
  passwordMinLength: input?.passwordMinLength ?? DEFAULT_POLICY_SETTINGS.passwordMinLength,
  maxLocalAdmins: input?.maxLocalAdmins ?? DEFAULT_POLICY_SETTINGS.maxLocalAdmins,
  autoQuarantine: input?.autoQuarantine ?? DEFAULT_POLICY_SETTINGS.autoQuarantine,
});

// ── lists ───────────────────────────────────────────────────────────────────────────────────────

const filters = { orgId: uuid().optional().describe('only policies of this organization') };
const PolicyFilters = z.strictObject(filters);
export const SecurityPolicyListQuery = z.strictObject({ ...filters, ...cursorListFields });
export type SecurityPolicyListInput = z.input<typeof SecurityPolicyListQuery>;
export const SecurityPolicyPageSchema = cursorPageSchema(SecurityPolicyViewSchema, 'SecurityPolicyPage', 'security policies, newest first');
export type SecurityPolicyPage = z.output<typeof SecurityPolicyPageSchema>;

async function policyFilter(ctx: RequestContext, query: z.output<typeof PolicyFilters>) {
  await authorize(ctx, 'security:read');
  if (query.orgId) await authorize(ctx, 'security:read', { orgId: query.orgId, resource: 'Organization' });
  return (await tenantWhere<SecurityPolicy>(ctx, { org: 'orgId', requestedOrgId: query.orgId })) ?? {};
}

/** The security policies of the organizations the caller sees, newest first, in keyset pages. */
export async function listSecurityPolicies(ctx: RequestContext, raw: SecurityPolicyListInput): Promise<SecurityPolicyPage> {
  const query = parseInput(SecurityPolicyListQuery, raw);
  const filter = await policyFilter(ctx, query);
  const keyset = keysetWhere('createdAt', 'date', 'desc', query.cursor);
  const rows = await ctx.em.find(SecurityPolicy, { $and: [filter, keyset.where] }, { orderBy: keyset.orderBy, limit: query.limit + 1, disableIdentityMap: true });
  const page = finishCursorPage(rows, query.limit, (p) => p.createdAt.toISOString());
  return { data: page.items.map(policyView), nextCursor: page.nextCursor };
}

/** How many policies the list's filters select (its connection's `totalCount`). */
export async function countSecurityPolicies(ctx: RequestContext, raw: z.input<typeof PolicyFilters>): Promise<number> {
  return ctx.em.count(SecurityPolicy, await policyFilter(ctx, parseInput(PolicyFilters, raw)));
}

// ── writes ──────────────────────────────────────────────────────────────────────────────────────

/** Creates the policy and recomputes its organization's scores (one transaction). */
export async function createSecurityPolicy(ctx: RequestContext, raw: CreateSecurityPolicyInput): Promise<SecurityPolicyView> {
  const input = parseInput(CreateSecurityPolicySchema, raw);
  const orgId = await targetOrgId(ctx, input.orgId, RESOURCE);
  await authorize(ctx, 'security:write', { orgId, resource: RESOURCE });
  const targets = normalizeTargets(orgId, input.targets);
  await checkTargets(ctx, securityPolicyTarget({ orgId, targets }));
  return withTransaction(ctx, async (tx) => {
    const policy = tx.em.create(SecurityPolicy, { orgId, name: input.name, targets, settings: settingsOf(input.settings) });
    await tx.em.flush();
    await recomputeOrganization(tx, orgId);
    await recordAudit(tx, { action: 'security_policy.create', resourceType: 'security_policy', resourceId: policy.id, orgId, details: { name: policy.name } });
    return policyView(policy);
  });
}

/** Replaces the policy and recomputes its organization's scores (one transaction). */
export async function replaceSecurityPolicy(ctx: RequestContext, id: string, raw: ReplaceSecurityPolicyInput): Promise<SecurityPolicyView> {
  const input = parseInput(ReplaceSecurityPolicySchema, raw);
  const policy = await loadOwned(ctx, SecurityPolicy, id, 'security:write', { resource: RESOURCE });
  const targets = normalizeTargets(policy.orgId, input.targets);
  await checkTargets(ctx, securityPolicyTarget(policy), { stored: true });
  await checkTargets(ctx, securityPolicyTarget({ orgId: policy.orgId, targets }));
  return withTransaction(ctx, async (tx) => {
    const changes = applyChanges(policy, { name: input.name, targets, settings: settingsOf(input.settings) });
    if (changes.length === 0) return policyView(policy);
    await tx.em.persistAndFlush(policy);
    await recomputeOrganization(tx, policy.orgId);
    await recordAudit(tx, { action: 'security_policy.update', resourceType: 'security_policy', resourceId: policy.id, orgId: policy.orgId, changes, details: { name: policy.name } });
    return policyView(policy);
  });
}
