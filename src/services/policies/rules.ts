import { z } from 'zod';
import type { ConfigurationRule } from '../../../entities/configuration-policy.js';
import { enumValues, uuid } from '../../validation.js';
import { OsTypeSchema } from '../devices/api.js';
import { JsonObjectSchema } from '../shared/json.js';

/*
 * A configuration policy's rules as written and shown. One flat shape per rule (GraphQL inputs have no
 * unions): `type` says which fields it needs; a missing one, or one of another type, is a 400.
 */

export const RULE_TYPES = ['software_required', 'software_forbidden', 'os_version_min', 'disk_encryption', 'service_running', 'registry_value', 'config_file'] as const;
export type RuleType = (typeof RULE_TYPES)[number];
export const RuleTypeSchema = z
  .enum(RULE_TYPES)
  .meta({ title: 'ConfigurationRuleType', description: 'What a configuration policy rule checks' })
  .register(enumValues, {
    software_required: 'Software matching `name` is installed (at `minVersion` or newer when given).',
    software_forbidden: 'No software matching `name` is installed.',
    os_version_min: 'Devices of `osType` run `version` or newer.',
    disk_encryption: 'The disk is encrypted (the security inventory).',
    service_running: 'The service `name` runs (asked of the agent).',
    registry_value: 'The registry value `name` under `path` is `expected` (asked of the agent).',
    config_file: 'The key `key` of the configuration file `path` is `expected` (asked of the agent).',
  });

/** The rules the agent answers (`policy_check`); the others are decided from the inventory. */
export const AGENT_RULE_TYPES: readonly string[] = ['service_running', 'registry_value', 'config_file'];

export const REMEDIATION_TYPES = ['uninstall', 'install', 'start_service', 'script'] as const;
export const RemediationTypeSchema = z
  .enum(REMEDIATION_TYPES)
  .meta({ title: 'ConfigurationRemediationType', description: 'How a violated rule is put right' })
  .register(enumValues, {
    uninstall: 'Uninstall the forbidden software (`uninstall_software`).',
    install: 'Install `versionId` of the catalog package `catalogId` (`install_software`).',
    start_service: 'Start the service (`start_service`).',
    script: 'Run the script `scriptId` with `parameters`.',
  });

/** Which fields each rule and remediation type requires (others of the shape are refused). */
const RULE_FIELDS: Record<RuleType, readonly (keyof ConfigurationRule)[]> = {
  software_required: ['name'],
  software_forbidden: ['name'],
  os_version_min: ['osType', 'version'],
  disk_encryption: [],
  service_running: ['name'],
  registry_value: ['path', 'name', 'expected'],
  config_file: ['path', 'key', 'expected'],
};
const OPTIONAL_RULE_FIELDS: Partial<Record<RuleType, readonly string[]>> = { software_required: ['minVersion'] };
const REMEDIATION_FIELDS: Record<(typeof REMEDIATION_TYPES)[number], readonly string[]> = {
  uninstall: [],
  install: ['catalogId', 'versionId'],
  start_service: [],
  script: ['scriptId'],
};
/** Which rule types each remediation fits. */
const REMEDIATION_FITS: Record<(typeof REMEDIATION_TYPES)[number], readonly RuleType[] | null> = {
  uninstall: ['software_forbidden'],
  install: ['software_required'],
  start_service: ['service_running'],
  script: null,
};

const Text = z.string().trim().min(1).max(500);

const RemediationInput = z
  .strictObject({
    type: RemediationTypeSchema,
    catalogId: uuid().optional().describe('install: the catalog package'),
    versionId: uuid().optional().describe('install: its version'),
    scriptId: uuid().optional().describe('script: the script to run'),
    parameters: JsonObjectSchema.optional().describe('script: values of its parameters, by name'),
  })
  .superRefine((remediation, ctx) => {
    const needed = REMEDIATION_FIELDS[remediation.type];
    for (const field of needed) if (remediation[field as keyof typeof remediation] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: `required for ${remediation.type} remediations` });
    for (const field of ['catalogId', 'versionId', 'scriptId', 'parameters'] as const) {
      const allowed = needed.includes(field) || (remediation.type === 'script' && field === 'parameters');
      if (!allowed && remediation[field] !== undefined) ctx.addIssue({ code: 'custom', path: [field], message: `not a field of ${remediation.type} remediations` });
    }
  })
  .meta({ title: 'ConfigurationRemediationInput', description: 'uninstall, start_service: nothing else; install: catalogId and versionId; script: scriptId, parameters optional' });

// Registry values and configuration keys are compared as the agent reads them: text, numbers or booleans.
const Expected = z.unknown().describe('registry_value, config_file: the value expected (text, a number or a boolean)');

export const RuleInput = z
  .strictObject({
    type: RuleTypeSchema,
    name: Text.optional().describe('software rules: the name, in any case, `*` matching any text; service_running: the service; registry_value: the value’s name'),
    minVersion: z.string().trim().min(1).max(100).optional().describe('software_required: the oldest version that complies, compared by dotted numbers'),
    osType: OsTypeSchema.optional().describe('os_version_min: the operating system it applies to (other devices pass)'),
    version: z.string().trim().min(1).max(100).optional().describe('os_version_min: the oldest version that complies'),
    path: z.string().trim().min(1).max(1000).optional().describe('registry_value: the key; config_file: the file'),
    key: z.string().trim().min(1).max(500).optional().describe('config_file: the key in the file'),
    expected: Expected.optional(),
    remediation: RemediationInput.optional().describe('how a violation is put right (POST /policies/:id/remediate)'),
  })
  .superRefine((rule, ctx) => {
    const needed = RULE_FIELDS[rule.type];
    const optional = OPTIONAL_RULE_FIELDS[rule.type] ?? [];
    for (const field of needed) if (rule[field as keyof typeof rule] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: `required for ${rule.type} rules` });
    for (const field of ['name', 'minVersion', 'osType', 'version', 'path', 'key', 'expected'] as const) {
      if (rule[field] !== undefined && !needed.includes(field) && !optional.includes(field)) ctx.addIssue({ code: 'custom', path: [field], message: `not a field of ${rule.type} rules` });
    }
    if (rule.expected !== undefined && !['string', 'number', 'boolean'].includes(typeof rule.expected)) ctx.addIssue({ code: 'custom', path: ['expected'], message: 'must be text, a number or a boolean' });
    if (typeof rule.expected === 'string' && rule.expected.length > 1000) ctx.addIssue({ code: 'custom', path: ['expected'], message: 'at most 1000 characters' });
    const fits = rule.remediation && REMEDIATION_FITS[rule.remediation.type];
    if (rule.remediation && fits && !fits.includes(rule.type)) ctx.addIssue({ code: 'custom', path: ['remediation', 'type'], message: `a ${rule.remediation.type} remediation does not fit ${rule.type} rules` });
  })
  .meta({ title: 'ConfigurationRuleInput', description: 'A rule of a configuration policy: `type` and the fields it needs, and how to remediate a violation' });

export const RulesInput = z.array(RuleInput).min(1).max(50).describe('1 to 50 rules; a device complies when it passes all of them');

export const RuleViewSchema = z
  .object({
    type: RuleTypeSchema,
    name: z.string().optional().describe('software rules, service_running, registry_value: the name'),
    minVersion: z.string().optional().describe('software_required: the oldest version that complies'),
    osType: OsTypeSchema.optional().describe('os_version_min: the operating system it applies to'),
    version: z.string().optional().describe('os_version_min: the oldest version that complies'),
    path: z.string().optional().describe('registry_value: the key; config_file: the file'),
    key: z.string().optional().describe('config_file: the key in the file'),
    expected: z.unknown().optional().describe('registry_value, config_file: the value expected'),
    remediation: z
      .object({
        type: RemediationTypeSchema,
        catalogId: uuid().optional().describe('install: the catalog package'),
        versionId: uuid().optional().describe('install: its version'),
        scriptId: uuid().optional().describe('script: the script to run'),
        parameters: z.record(z.string(), z.unknown()).optional().describe('script: values of its parameters'),
      })
      .meta({ title: 'ConfigurationRemediation', description: 'How a violation of the rule is put right' })
      .optional(),
  })
  .meta({ title: 'ConfigurationRule', description: 'A rule of a configuration policy' });

/** The rules as stored: the fields given, nothing undefined. */
export function storedRules(rules: z.output<typeof RulesInput>): ConfigurationRule[] {
  const defined = <T extends object>(value: T): T => Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
  return rules.map((rule) => defined({ ...rule, expected: rule.expected as ConfigurationRule['expected'], remediation: rule.remediation && defined(rule.remediation) }));
}
