import type { FilterQuery } from '@mikro-orm/core';
import type { AlertPolicy } from '../../../entities/alert-policy.js';
import type { RequestContext } from '../../auth/context.js';
import { notFound } from '../../errors.js';
import { toTarget, type Target } from '../devices/api.js';

// Apart from alert-policies.ts so that alert-channels.ts, which it imports, can hold channels to the same targets.

export async function allFound<T extends object>(ctx: RequestContext, entity: new () => T, ids: string[] | undefined, where: FilterQuery<T>, resource: string): Promise<void> {
  if (!ids || ids.length === 0) return;
  const found = await ctx.em.count(entity, { $and: [{ id: { $in: ids } }, where] } as FilterQuery<T>);
  if (found !== ids.length) throw notFound(resource);
}

/** A policy's stored targets (null: the whole organization) as the common target. */
export function policyTarget(policy: Pick<AlertPolicy, 'orgId' | 'targets'>): Target {
  return toTarget({ orgId: policy.orgId, ...policy.targets });
}
