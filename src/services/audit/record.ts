import crypto from 'node:crypto';
import type { FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { AuditLog, type AuditResult } from '../../../entities/audit-log.js';
import type { DeniedAttempt, Principal, RequestContext } from '../../auth/context.js';
import { visibleOrgIds, type DenialLog } from '../../auth/policy.js';
import { canonicalJson } from '../../canonical-json.js';
import { emit } from '../../events/outbox.js';
import { eventOfAction, type AuditAction, type DomainEventMap, type EventOfAction, type PublishingAction } from '../../events/types.js';

export interface AuditEntry {
  action: AuditAction;
  resourceType: string;
  resourceId?: string | null;
  orgId?: string | null;
  partnerId?: string | null;
  result?: AuditResult;
  /** names of the fields a change touched (never their values) */
  changes?: string[];
  details?: Record<string, unknown>;
}

const GENESIS = '0'.repeat(64);
// Any constant works: the class half of the two-key advisory locks that serialize appends to one chain.
const CHAIN_LOCK_CLASS = 0x4a0d17;

/** The chain an entry joins: its organization's, else its partner's, else the system chain. */
function chainOf(row: Pick<AuditLog, 'orgId' | 'partnerId'>): string {
  if (row.orgId) return `org:${row.orgId}`;
  if (row.partnerId) return `partner:${row.partnerId}`;
  return 'system';
}

/**
 * Appends an entry in the caller's transaction (so it commits or rolls back with the change). A lock
 * per chain, held until commit, serializes appends to that chain, giving each entry the previous
 * one's hash; writes to other tenants' chains do not wait for it.
 */
export async function recordAudit(ctx: RequestContext, entry: AuditEntry): Promise<AuditLog> {
  const principal = ctx.principal;
  const row = new AuditLog();
  Object.assign(row, {
    createdAt: new Date(),
    actorType: ctx.actorType,
    actorId: principal?.kind === 'system' ? null : (principal?.id ?? null),
    actorEmail: principal?.email ?? null,
    action: entry.action,
    resourceType: entry.resourceType,
    resourceId: entry.resourceId ?? null,
    orgId: entry.orgId ?? null,
    partnerId: entry.partnerId ?? principal?.partnerId ?? null,
    ip: ctx.meta.ip,
    userAgent: ctx.meta.userAgent,
    result: entry.result ?? 'success',
    changes: entry.changes ?? [],
    details: entry.details ?? {},
  });
  row.chain = chainOf(row);
  const append = async (em: EntityManager) => {
    await em.execute(`select pg_advisory_xact_lock(${CHAIN_LOCK_CLASS}, hashtext(?))`, [row.chain]);
    // One round trip: the next global seq and the head of this chain.
    const [next] = (await em.execute(
      `select nextval('audit_log_seq')::text as seq, last.chain_seq::text as chain_seq, last.hash
         from (select 1) one left join lateral (select chain_seq, hash from audit_log where chain = ? order by chain_seq desc limit 1) last on true`,
      [row.chain],
    )) as { seq: string; chain_seq: string | null; hash: string | null }[];
    row.seq = next!.seq;
    row.chainSeq = String(BigInt(next!.chain_seq ?? '0') + 1n);
    row.prevHash = next!.hash ?? GENESIS;
    row.hash = auditHash(row);
    await em.insert(AuditLog, row);
    return row;
  };
  if (ctx.em.isInTransaction()) return append(ctx.em);
  return ctx.em.transactional((em) => append(em as EntityManager));
}

/**
 * A mutation's audit row and the event its action publishes (its domain's audit action table), both in the caller's
 * transaction: they commit together or not at all. The event belongs to the entry's organization.
 */
export async function recordChange<A extends PublishingAction>(tx: RequestContext, entry: AuditEntry & { action: A }, data: DomainEventMap[EventOfAction<A>]): Promise<void> {
  await recordAudit(tx, entry);
  await emit(tx, { type: eventOfAction(entry.action) as EventOfAction<A>, orgId: entry.orgId ?? null, data });
}

/** The policy's denial log (installed by src/server.ts); it calls this outside any transaction, so the entry gets its own. */
export const recordDenied: DenialLog = async (ctx: RequestContext, attempt: DeniedAttempt) => {
  await recordAudit(ctx, {
    action: 'access.denied',
    resourceType: attempt.resource ?? attempt.permission.split(':')[0] ?? 'unknown',
    // An organization user's denied attempt belongs to that organization's trail even when the target named none.
    orgId: attempt.orgId ?? ctx.principal?.orgId ?? null,
    partnerId: attempt.partnerId ?? undefined,
    result: 'denied',
    details: { permission: attempt.permission, reason: attempt.reason },
  });
};

/** Everything an entry says except its place in the chain: what the hash covers and the view shows. */
export function entryContent(row: AuditLog) {
  return {
    seq: String(row.seq),
    createdAt: row.createdAt.toISOString(),
    actorType: row.actorType,
    actorId: row.actorId,
    actorEmail: row.actorEmail,
    action: row.action,
    resourceType: row.resourceType,
    resourceId: row.resourceId,
    orgId: row.orgId,
    partnerId: row.partnerId,
    ip: row.ip,
    userAgent: row.userAgent,
    result: row.result,
    changes: row.changes,
    details: row.details,
  };
}

export function auditHash(row: AuditLog): string {
  const content = canonicalJson(entryContent(row));
  return crypto.createHash('sha256').update(row.prevHash).update('\n').update(content).digest('hex');
}

const chainVerificationFields = {
  valid: z.boolean(),
  checked: z.number().int().describe('entries recomputed'),
  brokenAt: z.string().nullable().describe('seq of the first entry whose hash or link does not match'),
};
export const ChainVerificationSchema = z.object(chainVerificationFields).meta({ title: 'AuditChainVerification' });
export type ChainVerification = z.output<typeof ChainVerificationSchema>;

export const ChainsVerificationSchema = z
  .object({
    ...chainVerificationFields,
    chains: z.number().int().describe('how many chains were walked'),
    broken: z
      .array(z.object({ chain: z.string(), brokenAt: z.string() }).meta({ title: 'AuditBrokenChain' }))
      .describe('each chain that does not verify, with the seq of its first bad entry; `brokenAt` is the earliest of them'),
  })
  .meta({ title: 'AuditChainsVerification' });
export type ChainsVerification = z.output<typeof ChainsVerificationSchema>;

/**
 * Walks the given chains (every chain when null) in chain order, in pages, recomputing every hash
 * and link; each chain starts from the genesis hash.
 */
export async function verifyAuditChains(em: EntityManager, chains: string[] | null): Promise<ChainsVerification> {
  const broken: ChainsVerification['broken'] = [];
  let walked = 0;
  let checked = 0;
  let chain = '';
  let prev = GENESIS;
  let after: { chain: string; chainSeq: string } | null = null;
  for (;;) {
    const where: FilterQuery<AuditLog>[] = chains === null ? [] : [{ chain: { $in: chains } }];
    if (after) where.push({ $or: [{ chain: { $gt: after.chain } }, { chain: after.chain, chainSeq: { $gt: after.chainSeq } }] });
    const rows = await em.find(AuditLog, { $and: where }, { orderBy: { chain: 'asc', chainSeq: 'asc' }, limit: 1000, disableIdentityMap: true });
    if (rows.length === 0) break;
    for (const row of rows) {
      if (row.chain !== chain) {
        chain = row.chain;
        prev = GENESIS;
        walked++;
      }
      if (broken.at(-1)?.chain === chain) continue;
      if (row.prevHash !== prev || auditHash(row) !== row.hash) {
        broken.push({ chain, brokenAt: String(row.seq) });
        continue;
      }
      prev = row.hash;
      checked++;
    }
    const last = rows[rows.length - 1]!;
    after = { chain: last.chain, chainSeq: String(last.chainSeq) };
  }
  const earliest = broken.map((b) => BigInt(b.brokenAt)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))[0];
  return { valid: broken.length === 0, checked, brokenAt: earliest === undefined ? null : String(earliest), chains: walked, broken };
}

/**
 * The chains a caller may verify: system callers every chain (the legacy one spans tenants), others
 * their organizations' chains, and partner callers their partner's own chain too. Another tenant's
 * chain is never walked, so the answer reveals nothing about it.
 */
export async function verifiableChains(ctx: RequestContext, principal: Principal, orgId: string | undefined): Promise<string[] | null> {
  const orgIds = await visibleOrgIds(ctx, orgId);
  if (orgIds === null) return null;
  const chains = orgIds.map((id) => chainOf({ orgId: id, partnerId: null }));
  if (principal.scope === 'partner' && !orgId) chains.push(chainOf({ orgId: null, partnerId: principal.partnerId }));
  return chains;
}
