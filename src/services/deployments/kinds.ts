import { z } from 'zod';
import type { RolloutDevice, RolloutPayload, RolloutType } from '../../../entities/deployment.js';
import { requirePrincipal } from '../../auth/policy.js';
import { inSavepoint } from '../../db/transaction.js';
import { badRequest, notFound } from '../../errors.js';
import { MAX_LIMIT } from '../../pagination.js';
import { uuid } from '../../validation.js';
import { agentVersionRegistered, findDevices, pinAgentVersion, queueCommand, unpinAgentVersion, versionInput } from '../devices/api.js';
import { accessibleScript, executeScript, secretParameterNames } from '../scripts/api.js';
import { JsonObjectSchema } from '../shared/json.js';
import { softwareCommandFor, softwarePackage } from '../software/api.js';
import { policyKind } from './policy-kind.js';
import type { Outcome, RolloutKind, Settled } from './rollout-kind.js';

/*
 * What each rollout type hands out and how its devices' outcomes are known: script and software go
 * out as device commands (their results come back on `device.command_updated`, see progress.ts);
 * policy and agent_version are checked in due work (`settle`).
 */

const failAll = (rows: RolloutDevice[], reason: string) => new Map<string, Outcome>(rows.map((row) => [row.deviceId, { failed: reason }]));

const ScriptPayload = z.strictObject({ scriptId: uuid().describe('the script to run'), parameters: JsonObjectSchema.optional().describe('values of its parameters, by name') });
const SoftwarePayload = z.strictObject({ catalogId: uuid().describe('the catalog package'), versionId: uuid().describe('its version to install') });
const AgentVersionPayload = z.strictObject({ version: versionInput().describe('a registered agent build’s version') });

const scriptKind: RolloutKind = {
  permission: 'scripts:execute',
  payload: ScriptPayload,
  async check(ctx, orgId, payload) {
    const { scriptId, parameters } = payload as z.output<typeof ScriptPayload>;
    const script = await accessibleScript(ctx, scriptId, 'scripts:execute');
    if (script.orgId !== orgId) throw notFound('Script');
    // A rollout is read by everyone with deployments:read and kept as written: as in automations, a secret value has no place in it.
    const secrets = (await secretParameterNames(ctx, orgId, [script.id])).get(script.id)!;
    const secret = Object.keys(parameters ?? {}).find((name) => secrets.has(name));
    if (secret) throw badRequest(`Parameter ${secret} is secret: give it a default on the script instead of a value in the rollout`);
  },
  async handOut(tx, rollout, rows) {
    const { scriptId, parameters } = rollout.payload as z.output<typeof ScriptPayload>;
    const outcomes = new Map<string, Outcome>();
    // executeScript takes at most MAX_LIMIT devices a call; one execution (and command) per device.
    for (let i = 0; i < rows.length; i += MAX_LIMIT) {
      const chunk = rows.slice(i, i + MAX_LIMIT);
      const attempt = await inSavepoint(tx, (inner) => executeScript(inner, scriptId, { deviceIds: chunk.map((row) => row.deviceId), parameters }));
      if ('refused' in attempt) {
        for (const [deviceId, outcome] of failAll(chunk, attempt.refused.message)) outcomes.set(deviceId, outcome);
        continue;
      }
      const started = attempt.value;
      for (const execution of started.executions) outcomes.set(execution.deviceId, { commandId: execution.commandId });
      for (const skipped of started.skipped) outcomes.set(skipped.deviceId, { failed: `the script does not run here: ${skipped.reason}` });
      // Devices executeScript no longer reaches (moved to a site the starter cannot see, gone).
      for (const row of chunk) if (!outcomes.has(row.deviceId)) outcomes.set(row.deviceId, { failed: 'the device is no longer reachable' });
    }
    return outcomes;
  },
};

const softwareKind: RolloutKind = {
  permission: 'software:write',
  payload: SoftwarePayload,
  async check(ctx, orgId, payload) {
    const { catalogId, versionId } = payload as z.output<typeof SoftwarePayload>;
    const pkg = await softwarePackage(ctx, catalogId, versionId, 'software:write');
    if (pkg.orgId !== orgId) throw notFound('Software package');
  },
  async handOut(tx, rollout, rows) {
    const { catalogId, versionId } = rollout.payload as z.output<typeof SoftwarePayload>;
    const found = await inSavepoint(tx, (inner) => softwarePackage(inner, catalogId, versionId, 'software:write'));
    if ('refused' in found) return failAll(rows, found.refused.message);
    const pkg = found.value;
    const devices = await findDevices(tx, { ids: rows.map((row) => row.deviceId) }, { scope: 'all', orderBy: 'id' });
    const byId = new Map(devices.map((device) => [device.id, device]));
    const createdBy = requirePrincipal(tx).userId;
    const outcomes = new Map<string, Outcome>();
    for (const row of rows) {
      const device = byId.get(row.deviceId);
      if (!device || device.status === 'decommissioned') {
        outcomes.set(row.deviceId, { failed: 'the device is decommissioned' });
        continue;
      }
      const command = softwareCommandFor(pkg, 'install', device.osType, { deploymentId: rollout.id });
      if ('skipped' in command) outcomes.set(row.deviceId, { failed: command.skipped });
      else outcomes.set(row.deviceId, { commandId: (await queueCommand(tx, device, command, createdBy)).id });
    }
    return outcomes;
  },
};

const agentVersionKind: RolloutKind = {
  permission: 'devices:write',
  payload: AgentVersionPayload,
  async check(ctx, _orgId, payload) {
    const { version } = payload as z.output<typeof AgentVersionPayload>;
    if (!(await agentVersionRegistered(ctx, version))) throw notFound('Agent version');
  },
  async handOut(tx, rollout, rows) {
    const { version } = rollout.payload as z.output<typeof AgentVersionPayload>;
    const missing = await pinAgentVersion(tx, rows.map((row) => row.deviceId), version);
    return new Map(rows.map((row): [string, Outcome] => [row.deviceId, missing.has(row.deviceId) ? { failed: missing.get(row.deviceId)! } : { started: true }]));
  },
  // A device succeeded once it heartbeats the version; its pin then goes (the promoted build applies again).
  async settle(ctx, rollout, rows) {
    const { version } = rollout.payload as z.output<typeof AgentVersionPayload>;
    const devices = await findDevices(ctx, { ids: rows.map((row) => row.deviceId) }, { scope: 'all', fields: ['agentVersion'], orderBy: 'id' });
    return new Map(devices.filter((device) => device.agentVersion === version).map((device): [string, Settled] => [device.id, { status: 'succeeded', reason: null }]));
  },
  release: unpinAgentVersion,
};

export const rolloutKinds: Record<RolloutType, RolloutKind> = {
  script: scriptKind,
  software: softwareKind,
  policy: policyKind,
  agent_version: agentVersionKind,
};

/** The payload checked against its type's shape (400 otherwise). */
export function parsePayload(type: RolloutType, payload: unknown): RolloutPayload {
  const parsed = rolloutKinds[type].payload.safeParse(payload);
  if (!parsed.success) throw badRequest(`payload does not fit a ${type} rollout`, parsed.error.issues.map((issue) => ({ path: ['payload', ...issue.path].join('.'), message: issue.message })));
  return parsed.data;
}
