import type { FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { ConfigurationPolicy, ConfigurationPolicyDevice } from '../../../entities/configuration-policy.js';
import type { RequestContext } from '../../auth/context.js';
import { tenantSql, tenantWhere } from '../../auth/policy.js';
import { uuidArray } from '../../db/arrays.js';
import { requestRows, statement } from '../../db/prepared.js';
import { cursorListFields, cursorPageSchema, finishCursorPage, keysetWhere } from '../../pagination.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { accessibleDevice, findDevices, visibleDevicesSql } from '../devices/api.js';
import { requirePolicy } from './evaluation.js';
import { authorizeLists, PolicyStatusSchema } from './policies.js';
import { RuleTypeSchema } from './rules.js';

/*
 * Compliance with configuration policies, as the caller sees it: per policy, per device, across the
 * organization (a device counts by its worst status over the policies that evaluated it). Callers
 * limited to some sites count their sites' devices only.
 */

export const COMPLIANCE_STATUSES = ['compliant', 'non_compliant', 'pending'] as const;
export const ComplianceStatusSchema = z
  .enum(COMPLIANCE_STATUSES)
  .meta({ title: 'PolicyComplianceStatus', description: 'A device’s latest evaluation against a policy' })
  .register(enumValues, {
    compliant: 'It passes every rule.',
    non_compliant: 'It fails at least one rule (see violations).',
    pending: 'Its agent has not answered the policy’s checks yet.',
  });

const ViolationSchema = z
  .object({ ruleIndex: z.number().int().describe('the rule failed (its index in the policy’s rules)'), type: RuleTypeSchema, message: z.string().describe('what is wrong') })
  .meta({ title: 'PolicyViolation', description: 'A rule a device fails' });

const CountsFields = {
  compliant: z.number().int().describe('devices that pass every rule'),
  nonCompliant: z.number().int().describe('devices failing a rule'),
  pending: z.number().int().describe('devices whose agent has not answered yet'),
};

export const PolicyComplianceSchema = z
  .object({
    summary: z.object(CountsFields).meta({ title: 'PolicyComplianceCounts', description: 'How many devices are in each status' }),
    devices: z
      .array(
        z
          .object({
            deviceId: uuid().describe('the device'),
            hostname: z.string().describe('its hostname'),
            status: ComplianceStatusSchema,
            violations: z.array(ViolationSchema).describe('the rules it fails (pending: those known so far)'),
            evaluatedAt: timestamp().describe('when it was last evaluated'),
          })
          .meta({ title: 'PolicyDeviceCompliance', description: 'A device’s latest evaluation against the policy' }),
      )
      .describe('the devices evaluated, by hostname'),
  })
  .meta({ title: 'PolicyCompliance', description: 'How the devices the caller sees comply with one policy' });
type PolicyCompliance = z.output<typeof PolicyComplianceSchema>;

/** The policy's evaluated devices the caller sees, by hostname, with their counts. */
export async function policyCompliance(ctx: RequestContext, policyId: string): Promise<PolicyCompliance> {
  const policy = await requirePolicy(ctx, policyId, 'policies:read');
  const rows = await ctx.em.find(ConfigurationPolicyDevice, { policyId: policy.id, status: { $ne: null } }, { disableIdentityMap: true });
  const devices = await findDevices(ctx, { ids: rows.map((r) => r.deviceId) }, { fields: ['hostname'] });
  const byDevice = new Map(rows.map((r) => [r.deviceId, r]));
  const shown = devices.map((d) => ({ device: d, row: byDevice.get(d.id)! }));
  const count = (status: string) => shown.filter((s) => s.row.status === status).length;
  return {
    summary: { compliant: count('compliant'), nonCompliant: count('non_compliant'), pending: count('pending') },
    devices: shown.map(({ device, row }) => ({
      deviceId: device.id,
      hostname: device.hostname,
      status: row.status as PolicyCompliance['devices'][number]['status'],
      violations: row.violations as PolicyCompliance['devices'][number]['violations'],
      evaluatedAt: row.evaluatedAt!.toISOString(),
    })),
  };
}

// ── across policies ─────────────────────────────────────────────────────────────────────────────

export const ComplianceStatsQuery = z.strictObject({ orgId: uuid().optional().describe('only this organization (partner and system callers)') });
export type ComplianceStatsInput = z.input<typeof ComplianceStatsQuery>;

export const ComplianceStatsSchema = z
  .object({
    policies: z.number().int().describe('configuration policies'),
    activePolicies: z.number().int().describe('of which active'),
    devices: z.number().int().describe('devices evaluated by at least one policy'),
    ...CountsFields,
    compliancePercent: z.number().describe('compliant devices in percent of those evaluated, rounded down to a tenth (100 when none was evaluated)'),
  })
  .meta({ title: 'PolicyComplianceStats', description: 'Compliance across the configuration policies; a device counts by its worst status' });
type ComplianceStats = z.output<typeof ComplianceStatsSchema>;

/** Each evaluated device the caller sees, by its worst status over the policies: a condition and its parameters. */
async function worstStatuses(ctx: RequestContext, orgId: string | undefined): Promise<{ sql: string; params: unknown[] }> {
  const tenant = await tenantSql(ctx, { org: 'r.org_id', requestedOrgId: orgId });
  const visible = await visibleDevicesSql(ctx, 'r.device_id', { orgId });
  return {
    sql: `select r.device_id, max(case r.status when 'non_compliant' then 3 when 'pending' then 2 else 1 end) as worst
      from configuration_policy_device r
      where r.status is not null and ${tenant ? tenant.sql : 'true'} and ${visible.sql}
      group by r.device_id`,
    params: [...(tenant?.params ?? []), ...visible.params],
  };
}

export async function complianceStats(ctx: RequestContext, raw: ComplianceStatsInput): Promise<ComplianceStats> {
  const query = parseInput(ComplianceStatsQuery, raw);
  await authorizeLists(ctx, query.orgId);
  const where = ((await tenantWhere<ConfigurationPolicy>(ctx, { org: 'orgId', requestedOrgId: query.orgId })) ?? {}) as FilterQuery<ConfigurationPolicy>;
  const [policies, activePolicies] = await Promise.all([ctx.em.count(ConfigurationPolicy, where), ctx.em.count(ConfigurationPolicy, { $and: [where, { status: 'active' }] } as FilterQuery<ConfigurationPolicy>)]);
  const worst = await worstStatuses(ctx, query.orgId);
  const [row] = await requestRows<{ devices: number; compliant: number; non_compliant: number; pending: number }>(
    ctx.em,
    statement(`select count(*)::int as devices, (count(*) filter (where worst = 1))::int as compliant, (count(*) filter (where worst = 3))::int as non_compliant,
        (count(*) filter (where worst = 2))::int as pending from (${worst.sql}) w`),
    worst.params,
  );
  const { devices, compliant, non_compliant: nonCompliant, pending } = row!;
  // Rounded down: 99.96 % is not shown as 100.
  const compliancePercent = devices === 0 ? 100 : Math.floor((compliant * 1000) / devices) / 10;
  return { policies, activePolicies, devices, compliant, nonCompliant, pending, compliancePercent };
}

const summaryFilters = {
  orgId: uuid().optional().describe('only policies of this organization'),
  status: PolicyStatusSchema.optional().describe('only active or only inactive policies'),
};
export const ComplianceSummaryQuery = z.strictObject({ ...summaryFilters, ...cursorListFields });
export type ComplianceSummaryInput = z.input<typeof ComplianceSummaryQuery>;
const PolicySummarySchema = z
  .object({ policyId: uuid().describe('the policy'), name: z.string().describe('its name'), status: PolicyStatusSchema, ...CountsFields })
  .meta({ title: 'PolicyComplianceSummary', description: 'A policy with how many of the devices the caller sees are in each status' });
export const ComplianceSummaryPageSchema = cursorPageSchema(PolicySummarySchema, 'PolicyComplianceSummaryPage', 'policies with their counts, newest first');
type ComplianceSummaryPage = z.output<typeof ComplianceSummaryPageSchema>;

/** Each policy the caller sees with its devices' counts, newest first, in keyset pages. */
export async function complianceSummary(ctx: RequestContext, raw: ComplianceSummaryInput): Promise<ComplianceSummaryPage> {
  const query = parseInput(ComplianceSummaryQuery, raw);
  await authorizeLists(ctx, query.orgId);
  const where: FilterQuery<ConfigurationPolicy>[] = [(await tenantWhere<ConfigurationPolicy>(ctx, { org: 'orgId', requestedOrgId: query.orgId })) ?? {}];
  if (query.status) where.push({ status: query.status });
  const keyset = keysetWhere('createdAt', 'date', 'desc', query.cursor);
  const rows = await ctx.em.find(ConfigurationPolicy, { $and: [...where, keyset.where] } as FilterQuery<ConfigurationPolicy>, { orderBy: keyset.orderBy, limit: query.limit + 1, disableIdentityMap: true });
  const page = finishCursorPage(rows, query.limit, (p) => p.createdAt.toISOString());
  const ids = page.items.map((p) => p.id);
  const visible = await visibleDevicesSql(ctx, 'r.device_id');
  const counts =
    ids.length === 0
      ? []
      : await requestRows<{ policy_id: string; status: string; n: number }>(
          ctx.em,
          statement(`select r.policy_id, r.status, count(*)::int as n from configuration_policy_device r
            where r.policy_id = any(?::uuid[]) and r.status is not null and ${visible.sql} group by r.policy_id, r.status`),
          [uuidArray(ids), ...visible.params],
        );
  const countOf = (policyId: string, status: string) => counts.find((c) => c.policy_id === policyId && c.status === status)?.n ?? 0;
  return {
    data: page.items.map((p) => ({
      policyId: p.id,
      name: p.name,
      status: p.status as ComplianceSummaryPage['data'][number]['status'],
      compliant: countOf(p.id, 'compliant'),
      nonCompliant: countOf(p.id, 'non_compliant'),
      pending: countOf(p.id, 'pending'),
    })),
    nextCursor: page.nextCursor,
  };
}

export const DeviceComplianceSchema = z
  .object({
    deviceId: uuid().describe('the device'),
    status: ComplianceStatusSchema.nullable().describe('its worst status over the policies; null when none evaluated it'),
    policies: z
      .array(
        z
          .object({ policyId: uuid().describe('the policy'), name: z.string().describe('its name'), status: ComplianceStatusSchema, violations: z.array(ViolationSchema).describe('the rules it fails') })
          .meta({ title: 'DevicePolicyCompliance', description: 'The device’s latest evaluation against one policy' }),
      )
      .describe('the policies that evaluated it, by name'),
  })
  .meta({ title: 'DeviceCompliance', description: 'How one device complies with the configuration policies' });
type DeviceCompliance = z.output<typeof DeviceComplianceSchema>;

const WORST: readonly string[] = ['non_compliant', 'pending', 'compliant'];

export async function deviceCompliance(ctx: RequestContext, deviceId: string): Promise<DeviceCompliance> {
  const device = await accessibleDevice(ctx, deviceId, 'policies:read');
  const rows = await ctx.em.find(ConfigurationPolicyDevice, { deviceId: device.id, orgId: device.orgId, status: { $ne: null } }, { disableIdentityMap: true });
  const policies = new Map((await ctx.em.find(ConfigurationPolicy, { id: { $in: rows.map((r) => r.policyId) } }, { fields: ['name'], disableIdentityMap: true })).map((p) => [p.id, p.name]));
  const shown = rows
    .map((r) => ({ policyId: r.policyId, name: policies.get(r.policyId) ?? '', status: r.status as DeviceCompliance['policies'][number]['status'], violations: r.violations as DeviceCompliance['policies'][number]['violations'] }))
    .sort((a, b) => a.name.localeCompare(b.name) || a.policyId.localeCompare(b.policyId));
  const status = WORST.find((s) => shown.some((p) => p.status === s)) ?? null;
  return { deviceId: device.id, status: status as DeviceCompliance['status'], policies: shown };
}
