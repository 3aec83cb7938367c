import { z } from 'zod';
import type { PatchReportScope } from '../../../entities/patch-report.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, targetOrgId, visibleSiteIds } from '../../auth/policy.js';
import { parseInput, uuid } from '../../validation.js';
import { checkTargets, findDevices } from '../devices/api.js';
import { deviceCompliance, percentOf } from './device-compliance.js';
import { PatchSeveritySchema, PatchSourceSchema } from './patches.js';

/*
 * Patch compliance: how far the devices a caller sees have installed the patches approved for them
 * (`deviceCompliance`), per device and over them all. The reports (compliance-reports.ts) build on the same.
 */

const DAY_MS = 86_400_000;

export const complianceFilters = {
  orgId: uuid().optional().describe('the organization (required of partner and platform callers)'),
  siteId: uuid().optional().describe('only the devices of this site'),
  deviceId: uuid().optional().describe('only this device'),
  source: PatchSourceSchema.optional().describe('count only the patches from this source'),
  severity: PatchSeveritySchema.optional().describe('count only the patches of this severity'),
};
export const PatchComplianceQuery = z.strictObject(complianceFilters);
export type PatchComplianceInput = z.input<typeof PatchComplianceQuery>;

export const ComplianceSummarySchema = z
  .object({
    devices: z.number().int().describe('the devices counted'),
    compliantDevices: z.number().int().describe('of those, the devices at 100 %'),
    installed: z.number().int().describe('approved patches installed, over the devices'),
    missing: z.number().int().describe('approved patches missing, over the devices'),
    compliancePercent: z.number().describe('installed ÷ (installed + missing + failed + pending reboot) over all the devices × 100, one decimal; 100 when nothing approved applies'),
    criticalMissing: z.number().int().describe('approved critical patches missing, over the devices'),
    oldestMissingDays: z.number().int().nullable().describe('whole days since the oldest approved missing patch was released (else first reported); null when none is missing'),
  })
  .meta({ title: 'PatchComplianceSummary', description: 'Patch compliance over the devices counted' });

export const DeviceComplianceSchema = z
  .object({
    deviceId: uuid().describe('the device'),
    hostname: z.string().describe('its hostname'),
    compliancePercent: z.number().describe('installed ÷ (installed + missing + failed + pending reboot) × 100 of its approved patches, one decimal'),
    criticalMissing: z.number().int().describe('approved critical patches it misses'),
  })
  .meta({ title: 'PatchDeviceCompliance', description: 'One device’s patch compliance' });

export const PatchComplianceSchema = z
  .object({
    summary: ComplianceSummarySchema,
    devices: z.array(DeviceComplianceSchema).describe('each device counted, by hostname'),
  })
  .meta({ title: 'PatchCompliance', description: 'How far the devices the caller sees have installed the approved patches' });
export type PatchComplianceView = z.output<typeof PatchComplianceSchema>;

/** Whose devices and which patches: the filters within the caller's organization and sites. */
export interface ComplianceScope extends PatchReportScope {
  orgId: string;
}

/** The caller's organization and sites narrowed by the filters; another organization's (or site's, or device's) id is 404. */
export async function complianceScope(ctx: RequestContext, query: z.output<typeof PatchComplianceQuery>): Promise<ComplianceScope> {
  await authorize(ctx, 'patches:read', query.orgId ? { orgId: query.orgId } : {});
  const orgId = await targetOrgId(ctx, query.orgId);
  if (query.siteId || query.deviceId) {
    await checkTargets(ctx, { orgId, ...(query.siteId && { siteIds: [query.siteId.toLowerCase()] }), ...(query.deviceId && { deviceIds: [query.deviceId.toLowerCase()] }) });
  }
  const { siteId, deviceId, source, severity } = query;
  return { orgId, siteIds: visibleSiteIds(ctx, orgId), siteId: siteId?.toLowerCase(), deviceId: deviceId?.toLowerCase(), source, severity };
}

/** The scope's devices (not decommissioned, by hostname) and each one's compliance. */
export async function scopeCompliance(ctx: RequestContext, scope: ComplianceScope) {
  const siteIds = scope.siteId ? [scope.siteId] : (scope.siteIds ?? undefined);
  const devices = await findDevices(
    ctx,
    { target: { orgId: scope.orgId, ...(siteIds && { siteIds }) }, ...(scope.deviceId && { ids: [scope.deviceId] }), active: true },
    { fields: ['hostname', 'siteId'] },
  );
  const compliance = await deviceCompliance(
    ctx.em,
    devices.map((d) => d.id),
    { source: scope.source, severity: scope.severity },
  );
  return devices.map((device) => ({ device, compliance: compliance.get(device.id)! }));
}

export type ScopeCompliance = Awaited<ReturnType<typeof scopeCompliance>>;

/** The figures over several devices' compliance. */
export function summarize(rows: ScopeCompliance, now: Date): z.output<typeof ComplianceSummarySchema> {
  let installed = 0;
  let missing = 0;
  let total = 0;
  let criticalMissing = 0;
  let oldest: Date | null = null;
  for (const { compliance: c } of rows) {
    installed += c.installed;
    missing += c.missing;
    total += c.installed + c.missing + c.failed + c.pendingReboot;
    criticalMissing += c.criticalMissing;
    if (c.oldestMissingSince && (!oldest || c.oldestMissingSince < oldest)) oldest = c.oldestMissingSince;
  }
  return {
    devices: rows.length,
    compliantDevices: rows.filter((r) => r.compliance.missing + r.compliance.failed + r.compliance.pendingReboot === 0).length,
    installed,
    missing,
    compliancePercent: percentOf(installed, total),
    criticalMissing,
    oldestMissingDays: oldest ? Math.max(0, Math.floor((now.getTime() - oldest.getTime()) / DAY_MS)) : null,
  };
}

export function complianceView(rows: ScopeCompliance, now: Date): PatchComplianceView {
  return {
    summary: summarize(rows, now),
    devices: rows.map(({ device, compliance }) => ({ deviceId: device.id, hostname: device.hostname, compliancePercent: compliance.compliancePercent, criticalMissing: compliance.criticalMissing })),
  };
}

/** The compliance of the devices the caller sees, over the approved patches the filters keep. */
export async function getPatchCompliance(ctx: RequestContext, raw: PatchComplianceInput = {}): Promise<PatchComplianceView> {
  const scope = await complianceScope(ctx, parseInput(PatchComplianceQuery, raw));
  return complianceView(await scopeCompliance(ctx, scope), ctx.runtime.clock.now());
}
