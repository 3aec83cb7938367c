import crypto from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AuditLog, type AuditResult } from '../../entities/audit-log.js';
import type { RequestContext } from '../auth/context.js';
import { canonicalJson } from '../canonical-json.js';

export interface AuditEntry {
  action: string;
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
// Any constant works; it names the advisory lock that serializes appends to the chain.
const CHAIN_LOCK = 0x4a0d17;

/**
 * Appends an entry in the caller's transaction (so it commits or rolls back with the change). The
 * advisory lock serializes appends, giving each entry the previous one's hash.
 */
export async function recordAudit(ctx: RequestContext, entry: AuditEntry): Promise<AuditLog> {
  const append = async (em: EntityManager) => {
    await em.execute(`select pg_advisory_xact_lock(${CHAIN_LOCK})`);
    const [last] = (await em.execute(`select seq, hash from audit_log order by seq desc limit 1`)) as { seq: string; hash: string }[];
    const principal = ctx.principal;
    const row = new AuditLog();
    Object.assign(row, {
      seq: String(BigInt(last?.seq ?? '0') + 1n),
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
      prevHash: last?.hash ?? GENESIS,
    });
    row.hash = auditHash(row);
    await em.insert(AuditLog, row);
    return row;
  };
  if (ctx.em.isInTransaction()) return append(ctx.em);
  return ctx.em.transactional((em) => append(em as EntityManager));
}

/** Denied attempts are kept even though the request's own transaction rolls back: written on a separate EntityManager. */
export async function recordDenied(
  ctx: RequestContext,
  permission: string,
  reason: string,
  target: { orgId?: string | null; partnerId?: string | null; resource?: string },
): Promise<void> {
  const separate = ctx.withEm(ctx.runtime.orm.em.fork() as EntityManager);
  await recordAudit(separate, {
    action: 'access.denied',
    resourceType: target.resource ?? permission.split(':')[0] ?? 'unknown',
    orgId: target.orgId ?? null,
    partnerId: target.partnerId ?? undefined,
    result: 'denied',
    details: { permission, reason },
  });
}

export function auditHash(row: AuditLog): string {
  const content = canonicalJson({
    seq: String(row.seq),
    createdAt: row.createdAt,
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
  });
  return crypto.createHash('sha256').update(row.prevHash).update('\n').update(content).digest('hex');
}

export interface ChainVerification {
  valid: boolean;
  checked: number;
  /** seq of the first entry whose hash or link does not match */
  brokenAt: string | null;
}

/** Walks the whole chain in order, in pages, recomputing every hash and link. */
export async function verifyAuditChain(em: EntityManager): Promise<ChainVerification> {
  let prev = GENESIS;
  let checked = 0;
  let after = '0';
  for (;;) {
    const rows = await em.find(AuditLog, { seq: { $gt: after } }, { orderBy: { seq: 'asc' }, limit: 1000 });
    if (rows.length === 0) return { valid: true, checked, brokenAt: null };
    for (const row of rows) {
      if (row.prevHash !== prev || auditHash(row) !== row.hash) return { valid: false, checked, brokenAt: String(row.seq) };
      prev = row.hash;
      checked++;
    }
    after = String(rows[rows.length - 1]!.seq);
  }
}
