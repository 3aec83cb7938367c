import type { RequestContext } from '../auth/context.js';
import { requestRows, statement } from '../db/prepared.js';

/*
 * Maintenance windows: periods during which targeted devices show `maintenance`, their alerts are
 * suppressed, and their agent updates and patching deferred, as each window says.
 */

/** Whether device `d` is a target of window `w`: empty targets mean the whole organization. */
const TARGETED = `(w.org_id = d.org_id and (
    (cardinality(w.target_site_ids) = 0 and cardinality(w.target_group_ids) = 0 and cardinality(w.target_device_ids) = 0)
    or d.id = any(w.target_device_ids)
    or d.site_id = any(w.target_site_ids)
    or exists (select 1 from device_group_member m where m.device_id = d.id and m.source is not null and m.group_id = any(w.target_group_ids))))`;

/** The devices among the given ones that an active occurrence of a window with the flag covers. */
const COVERED = (flag: 'suppress_alerts' | 'defer_updates' | 'defer_patching') =>
  statement(`
  select d.id from device d
  where d.id = any(?::uuid[]) and exists (
    select 1 from maintenance_occurrence o join maintenance_window w on w.id = o.window_id
    where o.org_id = d.org_id and o.status = 'active' and w.${flag} and ${TARGETED})`);

const SUPPRESSED = COVERED('suppress_alerts');
const UPDATES_DEFERRED = COVERED('defer_updates');
const PATCHING_DEFERRED = COVERED('defer_patching');

async function covered(ctx: RequestContext, prepared: ReturnType<typeof statement>, deviceIds: string[]): Promise<Set<string>> {
  if (deviceIds.length === 0) return new Set();
  const rows = await requestRows<{ id: string }>(ctx.em, prepared, [deviceIds]);
  return new Set(rows.map((r) => r.id));
}

/**
 * The ids among `deviceIds` under an active occurrence of a window that suppresses alerts (one
 * statement; the alert domain asks it when an alert would fire). Makes no access decision: the caller
 * already acts on these devices.
 */
export function suppressedDeviceIds(ctx: RequestContext, deviceIds: string[]): Promise<Set<string>> {
  return covered(ctx, SUPPRESSED, deviceIds);
}

/** The ids among `deviceIds` whose agent updates an active occurrence defers (no `upgradeTo` in heartbeats). */
export function updatesDeferredDeviceIds(ctx: RequestContext, deviceIds: string[]): Promise<Set<string>> {
  return covered(ctx, UPDATES_DEFERRED, deviceIds);
}

/** The ids among `deviceIds` whose patching an active occurrence defers (for the patch domain). */
export function patchingDeferredDeviceIds(ctx: RequestContext, deviceIds: string[]): Promise<Set<string>> {
  return covered(ctx, PATCHING_DEFERRED, deviceIds);
}
