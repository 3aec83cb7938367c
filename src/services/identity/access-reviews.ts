import { LockMode, raw, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { AccessReview, AccessReviewItem, type AccessReviewDecision } from '../../../entities/access-review.js';
import { Partner } from '../../../entities/partner.js';
import { Role } from '../../../entities/role.js';
import { Membership, User } from '../../../entities/user.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, isUuid, loadOwned, requirePrincipal, targetOrgId, tenantWhere } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest, conflict, notFound } from '../../errors.js';
import { PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { enumValues, isoDateTime, parseInput, timestamp, uuid } from '../../validation.js';
import { recordAudit, recordChange } from '../audit/api.js';
import { applyStatus, assertOutranks } from './users.js';

export const CreateAccessReviewSchema = z
  .object({
    name: z.string().trim().min(1).max(255).describe('Display name: 1 to 255 characters, surrounding spaces trimmed.'),
    orgId: uuid().optional().describe('the organization to review (organization callers: their own)'),
    partnerId: uuid().optional().describe("review a partner's own staff instead"),
    dueAt: isoDateTime().optional().describe('When the review should be finished (informational); none when left out.'),
  })
  .strict()
  .refine((v) => !(v.orgId && v.partnerId), { message: 'give orgId or partnerId, not both', path: ['partnerId'] }).describe('A new access review of an organization’s (or a partner’s own) memberships.');
export type CreateAccessReviewInput = z.input<typeof CreateAccessReviewSchema>;

export const DecideAccessReviewItemSchema = z
  .object({
    decision: z
      .enum(['approved', 'revoked'])
      .meta({ title: 'AccessReviewVerdict', description: 'A reviewer’s decision on one membership.' })
      .register(enumValues, { approved: 'The membership stays.', revoked: 'The membership is removed when the review completes.' })
      .describe('Keep (approved) or remove (revoked) the membership.'),
    notes: z.string().trim().max(2000).nullable().optional().describe('Why, up to 2000 characters; null clears it.'),
  })
  .strict().describe('A reviewer’s decision on one item.');
export type DecideAccessReviewItemInput = z.input<typeof DecideAccessReviewItemSchema>;

const AccessReviewStatusSchema = z
  .enum(['open', 'completed'])
  .meta({ title: 'AccessReviewStatus', description: 'Where an access review stands.' })
  .register(enumValues, { open: 'Items are being decided.', completed: 'Completed: every revocation has been applied.' });

export const AccessReviewListQuery = PageQuery.extend({
  status: AccessReviewStatusSchema.optional().describe('Only reviews in this state.'),
  orgId: uuid().optional().describe('Only reviews of this organization.'),
}).strict();
export type AccessReviewListInput = z.input<typeof AccessReviewListQuery>;

export const AccessReviewItemViewSchema = z
  .object({
    id: uuid().describe('Unique ID of the item.'),
    userId: uuid().describe('The member under review.'),
    userEmail: z.string().describe('Their email address when the review began.'),
    userName: z.string().describe('Their name when the review began.'),
    membershipId: uuid().describe('The membership under review.'),
    roleId: uuid().describe('The role it held when the review began.'),
    roleName: z.string().describe('That role’s name.'),
    decision: z
      .enum(['pending', 'approved', 'revoked'])
      .meta({ title: 'AccessReviewDecision', description: 'The decision on one membership of a review.' })
      .register(enumValues, { pending: 'Not decided yet.', approved: 'The membership stays.', revoked: 'The membership is removed when the review completes.' })
      .describe('The decision so far.'),
    notes: z.string().nullable().describe('The reviewer’s notes; null when none.'),
    decidedBy: uuid().nullable().describe('The user who decided; null while pending.'),
    decidedAt: timestamp().nullable().describe('When it was decided; null while pending.'),
  })
  .meta({ title: 'AccessReviewItem', description: 'One membership as it stood when the review began, and the decision on it.' });
export type AccessReviewItemView = z.output<typeof AccessReviewItemViewSchema>;

const count = () => z.number().int();
export const AccessReviewSummarySchema = z.object({ total: count().describe('Every item.'), pending: count().describe('Items not decided yet.'), approved: count().describe('Items kept.'), revoked: count().describe('Items to be (or already) removed.') }).meta({ title: 'AccessReviewSummary', description: 'How many items a review holds, by decision.' });
export type AccessReviewSummary = z.output<typeof AccessReviewSummarySchema>;

export const AccessReviewViewSchema = z
  .object({
    id: uuid().describe('Unique ID.'),
    name: z.string().describe('Display name.'),
    orgId: uuid().nullable().describe('The organization reviewed; null for a partner review.'),
    partnerId: uuid().nullable().describe('The partner whose own staff is reviewed; null for an organization review.'),
    status: AccessReviewStatusSchema.describe('Whether items are still being decided.'),
    dueAt: timestamp().nullable().describe('When the review should be finished; null when none was set.'),
    createdBy: uuid().nullable().describe('The user who started it; null when that user is gone.'),
    createdAt: timestamp().describe('When it was started.'),
    completedAt: timestamp().nullable().describe('When it was completed; null while open.'),
    completedBy: uuid().nullable().describe('The user who completed it; null while open.'),
    summary: AccessReviewSummarySchema.describe('How many items it holds, by decision.'),
  })
  .meta({ title: 'AccessReview', description: 'A periodic review of who holds which role in an organization (or a partner’s own staff).' });
export type AccessReviewView = z.output<typeof AccessReviewViewSchema>;
export const AccessReviewPageSchema = pageSchema(AccessReviewViewSchema, 'AccessReviewPage');

export const AccessReviewDetailSchema = AccessReviewViewSchema.extend({ items: z.array(AccessReviewItemViewSchema).describe('Every membership under review, with its decision.') }).meta({
  title: 'AccessReviewDetail',
  description: 'A review with its items.',
});
export type AccessReviewDetail = z.output<typeof AccessReviewDetailSchema>;

function itemView(item: AccessReviewItem): AccessReviewItemView {
  return {
    id: item.id,
    userId: item.userId,
    userEmail: item.userEmail,
    userName: item.userName,
    membershipId: item.membershipId,
    roleId: item.roleId,
    roleName: item.roleName,
    decision: item.decision,
    notes: item.notes,
    decidedBy: item.decidedBy,
    decidedAt: item.decidedAt?.toISOString() ?? null,
  };
}

function reviewView(review: AccessReview, summary: AccessReviewSummary): AccessReviewView {
  return {
    id: review.id,
    name: review.name,
    orgId: review.orgId,
    partnerId: review.partnerId,
    status: review.status,
    dueAt: review.dueAt?.toISOString() ?? null,
    createdBy: review.createdBy,
    createdAt: review.createdAt.toISOString(),
    completedAt: review.completedAt?.toISOString() ?? null,
    completedBy: review.completedBy,
    summary,
  };
}

function detailView(review: AccessReview, items: AccessReviewItem[]): AccessReviewDetail {
  const summary: AccessReviewSummary = { total: items.length, pending: 0, approved: 0, revoked: 0 };
  for (const item of items) summary[item.decision]++;
  return { ...reviewView(review, summary), items: items.map(itemView) };
}

/** Organization callers see their organization's reviews; partner callers their organizations' and their own staff's; system all. */
export async function listAccessReviews(ctx: RequestContext, query: AccessReviewListInput): Promise<Page<AccessReviewView>> {
  const input = parseInput(AccessReviewListQuery, query);
  await authorize(ctx, 'access_reviews:read', { orgId: input.orgId, resource: 'Organization' });
  const where: FilterQuery<AccessReview>[] = [(await tenantWhere<AccessReview>(ctx, { org: 'orgId', partner: 'partnerId', requestedOrgId: input.orgId })) ?? {}];
  if (input.status) where.push({ status: input.status });
  const [reviews, total] = await ctx.em.findAndCount(AccessReview, { $and: where }, { orderBy: { createdAt: 'desc', id: 'desc' }, ...pageOptions(input) });
  const summaries = await summarize(ctx, reviews.map((r) => r.id));
  return toPage(
    reviews.map((r) => reviewView(r, summaries.get(r.id) ?? { total: 0, pending: 0, approved: 0, revoked: 0 })),
    total,
    input,
  );
}

async function summarize(ctx: RequestContext, reviewIds: string[]): Promise<Map<string, AccessReviewSummary>> {
  const summaries = new Map<string, AccessReviewSummary>();
  if (reviewIds.length === 0) return summaries;
  const rows = (await ctx.em
    .createQueryBuilder(AccessReviewItem, 'i')
    .select([raw('i.review_id as "reviewId"'), 'i.decision', raw('count(*)::int as count')])
    .where({ reviewId: { $in: reviewIds } })
    .groupBy(['reviewId', 'decision'])
    .execute('all', false)) as { reviewId: string; decision: AccessReviewDecision; count: number }[];
  for (const row of rows) {
    const summary = summaries.get(row.reviewId) ?? { total: 0, pending: 0, approved: 0, revoked: 0 };
    summary[row.decision] += row.count;
    summary.total += row.count;
    summaries.set(row.reviewId, summary);
  }
  return summaries;
}

export async function getAccessReview(ctx: RequestContext, id: string): Promise<AccessReviewDetail> {
  const review = await loadOwned(ctx, AccessReview, id, 'access_reviews:read', { resource: 'Access review' });
  return detailView(review, await ctx.em.find(AccessReviewItem, { reviewId: review.id }, { orderBy: { userEmail: 'asc', id: 'asc' } }));
}

/**
 * Snapshots every membership of the organization (or the partner's own staff) as a pending item.
 * Later changes to users or roles do not alter the review; completion acts on the memberships.
 */
export async function createAccessReview(ctx: RequestContext, rawInput: CreateAccessReviewInput): Promise<AccessReviewDetail> {
  const input = parseInput(CreateAccessReviewSchema, rawInput);
  let orgId: string | null = null;
  let partnerId: string;
  if (input.partnerId) {
    await authorize(ctx, 'access_reviews:write', { partnerId: input.partnerId, resource: 'Partner' });
    if (!(await ctx.em.count(Partner, { id: input.partnerId }))) throw notFound('Partner');
    partnerId = input.partnerId;
  } else {
    orgId = await targetOrgId(ctx, input.orgId);
    await authorize(ctx, 'access_reviews:write', { orgId });
    partnerId = (await ctx.partnerOfOrg(orgId))!;
  }
  const principal = requirePrincipal(ctx);
  return withTransaction(ctx, async (tx) => {
    const review = tx.em.create(AccessReview, { name: input.name, orgId, partnerId, dueAt: input.dueAt ? new Date(input.dueAt) : null, createdBy: principal.userId });
    // Pending invitations grant nothing yet, so there is no access of theirs to review.
    const memberships = await tx.em.find(Membership, orgId ? { orgId, status: 'active' } : { partnerId, orgId: null, status: 'active' });
    const users = new Map((await tx.em.find(User, { id: { $in: memberships.map((m) => m.userId) } })).map((u) => [u.id, u]));
    const roles = new Map((await tx.em.find(Role, { id: { $in: memberships.map((m) => m.roleId) } })).map((r) => [r.id, r]));
    const items = memberships.map((m) =>
      tx.em.create(AccessReviewItem, {
        reviewId: review.id,
        userId: m.userId,
        userEmail: users.get(m.userId)!.email,
        userName: users.get(m.userId)!.name,
        membershipId: m.id,
        roleId: m.roleId,
        roleName: roles.get(m.roleId)!.name,
      }),
    );
    await tx.em.flush();
    await recordChange(
      tx,
      { action: 'access_review.create', resourceType: 'access_review', resourceId: review.id, orgId, partnerId, details: { name: review.name, items: items.length } },
      { reviewId: review.id, name: review.name, partnerId, items: items.length },
    );
    return detailView(review, items.sort((a, b) => a.userEmail.localeCompare(b.userEmail)));
  });
}

export async function decideAccessReviewItem(
  ctx: RequestContext,
  reviewId: string,
  itemId: string,
  rawInput: DecideAccessReviewItemInput,
): Promise<AccessReviewItemView> {
  await loadOwned(ctx, AccessReview, reviewId, 'access_reviews:write', { resource: 'Access review' });
  const principal = requirePrincipal(ctx);
  const input = parseInput(DecideAccessReviewItemSchema, rawInput);
  return withTransaction(ctx, async (tx) => {
    const review = await lockReview(tx, reviewId);
    const item = isUuid(itemId) ? await tx.em.findOne(AccessReviewItem, { id: itemId, reviewId }) : null;
    if (!item) throw notFound('Access review item');
    item.decision = input.decision;
    if (input.notes !== undefined) item.notes = input.notes;
    item.decidedBy = principal.userId;
    item.decidedAt = new Date();
    await tx.em.flush();
    await recordChange(
      tx,
      {
        action: 'access_review.decide',
        resourceType: 'access_review',
        resourceId: review.id,
        orgId: review.orgId,
        partnerId: review.partnerId,
        details: { itemId: item.id, userId: item.userId, membershipId: item.membershipId, decision: item.decision },
      },
      { reviewId: review.id, itemId: item.id, decision: item.decision },
    );
    return itemView(item);
  });
}

/**
 * Applies every `revoked` decision in one transaction: the membership is removed (its sessions end
 * at once); a user left without any membership is disabled and their tokens invalidated.
 * Completion removes access, so it needs a second factor like other sensitive writes.
 */
export async function completeAccessReview(ctx: RequestContext, id: string): Promise<AccessReviewDetail> {
  await loadOwned(ctx, AccessReview, id, 'access_reviews:write', { mfa: true, resource: 'Access review' });
  const principal = requirePrincipal(ctx);
  return withTransaction(ctx, async (tx) => {
    const review = await lockReview(tx, id);
    const items = await tx.em.find(AccessReviewItem, { reviewId: id }, { orderBy: { userEmail: 'asc', id: 'asc' } });
    const count = (decision: AccessReviewDecision) => items.filter((i) => i.decision === decision).length;
    const pending = count('pending');
    if (pending > 0) throw conflict('All items must be decided before completing', { pending });
    const revoked = items.filter((i) => i.decision === 'revoked');
    if (revoked.some((i) => i.userId === principal.userId)) throw badRequest('You cannot revoke your own access');
    await assertOutranks(tx, principal, await tx.em.find(Membership, { id: { $in: revoked.map((i) => i.membershipId) } }));
    let applied = 0;
    for (const item of revoked) {
      if (await revokeMembership(tx, review, item)) applied++;
    }
    review.status = 'completed';
    review.completedAt = new Date();
    review.completedBy = principal.userId;
    await tx.em.flush();
    await recordChange(
      tx,
      {
        action: 'access_review.complete',
        resourceType: 'access_review',
        resourceId: review.id,
        orgId: review.orgId,
        partnerId: review.partnerId,
        details: { approved: count('approved'), revoked: count('revoked'), applied },
      },
      { reviewId: review.id, revoked: applied },
    );
    return detailView(review, items);
  });
}

/** False when the membership is already gone (removed since the review began): nothing to apply. */
async function revokeMembership(tx: RequestContext, review: AccessReview, item: AccessReviewItem): Promise<boolean> {
  const removed = await tx.em.nativeDelete(Membership, { id: item.membershipId, userId: item.userId });
  if (removed === 0) return false;
  const user = await tx.em.findOne(User, { id: item.userId });
  const disabled = !!user && (await tx.em.count(Membership, { userId: item.userId })) === 0;
  // Disabled as the users service disables: older tokens die with the version bump, a pending invite with its token.
  if (user && disabled) applyStatus(user, 'disabled');
  await recordAudit(tx, {
    action: 'user.access.revoke',
    resourceType: 'user',
    resourceId: item.userId,
    orgId: review.orgId,
    partnerId: review.partnerId,
    details: { reviewId: review.id, itemId: item.id, membershipId: item.membershipId, roleId: item.roleId, disabled },
  });
  return true;
}

/** Locks the review for the transaction and refuses changes once it is completed. */
async function lockReview(tx: RequestContext, id: string): Promise<AccessReview> {
  const review = await tx.em.findOneOrFail(AccessReview, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true, failHandler: () => notFound('Access review') });
  if (review.status === 'completed') throw conflict('Access review is already completed');
  return review;
}
