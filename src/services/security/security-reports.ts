import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Device } from '../../../entities/device.js';
import { DeviceSecurityState } from '../../../entities/security.js';
import type { RequestContext } from '../../auth/context.js';
import { inventoryPart } from '../devices/api.js';
import { boundedJson } from '../shared/json.js';
import { optionalText, requiredText as text } from '../shared/text.js';
import { recomputeDeviceScores } from './security-scores.js';
import { autoQuarantine, ThreatSeveritySchema } from './threats.js';

/*
 * The inventory's `security` part: a device's protections (antivirus, firewall, disk encryption,
 * password policy, local administrators) replace what its last report said, and the threats its
 * antivirus names are added to the device's threats (a threat already known keeps what was done about it).
 */

const MAX_THREATS = 1_000;
const MAX_ADMINS = 500;

export const ReportedThreatSchema = z.object({
  externalId: text(200),
  name: text(500),
  severity: ThreatSeveritySchema,
  path: optionalText(2000),
});

/** The threats a report or a scan names, at most this many. */
export const ReportedThreatsSchema = z.array(ReportedThreatSchema).max(MAX_THREATS);

export const SecurityReportSchema = z.object({
  antivirus: z.object({ product: text(200), enabled: z.boolean(), upToDate: z.boolean() }).nullish(),
  firewall: z.object({ enabled: z.boolean() }).nullish(),
  encryption: z.object({ enabled: z.boolean() }).nullish(),
  passwordPolicy: z.object({ minLength: z.number().int().min(0).max(1024), complexity: z.boolean() }).nullish(),
  localAdmins: z.array(text(200)).max(MAX_ADMINS).nullish(),
  threats: ReportedThreatsSchema.nullish(),
});
export type SecurityReport = z.output<typeof SecurityReportSchema>;
type ReportedThreat = z.output<typeof ReportedThreatSchema>;

/*
 * A threat reported again keeps what was done about it, except one that was removed or whose action
 * failed: it is back (or still there), detected again as of now. A restored one stays restored (the
 * user released it as a false positive), a quarantined one quarantined (antiviruses list their quarantine).
 */
const UPSERT_THREATS = `insert into security_threat (id, org_id, device_id, external_id, name, severity, path, status, detected_at, updated_at)
    select gen_random_uuid(), ?, ?, t.external_id, t.name, t.severity, t.path, 'detected', ?, ?
      from jsonb_to_recordset(?::jsonb) as t(external_id text, name text, severity text, path text)
  on conflict (device_id, external_id) do update set name = excluded.name, severity = excluded.severity, path = excluded.path,
    status = case when security_threat.status in ('removed', 'failed') then 'detected' else security_threat.status end,
    detected_at = case when security_threat.status in ('removed', 'failed') then excluded.detected_at else security_threat.detected_at end,
    updated_at = case when security_threat.status in ('removed', 'failed') then excluded.updated_at else security_threat.updated_at end
  returning id, status`;

/** Adds the threats an agent named (a report's or a scan's) to the device's; answers how many distinct ones it named. */
export async function upsertThreats(tx: RequestContext, device: Pick<Device, 'id' | 'orgId'>, reported: readonly ReportedThreat[]): Promise<number> {
  // A threat named twice keeps its last entry.
  const threats = [...new Map(reported.map((t) => [t.externalId, t])).values()];
  if (threats.length > 0) {
    const now = tx.runtime.clock.now();
    const rows = threats.map((t) => ({ external_id: t.externalId, name: t.name, severity: t.severity, path: t.path }));
    const written = (await tx.em.execute(UPSERT_THREATS, [device.orgId, device.id, now, now, JSON.stringify(rows)])) as { id: string; status: string }[];
    await autoQuarantine(tx, device, written.filter((row) => row.status === 'detected').map((row) => row.id));
  }
  return threats.length;
}

async function ingestSecurity(tx: RequestContext, device: Device, report: SecurityReport): Promise<void> {
  const now = tx.runtime.clock.now();
  const state = {
    orgId: device.orgId,
    antivirus: report.antivirus ?? null,
    firewallEnabled: report.firewall?.enabled ?? null,
    encryptionEnabled: report.encryption?.enabled ?? null,
    passwordPolicy: report.passwordPolicy ?? null,
    localAdmins: report.localAdmins ?? [],
    reportedAt: now,
  };
  // A plain object's upsert gets no generated id: a new row takes this one, a known row keeps its own.
  await tx.em.upsert(DeviceSecurityState, { id: randomUUID(), deviceId: device.id, ...state }, { onConflictFields: ['deviceId'], onConflictAction: 'merge', onConflictMergeFields: Object.keys(state) as never });
  await upsertThreats(tx, device, report.threats ?? []);
  await recomputeDeviceScores(tx, [device.id]);
}

export const securityReport = inventoryPart({ schema: boundedJson(SecurityReportSchema), ingest: ingestSecurity });

/**
 * Whether each device's disk is encrypted as its last security report said (null: not reported), for
 * another domain that has decided on the devices (configuration policies' `disk_encryption` rule).
 */
export async function diskEncryption(ctx: RequestContext, deviceIds: readonly string[]): Promise<Map<string, boolean | null>> {
  const rows = deviceIds.length === 0 ? [] : await ctx.em.find(DeviceSecurityState, { deviceId: { $in: [...deviceIds] } }, { fields: ['deviceId', 'encryptionEnabled'], disableIdentityMap: true });
  const found = new Map(rows.map((row) => [row.deviceId, row.encryptionEnabled]));
  return new Map(deviceIds.map((id) => [id, found.get(id) ?? null]));
}
