import { z } from 'zod';
import { type ConfigurationPolicy, ConfigurationPolicyDevice, ConfigurationPolicyRemediation, type ConfigurationRule } from '../../../entities/configuration-policy.js';
import type { Device } from '../../../entities/device.js';
import { RequestContext } from '../../auth/context.js';
import { requirePrincipal } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { notFound } from '../../errors.js';
import type { DomainEvent } from '../../events/types.js';
import { parseInput, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { checkTargets, findDevices, queueCommand } from '../devices/api.js';
import { accessibleScript, executeScript } from '../scripts/api.js';
import { INSTALL_SOFTWARE, installedSoftwareOf, softwareCommandFor, softwarePackage, UNINSTALL_SOFTWARE, type SoftwarePackage } from '../software/api.js';
import { evaluateDevices, lockPolicy, nameMatches, policyTarget, requirePolicy, START_SERVICE } from './evaluation.js';

/*
 * Remediation: the violated rules of non-compliant devices that carry a `remediation` get it as a
 * command (uninstall, install, start the service, run a script). Each command is kept by its id; when
 * it completes, the device is evaluated again (`device.command_updated`, whoever owns the type).
 */

/** The catalog versions and scripts the rules' remediations name are the policy's organization's (404 otherwise). */
export async function checkRemediationRefs(ctx: RequestContext, orgId: string, rules: ConfigurationRule[]): Promise<void> {
  for (const { remediation } of rules) {
    if (remediation?.type === 'install') {
      const pkg = await softwarePackage(ctx, remediation.catalogId!, remediation.versionId!, 'software:read');
      if (pkg.orgId !== orgId) throw notFound('Software package');
    }
    if (remediation?.type === 'script') {
      const script = await accessibleScript(ctx, remediation.scriptId!, 'scripts:read');
      // Shared (system) scripts have no organization and run everywhere.
      if (script.orgId !== null && script.orgId !== orgId) throw notFound('Script');
    }
  }
}

export const RemediateSchema = z
  .strictObject({ deviceIds: z.array(uuid()).min(1).max(500).optional().describe('only these devices; left out: every non-compliant device of the policy') })
  .meta({ title: 'RemediateConfigurationPolicyInput', description: 'Which non-compliant devices to remediate' });
export type RemediateInput = z.input<typeof RemediateSchema>;

export const RemediationResultSchema = z
  .object({
    commands: z
      .array(
        z
          .object({
            deviceId: uuid().describe('the device'),
            ruleIndex: z.number().int().describe('the violated rule (its index in the policy’s rules)'),
            commandId: uuid().describe('the command its agent gets'),
            type: z.string().describe('the command’s type: uninstall_software, install_software, start_service or run_script'),
          })
          .meta({ title: 'ConfigurationRemediationCommand', description: 'A remediation command queued' }),
      )
      .describe('the commands queued, one per violated rule with a remediation (uninstall: one per matching application)'),
    skipped: z
      .array(z.object({ deviceId: uuid().describe('the device'), reason: z.string().describe('why nothing was queued for it') }).meta({ title: 'ConfigurationRemediationSkipped', description: 'A device left without a remediation command' }))
      .describe('devices (and violated rules) left out, with the reason'),
  })
  .meta({ title: 'ConfigurationRemediationResult', description: 'What remediating a policy queued, and what it left out' });
type RemediationResult = z.output<typeof RemediationResultSchema>;

const REMEDIATION_COMMAND_TYPES: readonly string[] = [UNINSTALL_SOFTWARE, INSTALL_SOFTWARE, START_SERVICE, 'run_script'];

type Queued = { commandId: string; type: string }[] | { skipped: string };

/** What one remediation call reads once for all its devices: their installed software, each catalog version named. */
interface Known {
  software: Map<string, { id: string; name: string; version: string | null }[]>;
  packages: Map<string, Promise<SoftwarePackage>>;
}

/** The commands that put one violated rule right on one device, or why there are none. */
async function remediateRule(tx: RequestContext, policy: ConfigurationPolicy, device: Device, rule: ConfigurationRule, userId: string | null, known: Known): Promise<Queued> {
  const remediation = rule.remediation!;
  switch (remediation.type) {
    case 'uninstall': {
      const found = (known.software.get(device.id) ?? []).filter((s) => nameMatches(rule.name!, s.name));
      if (found.length === 0) return { skipped: `no installed software matches ${rule.name}` };
      const queued = [];
      for (const item of found) {
        // softwareId: the software domain removes the item once the uninstall completes.
        const command = await queueCommand(tx, device, { type: UNINSTALL_SOFTWARE, payload: { policyId: policy.id, softwareId: item.id, name: item.name, version: item.version } }, userId);
        queued.push({ commandId: command.id, type: command.type });
      }
      return queued;
    }
    case 'install': {
      const key = `${remediation.catalogId}:${remediation.versionId}`;
      if (!known.packages.has(key)) known.packages.set(key, softwarePackage(tx, remediation.catalogId!, remediation.versionId!, 'software:read'));
      const pkg = await known.packages.get(key)!;
      const command = softwareCommandFor(pkg, 'install', device.osType, { policyId: policy.id });
      if ('skipped' in command) return command;
      const queued = await queueCommand(tx, device, command, userId);
      return [{ commandId: queued.id, type: queued.type }];
    }
    case 'start_service': {
      const command = await queueCommand(tx, device, { type: START_SERVICE, payload: { policyId: policy.id, name: rule.name } }, userId);
      return [{ commandId: command.id, type: command.type }];
    }
    default: {
      const result = await executeScript(tx, remediation.scriptId!, { deviceIds: [device.id], parameters: remediation.parameters });
      const execution = result.executions[0];
      if (!execution) return { skipped: `the script does not run on this device (${result.skipped[0]?.reason ?? 'skipped'})` };
      return [{ commandId: execution.commandId, type: 'run_script' }];
    }
  }
}

/**
 * Queues the remediation of every violated rule that has one, on the policy's non-compliant devices
 * the caller sees (or those of `deviceIds`: 404 for a device it does not see).
 */
export async function remediateConfigurationPolicy(ctx: RequestContext, policyId: string, raw: RemediateInput): Promise<RemediationResult> {
  const input = parseInput(RemediateSchema, raw);
  const policy = await requirePolicy(ctx, policyId, 'policies:write');
  await checkTargets(ctx, policyTarget(policy), { stored: true });
  if (input.deviceIds) {
    const seen = await findDevices(ctx, { ids: input.deviceIds }, { fields: ['orgId'] });
    if (seen.length !== new Set(input.deviceIds.map((id) => id.toLowerCase())).size || seen.some((d) => d.orgId !== policy.orgId)) throw notFound('Device');
  }
  const userId = requirePrincipal(ctx).userId;
  return withTransaction(ctx, async (tx) => {
    const rows = await tx.em.find(ConfigurationPolicyDevice, { policyId: policy.id, status: 'non_compliant', ...(input.deviceIds && { deviceId: { $in: input.deviceIds.map((id) => id.toLowerCase()) } }) }, { orderBy: { deviceId: 'asc' } });
    const devices = new Map((await findDevices(tx, { ids: rows.map((r) => r.deviceId), active: true })).map((d) => [d.id, d as Device]));
    const result: RemediationResult = { commands: [], skipped: [] };
    const uninstalls = policy.rules.some((rule) => rule.remediation?.type === 'uninstall');
    const known: Known = { software: uninstalls ? await installedSoftwareOf(RequestContext.system(tx.runtime, 'policies.remediate'), [...devices.values()]) : new Map(), packages: new Map() };
    for (const row of rows) {
      const device = devices.get(row.deviceId);
      if (!device) continue;
      const remediable = row.violations.filter((v) => policy.rules[v.ruleIndex]?.remediation);
      if (remediable.length === 0) result.skipped.push({ deviceId: device.id, reason: 'no violated rule has a remediation' });
      for (const violation of remediable) {
        const queued = await remediateRule(tx, policy, device, policy.rules[violation.ruleIndex]!, userId, known);
        if ('skipped' in queued) {
          result.skipped.push({ deviceId: device.id, reason: `rule ${violation.ruleIndex}: ${queued.skipped}` });
          continue;
        }
        for (const command of queued) {
          tx.em.create(ConfigurationPolicyRemediation, { commandId: command.commandId, policyId: policy.id, deviceId: device.id, orgId: policy.orgId, ruleIndex: violation.ruleIndex, type: command.type, createdAt: tx.runtime.clock.now() });
          result.commands.push({ deviceId: device.id, ruleIndex: violation.ruleIndex, ...command });
        }
      }
    }
    await tx.em.flush();
    await recordAudit(tx, {
      action: 'configuration_policy.remediate',
      resourceType: 'configuration_policy',
      resourceId: policy.id,
      orgId: policy.orgId,
      details: { name: policy.name, commands: result.commands.length, skipped: result.skipped.length },
    });
    return result;
  });
}

/** A remediation command ended: it is marked, and a completed one has its device evaluated again. */
export async function remediationEnded(tx: RequestContext, event: DomainEvent): Promise<void> {
  const data = event.data as { commandId: string; type: string; status: string };
  if (!REMEDIATION_COMMAND_TYPES.includes(data.type) || !['completed', 'failed', 'timeout', 'cancelled'].includes(data.status)) return;
  const remediation = await tx.em.findOne(ConfigurationPolicyRemediation, { commandId: data.commandId });
  if (!remediation || remediation.status !== 'queued') return;
  remediation.status = data.status;
  await tx.em.flush();
  if (data.status !== 'completed') return;
  const policy = await lockPolicy(tx, remediation.policyId, 'share');
  if (policy) await evaluateDevices(tx, policy, [remediation.deviceId], { createdBy: null });
  await tx.em.flush();
}
