import { DeviceSecurityScore, SecurityPolicy, type SecurityFactor, type SecurityPolicySettings } from '../../../entities/security-posture.js';
import { DeviceSecurityState } from '../../../entities/security.js';
import type { RequestContext } from '../../auth/context.js';
import { uuidArray } from '../../db/arrays.js';
import { emitMany } from '../../events/outbox.js';
import { findDevices, toTarget } from '../devices/api.js';
import { deviceCompliance } from '../patching/api.js';
import { syncRecommendations } from './recommendations.js';
import { ACTIVE_THREAT_STATUSES, DEFAULT_POLICY_SETTINGS, factorsOf, scoreOf } from './security-factors.js';

/*
 * A device's security score, 0 to 100: the sum of what it earns of each factor's weight, measured
 * against the security policy that applies to it (the defaults when none does). Recomputed, in the
 * writer's transaction, on each security report, when a policy is created or replaced, and by the
 * threats side after a threat's status changes (`recomputeDeviceScores`).
 */

/** A policy's stored targets (null: the whole organization) as the common target. */
export const securityPolicyTarget = (policy: Pick<SecurityPolicy, 'orgId' | 'targets'>) => toTarget({ orgId: policy.orgId, ...policy.targets });

/**
 * The settings that apply to each device: of the policies targeting it, the most recently updated
 * one's; none: the defaults. One statement per policy that names sites, groups or devices.
 */
export async function applyingSettings(tx: RequestContext, devices: readonly { deviceId: string; orgId: string }[]): Promise<Map<string, SecurityPolicySettings>> {
  const applying = new Map<string, SecurityPolicySettings>();
  const orgIds = [...new Set(devices.map((d) => d.orgId))];
  const policies = await tx.em.find(SecurityPolicy, { orgId: { $in: orgIds } }, { orderBy: { updatedAt: 'desc', id: 'desc' }, disableIdentityMap: true });
  for (const policy of policies) {
    const open = devices.filter((d) => d.orgId === policy.orgId && !applying.has(d.deviceId)).map((d) => d.deviceId);
    if (open.length === 0) continue;
    const target = securityPolicyTarget(policy);
    const wholeOrg = !target.siteIds && !target.groupIds && !target.deviceIds;
    const targeted = wholeOrg ? open : (await findDevices(tx, { target, ids: open }, { scope: 'all', fields: ['id'], orderBy: 'id' })).map((d) => d.id);
    for (const id of targeted) applying.set(id, policy.settings);
  }
  for (const d of devices) if (!applying.has(d.deviceId)) applying.set(d.deviceId, DEFAULT_POLICY_SETTINGS);
  return applying;
}

interface ComputedScore {
  deviceId: string;
  orgId: string;
  score: number;
  factors: SecurityFactor[];
}

const UPSERT_SCORES = `insert into device_security_score (id, device_id, org_id, score, factors, computed_at)
    select gen_random_uuid(), r.device_id, r.org_id, r.score, r.factors, ? from jsonb_to_recordset(?::jsonb) as r(device_id uuid, org_id uuid, score float8, factors jsonb)
  on conflict (device_id) do update set org_id = excluded.org_id, score = excluded.score, factors = excluded.factors, computed_at = excluded.computed_at`;
const INSERT_SAMPLES = `insert into security_score_sample (id, device_id, org_id, score, recorded_at)
    select gen_random_uuid(), r.device_id, r.org_id, r.score, ? from jsonb_to_recordset(?::jsonb) as r(device_id uuid, org_id uuid, score float8)`;

/**
 * Recomputes the scores of those of `deviceIds` that reported their security part, in the caller's
 * transaction: stores each score, a sample when it changed (the first one included), emits
 * `security.score_changed` for moves of at least SECURITY_SCORE_CHANGE_THRESHOLD points (not for a
 * first score) and brings the devices' recommendations in line with their failing factors.
 */
export async function recomputeDeviceScores(tx: RequestContext, deviceIds: readonly string[]): Promise<void> {
  const ids = [...new Set(deviceIds.map((id) => id.toLowerCase()))];
  if (ids.length === 0) return;
  const states = await tx.em.find(DeviceSecurityState, { deviceId: { $in: ids } }, { disableIdentityMap: true });
  if (states.length === 0) return;
  const reported = states.map((s) => s.deviceId);
  const settings = await applyingSettings(tx, states);
  const threatRows = (await tx.em.execute(`select device_id, count(*)::int as active from security_threat where device_id = any(?::uuid[]) and status = any(?::text[]) group by device_id`, [
    uuidArray(reported),
    `{${ACTIVE_THREAT_STATUSES.join(',')}}`,
  ])) as { device_id: string; active: number }[];
  const threats = new Map(threatRows.map((r) => [r.device_id, r.active]));
  const compliance = await deviceCompliance(tx.em, reported);
  const previous = new Map((await tx.em.find(DeviceSecurityScore, { deviceId: { $in: reported } }, { disableIdentityMap: true })).map((s) => [s.deviceId, s.score]));

  const computed: ComputedScore[] = states.map((state) => {
    const factors = factorsOf(state, settings.get(state.deviceId)!, threats.get(state.deviceId) ?? 0, compliance.get(state.deviceId)!.compliancePercent);
    return { deviceId: state.deviceId, orgId: state.orgId, score: scoreOf(factors), factors };
  });
  const now = tx.runtime.clock.now();
  await tx.em.execute(UPSERT_SCORES, [now, JSON.stringify(computed.map((c) => ({ device_id: c.deviceId, org_id: c.orgId, score: c.score, factors: c.factors })))]);
  const changed = computed.filter((c) => previous.get(c.deviceId) !== c.score);
  if (changed.length > 0) await tx.em.execute(INSERT_SAMPLES, [now, JSON.stringify(changed.map((c) => ({ device_id: c.deviceId, org_id: c.orgId, score: c.score })))]);
  const threshold = tx.runtime.config.security.scoreChangeThreshold;
  const moved = changed.filter((c) => previous.has(c.deviceId) && Math.abs(c.score - previous.get(c.deviceId)!) >= threshold);
  await emitMany(
    tx,
    'security.score_changed',
    moved.map((c) => ({ orgId: c.orgId, data: { deviceId: c.deviceId, previousScore: previous.get(c.deviceId)!, score: c.score } })),
  );
  await syncRecommendations(tx, computed, now);
}

/** Recomputes every reported device of the organization (a policy changed: which devices it reaches may have too). */
export async function recomputeOrganization(tx: RequestContext, orgId: string): Promise<void> {
  const rows = await tx.em.find(DeviceSecurityState, { orgId }, { fields: ['deviceId'], disableIdentityMap: true });
  await recomputeDeviceScores(tx, rows.map((r) => r.deviceId));
}
