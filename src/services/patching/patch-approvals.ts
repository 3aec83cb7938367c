import type { FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { Patch, PatchApproval } from '../../../entities/patch.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, tenantWhere, visibleSiteIds } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest, forbidden } from '../../errors.js';
import { cursorListFields, cursorPageSchema, finishCursorPage, keysetWhere } from '../../pagination.js';
import { enumValues, isoDateTime, parseInput, timestamp, uuid } from '../../validation.js';
import { recordAudit, recordChange } from '../audit/api.js';
import { installForOrg } from './patch-jobs.js';
import { approvalNow, requirePatch, RESOURCE, viewOf, visiblePatches, type PatchView } from './patches.js';

/*
 * Approval decisions on patches: approve, decline, defer (until a future instant, after which the patch
 * reads as pending again), each a row of `patch_approval` (the history) and the patch's own
 * `approvalStatus` (the latest). Manual decisions have no `policyId`; patch policies' approvals
 * (auto-approval.ts, set-based) carry theirs.
 */

const DECISIONS = ['approved', 'declined', 'deferred'] as const;
type Decision = (typeof DECISIONS)[number];
export const PatchDecisionSchema = z
  .enum(DECISIONS)
  .meta({ title: 'PatchDecision', description: 'What an approval decision said' })
  .register(enumValues, { approved: 'May be installed.', declined: 'Must not be installed.', deferred: 'Decided later, until a given time.' });

const note = z.string().trim().max(1000).optional().describe('why (at most 1,000 characters)');
export const PatchDecisionSchemaInput = z.strictObject({ note }).meta({ title: 'PatchDecisionInput', description: 'An optional note on the decision' });
export type PatchDecisionInput = z.input<typeof PatchDecisionSchemaInput>;
export const DeferPatchSchema = z
  .strictObject({ until: isoDateTime().describe('a future instant: the patch is pending again from then'), note })
  .meta({ title: 'DeferPatchInput', description: 'Until when the decision on a patch waits' });
export type DeferPatchInput = z.input<typeof DeferPatchSchema>;
export const BulkApproveSchema = z
  .strictObject({ patchIds: z.array(z.string().max(100)).min(1).max(200).describe('the patches to approve, 1 to 200') })
  .meta({ title: 'BulkApprovePatchesInput', description: 'Patches to approve at once' });
export type BulkApproveInput = z.input<typeof BulkApproveSchema>;

export const BulkApproveResultSchema = z
  .object({
    approved: z.array(uuid()).describe('the patches now approved (also those that already were)'),
    failed: z
      .array(
        z
          .object({ patchId: z.string().describe('the id as given'), code: z.string().describe('`NOT_FOUND`: no patch the caller may see'), message: z.string().describe('what went wrong') })
          .meta({ title: 'BulkApprovePatchFailure', description: 'A patch that was not approved, and why' }),
      )
      .describe('the ids that were not approved'),
  })
  .meta({ title: 'BulkApprovePatchesResult', description: 'What a bulk approval did, per patch' });
export type BulkApproveResult = z.output<typeof BulkApproveResultSchema>;

export const PatchApprovalViewSchema = z
  .object({
    id: uuid().describe('the decision'),
    patchId: uuid().describe('the patch decided on'),
    status: PatchDecisionSchema,
    decidedBy: uuid().nullable().describe('the user who decided; null for an API key or a policy'),
    policyId: uuid().nullable().describe('the patch policy that decided; null for a manual decision'),
    decidedAt: timestamp().describe('when'),
    note: z.string().nullable().describe('the note given with it'),
  })
  .meta({ title: 'PatchApproval', description: 'One approval decision on a patch' });
export type PatchApprovalView = z.output<typeof PatchApprovalViewSchema>;

const approvalView = (a: PatchApproval): PatchApprovalView => ({
  id: a.id,
  patchId: a.patchId,
  status: a.status as Decision,
  decidedBy: a.decidedBy,
  policyId: a.policyId,
  decidedAt: a.decidedAt.toISOString(),
  note: a.note,
});

/** Records a decision on the patch in the caller's transaction: its row, the patch's state, the audit entry and (approvals) `patch.approved`. */
export async function decide(tx: RequestContext, patch: Patch, decision: Decision, input: { note?: string; until?: Date }): Promise<void> {
  const now = tx.runtime.clock.now();
  // Approving or declining again what already is so changes nothing (and publishes nothing twice).
  if (decision !== 'deferred' && approvalNow(patch, now).approvalStatus === decision) return;
  patch.approvalStatus = decision;
  patch.deferUntil = input.until ?? null;
  patch.updatedAt = now;
  const approval = tx.em.create(PatchApproval, {
    orgId: patch.orgId,
    patchId: patch.id,
    status: decision,
    decidedBy: tx.principal?.userId ?? null,
    policyId: null,
    deferUntil: input.until ?? null,
    note: input.note || null,
    decidedAt: now,
  });
  tx.em.persist([patch, approval]);
  await tx.em.flush();
  const entry = { resourceType: 'patch', resourceId: patch.id, orgId: patch.orgId, changes: ['approvalStatus'], details: { approvalId: approval.id, ...(input.until && { until: input.until.toISOString() }) } };
  if (decision === 'approved') await recordChange(tx, { ...entry, action: 'patch.approve' }, { patchId: patch.id, policyId: null });
  else await recordAudit(tx, { ...entry, action: decision === 'declined' ? 'patch.decline' : 'patch.defer' });
}

/**
 * A decision holds for every device of the patch's organization: users limited to some sites read
 * patches but do not decide them (403, as an organization-wide target is refused them).
 */
export function refuseSiteLimited(ctx: RequestContext): void {
  if (visibleSiteIds(ctx) !== null) throw forbidden('Users limited to some sites cannot decide on patches of the whole organization');
}

async function decideOne(ctx: RequestContext, id: string, decision: Decision, input: { note?: string; until?: Date }): Promise<PatchView> {
  const patch = await requirePatch(ctx, id, 'patches:write');
  refuseSiteLimited(ctx);
  await withTransaction(ctx, async (tx) => {
    await decide(tx, patch, decision, input);
    if (decision === 'approved') await installForOrg(tx, patch.orgId);
  });
  return viewOf(ctx, patch);
}

export async function approvePatch(ctx: RequestContext, id: string, raw: PatchDecisionInput = {}): Promise<PatchView> {
  const input = parseInput(PatchDecisionSchemaInput, raw ?? {});
  return decideOne(ctx, id, 'approved', input);
}

export async function declinePatch(ctx: RequestContext, id: string, raw: PatchDecisionInput = {}): Promise<PatchView> {
  const input = parseInput(PatchDecisionSchemaInput, raw ?? {});
  return decideOne(ctx, id, 'declined', input);
}

/** Defers the decision until a future instant; the patch reads as pending once it has passed. */
export async function deferPatch(ctx: RequestContext, id: string, raw: DeferPatchInput): Promise<PatchView> {
  const input = parseInput(DeferPatchSchema, raw);
  const until = new Date(input.until);
  if (until <= ctx.runtime.clock.now()) throw badRequest('until must be in the future', [{ path: 'until', message: 'must be in the future' }]);
  return decideOne(ctx, id, 'deferred', { note: input.note, until });
}

/** Approves each patch the caller may approve, in one transaction; the others are reported as failed (`NOT_FOUND`). */
export async function bulkApprovePatches(ctx: RequestContext, raw: BulkApproveInput): Promise<BulkApproveResult> {
  const input = parseInput(BulkApproveSchema, raw);
  await authorize(ctx, 'patches:write');
  refuseSiteLimited(ctx);
  const found = new Map((await visiblePatches(ctx, input.patchIds)).map((p) => [p.id, p]));
  const approved: string[] = [];
  const failed: BulkApproveResult['failed'] = [];
  const done = new Set<string>();
  for (const given of input.patchIds) {
    const patch = found.get(given.toLowerCase());
    if (!patch) failed.push({ patchId: given, code: 'NOT_FOUND', message: `${RESOURCE} not found` });
    else if (!done.has(patch.id)) {
      done.add(patch.id);
      approved.push(patch.id);
    }
  }
  if (approved.length > 0) {
    await withTransaction(ctx, async (tx) => {
      for (const id of approved) await decide(tx, found.get(id)!, 'approved', {});
      // The organizations' immediate patch policies install what is now approved.
      for (const orgId of new Set(approved.map((id) => found.get(id)!.orgId))) await installForOrg(tx, orgId);
    });
  }
  return { approved, failed };
}

// ── the history ─────────────────────────────────────────────────────────────────────────────────

const filters = {
  orgId: uuid().optional().describe('only decisions of this organization'),
  patchId: uuid().optional().describe('only decisions on this patch'),
  status: PatchDecisionSchema.optional().describe('only decisions that said this'),
};
const ApprovalFilters = z.strictObject(filters);
export const PatchApprovalListQuery = z.strictObject({ ...filters, ...cursorListFields });
export type PatchApprovalListInput = z.input<typeof PatchApprovalListQuery>;
export const PatchApprovalPageSchema = cursorPageSchema(PatchApprovalViewSchema, 'PatchApprovalPage', 'approval decisions, newest first');
export type PatchApprovalPage = z.output<typeof PatchApprovalPageSchema>;

async function approvalFilter(ctx: RequestContext, query: z.output<z.ZodObject<typeof filters>>): Promise<FilterQuery<PatchApproval>> {
  await authorize(ctx, 'patches:read');
  const where: FilterQuery<PatchApproval>[] = [(await tenantWhere<PatchApproval>(ctx, { org: 'orgId', requestedOrgId: query.orgId })) ?? {}];
  if (query.patchId) where.push({ patchId: query.patchId.toLowerCase() });
  if (query.status) where.push({ status: query.status });
  return { $and: where } as FilterQuery<PatchApproval>;
}

async function approvalPage(ctx: RequestContext, filter: FilterQuery<PatchApproval>, cursor: string | undefined, limit: number) {
  const keyset = keysetWhere('decidedAt', 'date', 'desc', cursor);
  const rows = await ctx.em.find(PatchApproval, { $and: [filter, keyset.where] } as FilterQuery<PatchApproval>, { orderBy: keyset.orderBy, limit: limit + 1, disableIdentityMap: true });
  return finishCursorPage(rows, limit, (a) => a.decidedAt.toISOString());
}

/** The approval decisions of the organizations the caller sees, newest first, in keyset pages. */
export async function listPatchApprovals(ctx: RequestContext, raw: PatchApprovalListInput): Promise<PatchApprovalPage> {
  const query = parseInput(PatchApprovalListQuery, raw);
  const page = await approvalPage(ctx, await approvalFilter(ctx, query), query.cursor, query.limit);
  return { data: page.items.map(approvalView), nextCursor: page.nextCursor };
}

/** How many decisions the list's filters select (its connection's `totalCount`). */
export async function countPatchApprovals(ctx: RequestContext, raw: z.input<typeof ApprovalFilters>): Promise<number> {
  return ctx.em.count(PatchApproval, await approvalFilter(ctx, parseInput(ApprovalFilters, raw)));
}
