import { ConfigurationPolicyDevice } from '../../../entities/configuration-policy.js';
import type { RequestContext } from '../../auth/context.js';
import { uuidArray } from '../../db/arrays.js';
import { withTransaction } from '../../db/transaction.js';
import { recordAudit } from '../audit/api.js';
import { findDevices } from '../devices/api.js';
import { evaluateDevices, lockPolicy, requirePolicy, type DeviceStatus } from './evaluation.js';

/*
 * What other domains may use of the policies domain (the dependency check refuses any other way in):
 * staged rollouts apply a configuration policy to a wave's devices and follow their evaluations.
 */

/** The policy the caller may use in its org (404 otherwise). */
export async function requireConfigurationPolicy(ctx: RequestContext, policyId: string, permission: 'policies:read' | 'policies:write'): Promise<{ id: string; orgId: string; name: string }> {
  const policy = await requirePolicy(ctx, policyId, permission);
  return { id: policy.id, orgId: policy.orgId, name: policy.name };
}

/**
 * Applies the policy to these devices (they join its applied devices even outside its targets / while
 * inactive) and evaluates them now; answers the evaluation's id. The caller has decided on the policy
 * (`requireConfigurationPolicy`); devices of another organization, unknown or decommissioned are left out.
 */
export async function applyPolicy(tx: RequestContext, policyId: string, deviceIds: string[]): Promise<{ evaluationId: string }> {
  return withTransaction(tx, async (inner) => {
    const policy = await lockPolicy(inner, policyId);
    if (!policy) throw new Error(`applyPolicy: no configuration policy ${policyId}`);
    const devices = await findDevices(inner, { ids: deviceIds, active: true }, { scope: 'all', fields: ['orgId'], orderBy: 'id' });
    const ids = devices.filter((d) => d.orgId === policy.orgId).map((d) => d.id);
    if (ids.length > 0) {
      await inner.em.execute(
        `insert into configuration_policy_device (id, policy_id, device_id, org_id, applied, violations)
           select gen_random_uuid(), ?, d, ?, true, '[]'::jsonb from unnest(?::uuid[]) d
           on conflict (policy_id, device_id) do update set applied = true`,
        [policy.id, policy.orgId, uuidArray(ids)],
      );
    }
    const { evaluationId } = await evaluateDevices(inner, policy, ids, { createdBy: inner.principal?.userId ?? null });
    await inner.em.flush();
    await recordAudit(inner, { action: 'configuration_policy.apply', resourceType: 'configuration_policy', resourceId: policy.id, orgId: policy.orgId, details: { name: policy.name, evaluationId, devices: ids.length } });
    return { evaluationId };
  });
}

/** Each device's latest evaluation of the policy (absent: never evaluated). */
export async function policyEvaluations(ctx: RequestContext, policyId: string, deviceIds: string[]): Promise<Map<string, { status: DeviceStatus; evaluatedAt: Date }>> {
  if (deviceIds.length === 0) return new Map();
  const rows = await ctx.em.find(
    ConfigurationPolicyDevice,
    { policyId, deviceId: { $in: deviceIds.map((id) => id.toLowerCase()) }, status: { $ne: null } },
    { fields: ['deviceId', 'status', 'evaluatedAt'], disableIdentityMap: true },
  );
  return new Map(rows.map((row) => [row.deviceId, { status: row.status as DeviceStatus, evaluatedAt: row.evaluatedAt! }]));
}
