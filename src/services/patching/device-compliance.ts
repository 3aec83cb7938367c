import type { EntityManager } from '@mikro-orm/postgresql';
import { uuidArray } from '../../db/arrays.js';

/*
 * How far each device has installed what was approved for it: the one computation behind the
 * compliance view and report, and the security score's `patches` factor.
 */

export interface DeviceCompliance {
  installed: number;
  missing: number;
  failed: number;
  pendingReboot: number;
  /** installed ÷ (installed + missing + failed + pendingReboot) × 100, one decimal; 100 when nothing approved applies */
  compliancePercent: number;
  /** approved critical patches the device reports missing */
  criticalMissing: number;
  /** of the approved patches it reports missing, the oldest one's release date (else when the organization first heard of it); null when none */
  oldestMissingSince: Date | null;
}

/** Which approved patches count: only those of this source and/or severity. */
export interface CompliancePatchFilter {
  source?: string;
  severity?: string;
}

/** One decimal; a device with anything left to install never reads 100 (1,999 of 2,000 is 99.9, not a rounded 100). */
export const percentOf = (installed: number, total: number): number => (total === 0 ? 100 : Math.min(Math.round((installed / total) * 1000) / 10, installed < total ? 99.9 : 100));

/** Over the approved patches each device reports, in one statement; a device that reports none is 100 % compliant. */
export async function deviceCompliance(em: EntityManager, deviceIds: readonly string[], only: CompliancePatchFilter = {}): Promise<Map<string, DeviceCompliance>> {
  const rows = (deviceIds.length === 0
    ? []
    : await em.execute(
        `select s.device_id,
            count(*) filter (where s.status = 'installed')::int as installed, count(*) filter (where s.status = 'missing')::int as missing,
            count(*) filter (where s.status = 'failed')::int as failed, count(*) filter (where s.status = 'pending_reboot')::int as pending_reboot,
            count(*) filter (where s.status = 'missing' and p.severity = 'critical')::int as critical_missing,
            min(coalesce(p.release_date::timestamptz, p.created_at)) filter (where s.status = 'missing') as oldest_missing
          from patch_device_status s join patch p on p.id = s.patch_id and p.approval_status = 'approved'
            and (?::text is null or p.source = ?) and (?::text is null or p.severity = ?)
          where s.device_id = any(?::uuid[]) group by s.device_id`,
        [only.source ?? null, only.source ?? null, only.severity ?? null, only.severity ?? null, uuidArray(deviceIds)],
      )) as { device_id: string; installed: number; missing: number; failed: number; pending_reboot: number; critical_missing: number; oldest_missing: Date | string | null }[];
  const byDevice = new Map(rows.map((r) => [r.device_id, r]));
  return new Map(
    deviceIds.map((id) => {
      const r = byDevice.get(id);
      const counts = { installed: r?.installed ?? 0, missing: r?.missing ?? 0, failed: r?.failed ?? 0, pendingReboot: r?.pending_reboot ?? 0 };
      const total = counts.installed + counts.missing + counts.failed + counts.pendingReboot;
      return [id, { ...counts, compliancePercent: percentOf(counts.installed, total), criticalMissing: r?.critical_missing ?? 0, oldestMissingSince: r?.oldest_missing ? new Date(r.oldest_missing) : null }];
    }),
  );
}
