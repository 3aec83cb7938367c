import { randomUUID } from 'node:crypto';
import { LockMode } from '@mikro-orm/core';
import { z } from 'zod';
import { ConfigurationPolicy, ConfigurationPolicyDevice, type ConfigurationRule, type PolicyViolation } from '../../../entities/configuration-policy.js';
import type { Device } from '../../../entities/device.js';
import { RequestContext } from '../../auth/context.js';
import { loadOwned, permits, visibleSiteIds } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { emit } from '../../events/outbox.js';
import type { EventSight } from '../../events/sight.js';
import type { DomainEvent } from '../../events/types.js';
import type { Runtime } from '../../runtime.js';
import { raiseAlert, resolveAlert } from '../alerts/api.js';
import { deviceGroupIds, findDevices, matches, queueCommand, toTarget, type CommandResult, type CommandTypeHooks, type Target } from '../devices/api.js';
import { diskEncryption } from '../security/api.js';
import { compareVersions } from '../shared/versions.js';
import { installedSoftwareOf } from '../software/api.js';
import { AGENT_RULE_TYPES } from './rules.js';

/*
 * Evaluating configuration policies: inventory rules are decided from the device's latest inventory
 * (software, operating system, disk encryption); agent rules are asked of the agent (`policy_check`),
 * the device `pending` until it answers. Each device keeps its latest evaluation per policy; moving to
 * `non_compliant` emits `policy.violation` (and raises an alert), back to `compliant` `policy.compliant`
 * (and resolves it); `policy.evaluated` follows each evaluation once it has settled.
 */

export const POLICY_CHECK = 'policy_check';
const ALERT_SOURCE = 'configuration_policy';

export type DeviceStatus = 'compliant' | 'non_compliant' | 'pending';

/** The policy the caller holds `permission` on (404 for another tenant's or a malformed id). */
export function requirePolicy(ctx: RequestContext, id: string, permission: 'policies:read' | 'policies:write'): Promise<ConfigurationPolicy> {
  return loadOwned(ctx, ConfigurationPolicy, id, permission, { resource: 'Configuration policy' });
}

/** The policy's target in the devices api's normal form. */
export const policyTarget = (policy: Pick<ConfigurationPolicy, 'orgId' | 'targets'>): Target => toTarget({ orgId: policy.orgId, ...policy.targets });

// ── inventory rules ─────────────────────────────────────────────────────────────────────────────

/**
 * A software name matches a rule's: in any case, `*` standing for any text. Matched piece by piece
 * (first a prefix, then each middle piece at its first place after the last, then a suffix), in time
 * linear in the lengths: a regular expression built from an admin's pattern could backtrack for minutes.
 */
export function nameMatches(pattern: string, name: string): boolean {
  const pieces = pattern.trim().toLowerCase().split('*');
  const text = name.trim().toLowerCase();
  if (pieces.length === 1) return text === pieces[0];
  const first = pieces[0]!;
  const last = pieces[pieces.length - 1]!;
  if (text.length < first.length + last.length || !text.startsWith(first) || !text.endsWith(last)) return false;
  let at = first.length;
  const end = text.length - last.length;
  for (const piece of pieces.slice(1, -1)) {
    const found = text.indexOf(piece, at);
    if (found < 0 || found + piece.length > end) return false;
    at = found + piece.length;
  }
  return true;
}

interface InventoryFacts {
  osType: string | null;
  osVersion: string | null;
  software: { name: string; version: string | null }[];
  encrypted: boolean | null;
}

/** Why the device fails an inventory rule, or null when it passes. */
function inventoryViolation(rule: ConfigurationRule, facts: InventoryFacts): string | null {
  switch (rule.type) {
    case 'software_required': {
      const found = facts.software.filter((s) => nameMatches(rule.name!, s.name));
      if (found.length === 0) return `${rule.name} is not installed`;
      if (rule.minVersion && !found.some((s) => s.version !== null && compareVersions(s.version, rule.minVersion!) >= 0)) {
        return `${rule.name} is older than ${rule.minVersion} (installed: ${found.map((s) => s.version ?? 'unknown version').join(', ')})`;
      }
      return null;
    }
    case 'software_forbidden': {
      const found = facts.software.filter((s) => nameMatches(rule.name!, s.name));
      return found.length === 0 ? null : `forbidden software is installed: ${found.map((s) => (s.version ? `${s.name} ${s.version}` : s.name)).join(', ')}`;
    }
    case 'os_version_min':
      // Devices of another operating system are not what the rule is about.
      if (facts.osType !== rule.osType) return null;
      // Agents report a name with the number (`Ubuntu 24.04 LTS`, `macOS 14.5`): its first dotted number is compared.
      const reported = facts.osVersion && /\d+(?:\.\d+)*/.exec(facts.osVersion)?.[0];
      if (!reported) return 'the operating system version is not reported';
      return compareVersions(reported, rule.version!) >= 0 ? null : `${rule.osType} ${facts.osVersion} is older than ${rule.version}`;
    case 'disk_encryption':
      if (facts.encrypted === true) return null;
      return facts.encrypted === false ? 'the disk is not encrypted' : 'disk encryption is not reported';
    default:
      return null;
  }
}

const isAgentRule = (rule: ConfigurationRule) => AGENT_RULE_TYPES.includes(rule.type);

// ── agent rules ─────────────────────────────────────────────────────────────────────────────────

const CheckResultSchema = z.object({
  checks: z.array(z.object({ ruleIndex: z.number().int(), passed: z.boolean(), actual: z.unknown().optional() }).passthrough()).max(1000),
});

/** An agent's reported value as a violation shows it: at most 200 characters (it reaches events and alerts). */
const shown = (value: unknown) => {
  const text = value === undefined || value === null ? 'missing' : JSON.stringify(value);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
};

function agentViolationMessage(rule: ConfigurationRule, actual: unknown): string {
  switch (rule.type) {
    case 'service_running':
      return `the service ${rule.name} is not running${actual === undefined ? '' : ` (${shown(actual)})`}`;
    case 'registry_value':
      return `${rule.path}\\${rule.name} is ${shown(actual)}, expected ${JSON.stringify(rule.expected)}`;
    default:
      return `${rule.key} in ${rule.path} is ${shown(actual)}, expected ${JSON.stringify(rule.expected)}`;
  }
}

/** The agent rules' violations from the agent's answer; a check it left out, or an answer that is no result, fails with why. */
function agentViolations(rules: ConfigurationRule[], outcome: { status: string; result?: Record<string, unknown> | undefined }): PolicyViolation[] {
  const parsed = outcome.status === 'completed' ? CheckResultSchema.safeParse(outcome.result ?? {}) : null;
  const answers = new Map((parsed?.success ? parsed.data.checks : []).map((check) => [check.ruleIndex, check]));
  const violations: PolicyViolation[] = [];
  rules.forEach((rule, ruleIndex) => {
    if (!isAgentRule(rule)) return;
    const answer = answers.get(ruleIndex);
    if (answer?.passed) return;
    const message = answer
      ? agentViolationMessage(rule, answer.actual)
      : outcome.status === 'completed'
        ? 'the agent did not report this check'
        : `the agent's check did not complete (${outcome.status})`;
    violations.push({ ruleIndex, type: rule.type, message });
  });
  return violations;
}

// ── one evaluation ──────────────────────────────────────────────────────────────────────────────

/** The device's row for the policy, created when it has none. */
async function deviceRow(tx: RequestContext, policy: ConfigurationPolicy, deviceId: string, rows: Map<string, ConfigurationPolicyDevice>): Promise<ConfigurationPolicyDevice> {
  const found = rows.get(deviceId);
  if (found) return found;
  const row = tx.em.create(ConfigurationPolicyDevice, { policyId: policy.id, deviceId, orgId: policy.orgId });
  rows.set(deviceId, row);
  return row;
}

/** A settled outcome: the row takes it, and a change of settled status is announced (and alerted). */
async function settle(tx: RequestContext, policy: ConfigurationPolicy, row: ConfigurationPolicyDevice, violations: PolicyViolation[]): Promise<void> {
  const status: DeviceStatus = violations.length > 0 ? 'non_compliant' : 'compliant';
  const before = row.settledStatus;
  Object.assign(row, { status, settledStatus: status, violations, pendingCommandId: null, evaluatedAt: tx.runtime.clock.now() });
  const dedupKey = `${policy.id}:${row.deviceId}`;
  if (status === 'non_compliant' && before !== 'non_compliant') {
    await emit(tx, { type: 'policy.violation', orgId: policy.orgId, data: { policyId: policy.id, deviceId: row.deviceId, violations } });
    await raiseAlert(tx, {
      orgId: policy.orgId,
      deviceId: row.deviceId,
      source: ALERT_SOURCE,
      sourceId: policy.id,
      severity: 'medium',
      title: `Not compliant with the policy ${policy.name}`.slice(0, 255),
      message: violations.map((v) => v.message).join('; '),
      dedupKey,
    });
  } else if (status === 'compliant' && before === 'non_compliant') {
    await emit(tx, { type: 'policy.compliant', orgId: policy.orgId, data: { policyId: policy.id, deviceId: row.deviceId } });
    await resolveAlert(tx, { orgId: policy.orgId, source: ALERT_SOURCE, dedupKey, note: 'the device complies again' });
  }
}

/**
 * Devices leave the policy (no longer covered, the policy deactivated or deleted): the alerts their
 * non-compliance raised are resolved, and a later evaluation announces a violation afresh.
 */
export async function releaseDevices(tx: RequestContext, policy: ConfigurationPolicy, note: string, keep: readonly string[] | null = null): Promise<void> {
  const rows = await tx.em.find(ConfigurationPolicyDevice, { policyId: policy.id, settledStatus: 'non_compliant', ...(keep && { deviceId: { $nin: [...keep] } }) }, { fields: ['id', 'deviceId'], disableIdentityMap: true });
  for (const row of rows) await resolveAlert(tx, { orgId: policy.orgId, source: ALERT_SOURCE, dedupKey: `${policy.id}:${row.deviceId}`, note });
  if (rows.length > 0) await tx.em.nativeUpdate(ConfigurationPolicyDevice, { id: { $in: rows.map((row) => row.id) } }, { settledStatus: null });
}

/** Emits `policy.evaluated` once none of the evaluation's devices is pending (the policy's row is locked by the caller). */
async function announceIfSettled(tx: RequestContext, policy: ConfigurationPolicy, evaluationId: string): Promise<void> {
  await tx.em.flush();
  const rows = await tx.em.find(ConfigurationPolicyDevice, { policyId: policy.id, evaluationId }, { fields: ['status'] });
  const count = (status: DeviceStatus) => rows.filter((row) => row.status === status).length;
  if (count('pending') > 0) return;
  await emit(tx, { type: 'policy.evaluated', orgId: policy.orgId, data: { policyId: policy.id, evaluationId, compliant: count('compliant'), nonCompliant: count('non_compliant'), pending: 0 } });
}

/*
 * Locking, always in this order: the policy's row, then its devices' rows. Whole evaluations (activation,
 * `evaluate`, a change, the interval, `applyPolicy`) lock the policy for update; one device's (a report, a
 * completed remediation) share it, so devices' reports evaluate side by side; both lock the device rows
 * they write. An answer locks its device's row, then its evaluation (an advisory lock), so the answers of
 * one evaluation decide in turn whether it has settled.
 */

/** The policy's row, read afresh and locked: `update` for a whole evaluation, `share` for one device's. */
export const lockPolicy = (tx: RequestContext, policyId: string, mode: 'update' | 'share' = 'update') =>
  tx.em.findOne(ConfigurationPolicy, { id: policyId }, { lockMode: mode === 'update' ? LockMode.PESSIMISTIC_WRITE : LockMode.PESSIMISTIC_READ, refresh: true });

/** How an evaluation goes: who asked (null: the service), and whether a device still awaiting a check keeps it. */
export interface EvaluationOptions {
  createdBy: string | null;
  /**
   * Reports and the interval: a device already `pending` keeps the `policy_check` it awaits (its rules
   * are unchanged) rather than getting another, so an offline device's checks do not pile up.
   */
  reuseChecks?: boolean;
}

/**
 * Evaluates the policy on these devices of its organization now (in the caller's transaction): inventory
 * rules at once, agent rules through a `policy_check` each device's agent answers. Answers the
 * evaluation's id and how many devices it covers.
 */
export async function evaluateDevices(tx: RequestContext, policy: ConfigurationPolicy, deviceIds: readonly string[], options: EvaluationOptions): Promise<{ evaluationId: string; devices: number }> {
  const evaluationId = randomUUID();
  const devices = deviceIds.length === 0 ? [] : ((await findDevices(tx, { ids: deviceIds, active: true }, { scope: 'all', orderBy: 'id' })) as Device[]).filter((d) => d.orgId === policy.orgId);
  if (devices.length === 0) return { evaluationId, devices: 0 };
  // The inventory as committed, read as the service (the policy's evaluation is not the caller's read).
  const reader = RequestContext.system(tx.runtime, 'policies.evaluate');
  const rules = policy.rules;
  const encrypted = rules.some((rule) => rule.type === 'disk_encryption') ? await diskEncryption(reader, devices.map((d) => d.id)) : new Map<string, boolean | null>();
  const software = rules.some((rule) => rule.type.startsWith('software_')) ? await installedSoftwareOf(reader, devices) : new Map<string, { name: string; version: string | null }[]>();
  const rows = new Map(
    (
      await tx.em.find(ConfigurationPolicyDevice, { policyId: policy.id, deviceId: { $in: devices.map((d) => d.id) } }, { orderBy: { deviceId: 'asc' }, lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true })
    ).map((row) => [row.deviceId, row]),
  );
  const agentChecks = rules.flatMap((rule, ruleIndex) => {
    if (!isAgentRule(rule)) return [];
    const { remediation: _remediation, ...check } = rule;
    return [{ ruleIndex, ...check }];
  });
  for (const device of devices) {
    const facts: InventoryFacts = {
      osType: device.osType,
      osVersion: device.osVersion,
      software: software.get(device.id) ?? [],
      encrypted: encrypted.get(device.id) ?? null,
    };
    const violations = rules.flatMap((rule, ruleIndex) => {
      const message = isAgentRule(rule) ? null : inventoryViolation(rule, facts);
      return message ? [{ ruleIndex, type: rule.type, message }] : [];
    });
    const row = await deviceRow(tx, policy, device.id, rows);
    row.evaluationId = evaluationId;
    if (agentChecks.length === 0) {
      await settle(tx, policy, row, violations);
      continue;
    }
    // Until the agent answers, the row keeps the inventory rules' violations; the answer adds its own.
    const awaited = options.reuseChecks && row.status === 'pending' ? row.pendingCommandId : null;
    const commandId = awaited ?? (await queueCommand(tx, device, { type: POLICY_CHECK, payload: { policyId: policy.id, evaluationId, checks: agentChecks } }, options.createdBy)).id;
    Object.assign(row, { status: 'pending', violations, pendingCommandId: commandId, evaluatedAt: tx.runtime.clock.now() });
  }
  await announceIfSettled(tx, policy, evaluationId);
  return { evaluationId, devices: devices.length };
}

/** The devices the policy covers: its targets' (not decommissioned) and those it was applied to, by id. */
export async function coveredDeviceIds(tx: RequestContext, policy: ConfigurationPolicy): Promise<string[]> {
  const targeted = await findDevices(tx, { target: policyTarget(policy), active: true }, { scope: 'all', fields: ['id'], orderBy: 'id' });
  const applied = await tx.em.find(ConfigurationPolicyDevice, { policyId: policy.id, applied: true }, { fields: ['deviceId'], disableIdentityMap: true });
  return [...new Set([...targeted.map((d) => d.id), ...applied.map((row) => row.deviceId)])].sort();
}

/**
 * Evaluates the policy on every device it covers (in the caller's transaction); rows of devices it no
 * longer covers go.
 */
export async function evaluatePolicy(tx: RequestContext, policy: ConfigurationPolicy, options: EvaluationOptions): Promise<{ evaluationId: string; devices: number }> {
  const deviceIds = await coveredDeviceIds(tx, policy);
  await releaseDevices(tx, policy, 'the policy no longer covers the device', deviceIds);
  await tx.em.nativeDelete(ConfigurationPolicyDevice, { policyId: policy.id, deviceId: { $nin: deviceIds } });
  policy.lastEvaluatedAt = tx.runtime.clock.now();
  const outcome = await evaluateDevices(tx, policy, deviceIds, options);
  await tx.em.flush();
  return outcome;
}

// ── the agent's answers ─────────────────────────────────────────────────────────────────────────

/** A `policy_check` ended (answered, failed, timed out, cancelled): its device's evaluation settles. */
async function checkEnded(tx: RequestContext, commandId: string, outcome: { status: string; result?: Record<string, unknown> }): Promise<void> {
  const row = await tx.em.findOne(ConfigurationPolicyDevice, { pendingCommandId: commandId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
  // A fresher check replaced it, or a settled evaluation: nothing waits for this answer.
  if (!row || row.status !== 'pending') return;
  await tx.em.execute('select pg_advisory_xact_lock(hashtext(?))', [`policy-evaluation:${row.evaluationId}`]);
  const policy = await tx.em.findOne(ConfigurationPolicy, { id: row.policyId }, { refresh: true });
  if (!policy) return;
  await settle(tx, policy, row, [...row.violations, ...agentViolations(policy.rules, outcome)].sort((a, b) => a.ruleIndex - b.ruleIndex));
  await announceIfSettled(tx, policy, row.evaluationId!);
}

const policyCheck: CommandTypeHooks = {
  serviceOnly: 'policy_check commands are queued by configuration policy evaluations',
  async answered(tx, command, result: CommandResult) {
    await checkEnded(tx, command.id, result);
    return false;
  },
  async cancelled(tx, command) {
    await checkEnded(tx, command.id, { status: 'cancelled' });
  },
};

/** Timeouts reach no `answered` hook: the committed `device.command_updated` settles them. */
export async function policyCheckTimedOut(tx: RequestContext, event: DomainEvent): Promise<void> {
  const data = event.data as { commandId: string; type: string; status: string };
  if (data.type === POLICY_CHECK && data.status === 'timeout') await checkEnded(tx, data.commandId, { status: 'timeout' });
}

export const START_SERVICE = 'start_service';

export const policyCommandTypes: Record<string, CommandTypeHooks> = {
  [POLICY_CHECK]: policyCheck,
  // Its completion is followed through `device.command_updated`, as every remediation's (remediation.ts).
  [START_SERVICE]: { serviceOnly: 'start_service commands are queued by configuration policy remediation' },
};

// ── on reports and on the interval ──────────────────────────────────────────────────────────────

/** The organization's active policies that cover the device: by their targets, or applied to it. */
async function activePoliciesCovering(ctx: RequestContext, device: { id: string; orgId: string; siteId: string | null }): Promise<ConfigurationPolicy[]> {
  const policies = await ctx.em.find(ConfigurationPolicy, { orgId: device.orgId, status: 'active' }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  if (policies.length === 0) return [];
  const applied = new Set((await ctx.em.find(ConfigurationPolicyDevice, { deviceId: device.id, applied: true }, { fields: ['policyId'], disableIdentityMap: true })).map((row) => row.policyId));
  const targets = policies.map((policy) => ({ policy, target: policyTarget(policy) }));
  const groupIds = targets.some((t) => t.target.groupIds) ? await deviceGroupIds(ctx.em, device.id) : [];
  return targets.filter((t) => applied.has(t.policy.id) || matches(device, t.target, groupIds)).map((t) => t.policy);
}

/** An inventory report of the device was stored: the active policies covering it evaluate it again. */
export async function evaluateOnReport(runtime: Runtime, device: { id: string; orgId: string; siteId: string | null }): Promise<void> {
  const ctx = RequestContext.system(runtime, 'policies.inventory-report');
  for (const policy of await activePoliciesCovering(ctx, device)) {
    await withTransaction(ctx, async (tx) => {
      const locked = await lockPolicy(tx, policy.id, 'share');
      if (locked?.status === 'active') await evaluateDevices(tx, locked, [device.id], { createdBy: null, reuseChecks: true });
      await tx.em.flush();
    });
  }
}

/** Active policies not evaluated for `intervalMinutes` (by the service's clock) evaluate their devices again. */
export async function evaluateDuePolicies(ctx: RequestContext, now: Date): Promise<void> {
  const before = new Date(now.getTime() - ctx.runtime.config.policies.evaluationIntervalMinutes * 60_000);
  const due = await ctx.em.find(ConfigurationPolicy, { status: 'active', $or: [{ lastEvaluatedAt: null }, { lastEvaluatedAt: { $lte: before } }] }, { fields: ['id'], orderBy: { lastEvaluatedAt: 'asc nulls first', id: 'asc' }, limit: 100, disableIdentityMap: true });
  for (const { id } of due) {
    try {
      await withTransaction(ctx, async (tx) => {
        const policy = await lockPolicy(tx, id);
        if (policy?.status === 'active' && (!policy.lastEvaluatedAt || policy.lastEvaluatedAt <= before)) await evaluatePolicy(tx, policy, { createdBy: null, reuseChecks: true });
      });
    } catch (error) {
      // One failing policy does not hold back the others.
      ctx.runtime.log.error({ err: error, policyId: id }, 'configuration policy evaluation failed');
    }
  }
}

/** policy.* events reach who may read the organization's policies; a device's, users limited to some sites only when it is of theirs. */
export const policyEventSight: EventSight = async (ctx, event) => {
  if (!event.orgId || !(await permits(ctx, 'policies:read', { orgId: event.orgId }))) return null;
  const deviceId = (event.data as { deviceId?: string }).deviceId;
  if (!deviceId || visibleSiteIds(ctx, event.orgId) === null) return event;
  return (await findDevices(ctx, { ids: [deviceId] }, { fields: ['id'] })).length > 0 ? event : null;
};
