import type { EntityManager } from '@mikro-orm/postgresql';
import type { RequestContext } from '../auth/context.js';
import { recordQueuedDenials } from '../auth/policy.js';
import { AppError } from '../errors.js';

/**
 * Runs `fn` in one transaction, then the work it queued with `tx.afterCommit()`. `tx` is the same request on a transactional EntityManager, so
 * service calls made with it join the transaction instead of opening another. Denied attempts seen inside are recorded once it has ended,
 * whether it committed or not. A transaction whose request made no access decision rolls back instead of committing.
 */
export async function withTransaction<T>(ctx: RequestContext, fn: (tx: RequestContext) => Promise<T>): Promise<T> {
  if (ctx.em.isInTransaction()) return fn(ctx);
  let result: T;
  try {
    result = await ctx.em.transactional(async (em) => {
      const value = await fn(ctx.withEm(em as EntityManager));
      // Backstop before COMMIT: adapters check after the handler, by which time the writes would be kept.
      if (!ctx.mark.checked) throw new Error('transaction about to commit without an access decision (authorize or skipAuthorization)');
      return value;
    });
  } catch (error) {
    ctx.dropCommitHooksAfter(0);
    await recordQueuedDenials(ctx);
    throw error;
  }
  await ctx.runCommitHooks();
  await recordQueuedDenials(ctx);
  return result;
}

/**
 * Runs `work` in a savepoint of the caller's transaction: a refusal (an AppError) rolls back only its
 * writes and the work it queued for after commit, and is answered; any other error is thrown.
 */
export async function inSavepoint<T>(tx: RequestContext, work: (inner: RequestContext) => Promise<T>): Promise<{ value: T } | { refused: AppError }> {
  const hooksBefore = tx.commitHookCount();
  try {
    return { value: await tx.em.transactional((em) => work(tx.withEm(em as EntityManager))) };
  } catch (error) {
    tx.dropCommitHooksAfter(hooksBefore);
    if (!(error instanceof AppError)) throw error;
    return { refused: error };
  }
}
