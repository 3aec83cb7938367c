import { z } from 'zod';
import { inSavepoint } from '../../db/transaction.js';
import { notFound } from '../../errors.js';
import { uuid } from '../../validation.js';
import { findDevices } from '../devices/api.js';
import { applyPolicy, policyEvaluations, requireConfigurationPolicy } from '../policies/api.js';
import type { Outcome, RolloutKind, Settled } from './rollout-kind.js';

/*
 * The policy rollout type: a wave's devices have the configuration policy applied (they join its
 * applied devices, even outside its targets or while it is inactive) and evaluated; a device succeeds
 * once an evaluation since its start settled it (compliant or not: the status is kept as its reason).
 */

const PolicyPayload = z.strictObject({ policyId: uuid().describe('the configuration policy to apply') });
type Payload = z.output<typeof PolicyPayload>;

export const policyKind: RolloutKind = {
  permission: 'policies:write',
  payload: PolicyPayload,
  async check(ctx, orgId, payload) {
    const policy = await requireConfigurationPolicy(ctx, (payload as Payload).policyId, 'policies:write');
    if (policy.orgId !== orgId) throw notFound('Configuration policy');
  },
  async handOut(tx, rollout, rows) {
    const { policyId } = rollout.payload as Payload;
    // The policy deleted since the start fails the wave's devices rather than the rollout.
    const found = await inSavepoint(tx, (inner) => requireConfigurationPolicy(inner, policyId, 'policies:write'));
    if ('refused' in found) return new Map(rows.map((row): [string, Outcome] => [row.deviceId, { failed: found.refused.message }]));
    const active = new Set((await findDevices(tx, { ids: rows.map((row) => row.deviceId), active: true }, { scope: 'all', fields: ['id'], orderBy: 'id' })).map((d) => d.id));
    const applied = rows.filter((row) => active.has(row.deviceId)).map((row) => row.deviceId);
    if (applied.length > 0) await applyPolicy(tx, policyId, applied);
    return new Map(rows.map((row): [string, Outcome] => [row.deviceId, active.has(row.deviceId) ? { started: true } : { failed: 'the device is decommissioned' }]));
  },
  async settle(ctx, rollout, rows) {
    const evaluations = await policyEvaluations(ctx, (rollout.payload as Payload).policyId, rows.map((row) => row.deviceId));
    const settled = new Map<string, Settled>();
    for (const row of rows) {
      const evaluation = evaluations.get(row.deviceId);
      if (evaluation && evaluation.status !== 'pending' && row.startedAt && evaluation.evaluatedAt >= row.startedAt) settled.set(row.deviceId, { status: 'succeeded', reason: evaluation.status });
    }
    return settled;
  },
};
