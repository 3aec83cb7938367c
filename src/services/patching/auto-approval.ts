import type { Device } from '../../../entities/device.js';
import { PatchPolicy } from '../../../entities/patch.js';
import type { RequestContext } from '../../auth/context.js';
import { uuidArray } from '../../db/arrays.js';
import { withTransaction } from '../../db/transaction.js';
import { emitMany } from '../../events/outbox.js';
import { onePer } from '../../memo.js';
import type { Runtime } from '../../runtime.js';
import { deviceGroupIds, findDevices, matches, toTarget, type Target } from '../devices/api.js';

/*
 * Auto-approval by patch policies: a pending patch (or one whose deferral ran out) that a targeted
 * device reports and that matches every field of one of an enabled policy's rules is approved by that
 * policy (an approval row with its `policyId` and no `decidedBy`, and `patch.approved`). It runs in
 * set-based statements: when a policy is saved (its organization's patches), when an agent reports its
 * patches (that device's, against the policies targeting it) and, for patches that age into a rule's
 * `minAgeDays`, at most once an hour by the service's clock (the due work).
 *
 * Apart from patch-policies.ts so that the patch report (patches.ts) can call it without a cycle.
 */

/** A policy's stored targets (null: the whole organization) as the common target. */
export function policyTarget(policy: Pick<PatchPolicy, 'orgId' | 'targets'>): Target {
  return toTarget({ orgId: policy.orgId, ...policy.targets });
}

/**
 * One statement: the organization's patches pending now, reported by one of `deviceIds` (null: by any
 * device), matching a rule of one of the policies (the oldest policy decides when several match), are
 * approved; answers the approvals. The update re-checks the pending state, so a concurrent decision wins.
 */
const APPROVE = `with candidate as (
    select distinct on (p.id) p.id as patch_id, pol.id as policy_id
      from patch p
      join patch_policy pol on pol.id = any(?::uuid[]) and pol.org_id = p.org_id and pol.enabled
     where p.org_id = ? and ${'%PENDING%'}
       and exists (select 1 from patch_device_status s where s.patch_id = p.id and (?::uuid[] is null or s.device_id = any(?::uuid[])))
       and exists (select 1 from jsonb_array_elements(pol.auto_approve) r
                    where (r->'sources' is null or r->'sources' @> jsonb_build_array(p.source))
                      and (r->'severities' is null or r->'severities' @> jsonb_build_array(p.severity))
                      and (r->'minAgeDays' is null or (p.release_date is not null and p.release_date <= ?::date - (r->>'minAgeDays')::int)))
     order by p.id, pol.created_at, pol.id
  ), approved as (
    update patch p set approval_status = 'approved', defer_until = null, updated_at = ?
      from candidate c where p.id = c.patch_id and ${'%PENDING%'}
    returning p.id as patch_id, c.policy_id
  )
  insert into patch_approval (id, org_id, patch_id, status, decided_by, policy_id, defer_until, note, decided_at)
    select gen_random_uuid(), ?, a.patch_id, 'approved', null, a.policy_id, null, null, ? from approved a
  returning patch_id, policy_id`.replaceAll('%PENDING%', `(p.approval_status = 'pending' or (p.approval_status = 'deferred' and (p.defer_until is null or p.defer_until <= ?)))`);

/** Approves, in the caller's transaction, what the policies' rules match among the patches `deviceIds` report (null: any device); answers how many. */
async function approveMatching(tx: RequestContext, orgId: string, policyIds: string[], deviceIds: string[] | null): Promise<number> {
  if (policyIds.length === 0 || (deviceIds && deviceIds.length === 0)) return 0;
  const now = tx.runtime.clock.now();
  const today = now.toISOString().slice(0, 10);
  const devices = deviceIds && uuidArray(deviceIds);
  const rows = (await tx.em.execute(APPROVE, [uuidArray(policyIds), orgId, now, devices, devices, today, now, now, orgId, now])) as { patch_id: string; policy_id: string }[];
  await emitMany(tx, 'patch.approved', rows.map((row) => ({ orgId, data: { patchId: row.patch_id, policyId: row.policy_id } })));
  return rows.length;
}

/** Applies one policy to its organization's pending patches its targeted devices report (nothing when it is disabled). */
export async function applyPatchPolicy(tx: RequestContext, policy: PatchPolicy): Promise<number> {
  if (!policy.enabled || policy.autoApprove.length === 0) return 0;
  const target = policyTarget(policy);
  const deviceIds = !target.siteIds && !target.groupIds && !target.deviceIds ? null : (await findDevices(tx, { target }, { scope: 'all', fields: ['id'], orderBy: 'id' })).map((d) => d.id);
  return approveMatching(tx, policy.orgId, [policy.id], deviceIds);
}

/** The organization's enabled patch policies that target the device (one read, and its groups when a policy names some), oldest first. */
export async function policiesTargeting(tx: RequestContext, device: Pick<Device, 'id' | 'orgId' | 'siteId'>): Promise<PatchPolicy[]> {
  const policies = await tx.em.find(PatchPolicy, { orgId: device.orgId, enabled: true }, { orderBy: { createdAt: 'asc', id: 'asc' }, disableIdentityMap: true });
  const targets = policies.map((policy) => ({ policy, target: policyTarget(policy) }));
  const groupIds = targets.some((t) => t.target.groupIds) ? await deviceGroupIds(tx.em, device.id) : [];
  return targets.filter((t) => matches(device, t.target, groupIds)).map((t) => t.policy);
}

/** A device reported its patches: the policies that target it (`policiesTargeting`) approve its pending patches they match. */
export async function applyPatchPoliciesToDevice(tx: RequestContext, device: Pick<Device, 'id' | 'orgId'>, targeting: readonly PatchPolicy[]): Promise<number> {
  const applying = targeting.filter((policy) => policy.autoApprove.length > 0).map((policy) => policy.id);
  if (applying.length === 0) return 0;
  return approveMatching(tx, device.orgId, applying, [device.id]);
}

export const AGING_EVERY_MS = 3_600_000;
/** When the aging check last ran, by the service's clock, per runtime. */
const lastAging = onePer((_runtime: Runtime) => ({ at: -Infinity }));

/**
 * The due work behind `minAgeDays`: patches that have aged into a rule since they were reported are
 * approved at most an hour (by the service's clock) after, each policy in its own transaction. Answers
 * how many were approved (0 when the last run is less than an hour ago) and in which organizations.
 */
export async function approveAgedPatches(ctx: RequestContext, now: Date): Promise<{ approved: number; orgIds: string[] }> {
  const last = lastAging(ctx.runtime);
  if (now.getTime() - last.at < AGING_EVERY_MS) return { approved: 0, orgIds: [] };
  last.at = now.getTime();
  const policies = await ctx.em.find(PatchPolicy, { enabled: true }, { orderBy: { id: 'asc' }, disableIdentityMap: true });
  let approved = 0;
  const orgIds = new Set<string>();
  for (const policy of policies.filter((p) => p.autoApprove.some((rule) => rule.minAgeDays !== undefined))) {
    const count = await withTransaction(ctx, (tx) => applyPatchPolicy(tx, policy));
    approved += count;
    if (count > 0) orgIds.add(policy.orgId);
  }
  return { approved, orgIds: [...orgIds] };
}
