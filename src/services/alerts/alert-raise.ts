import { z } from 'zod';
import { Alert, RULE_SOURCE } from '../../../entities/alert.js';
import type { RequestContext } from '../../auth/context.js';
import { emit } from '../../events/outbox.js';
import { parseInput, uuid } from '../../validation.js';
import { findDevices } from '../devices/api.js';
import { AlertSeveritySchema } from './alert-conditions.js';
import { correlate } from './correlation.js';
import { alertChanged, alertEventData, alertView, type AlertView } from './alerts.js';
import { suppressedDeviceIds } from '../maintenance/api.js';

/*
 * The one way any domain raises and resolves alerts (rules, monitors, SNMP thresholds, patches, …), so
 * every alert behaves alike: one open alert per organization, source and dedup key; a cooldown after
 * the last one resolved; `suppressed` (recorded, no notifications) while its device is under a
 * maintenance window that suppresses alerts; correlated into incidents; and announced by the
 * `alert.triggered`/`alert.resolved` events that the alert policies turn into channel messages,
 * notifications and escalations. Both run in the caller's transaction and make no access decision:
 * the caller (a domain acting as the system, on its own rows) has made it.
 */

export { RULE_SOURCE };

/** Lower-case words joined by `_`: the raising domain (`alert_rule`, `monitor`, `snmp`, `patch`, …). */
export const AlertSourceSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_]*$/, 'lower-case letters, digits and _')
  .max(40);

export const RaiseAlertSchema = z.strictObject({
  orgId: uuid(),
  /** the device it is about (its site comes with it); none for an alert about no one device */
  deviceId: uuid().nullable().optional(),
  source: AlertSourceSchema,
  /** the source's row that raised it (the rule, the monitor, …) */
  sourceId: uuid(),
  severity: AlertSeveritySchema,
  title: z.string().min(1).max(255),
  message: z.string().nullable().optional(),
  /** what makes two raises one alert, within the organization and source (a rule: rule and device) */
  dedupKey: z.string().min(1).max(255),
  /** after the last alert of the key resolved, how long another waits (`cooling` until then) */
  cooldownMinutes: z.number().int().min(0).optional(),
  /** a device group the source watches: its alerts make one incident with the group's, rather than their site's */
  groupId: uuid().nullable().optional(),
});
export type RaiseAlertInput = z.input<typeof RaiseAlertSchema>;

export type RaiseOutcome =
  /** a new alert: `active`, or `suppressed` under a maintenance window (then it notifies no one) */
  | { outcome: 'raised'; alert: AlertView }
  /** the key's alert is already open: nothing changed */
  | { outcome: 'open'; alert: AlertView }
  /** within the cooldown after the key's last alert resolved: raise again from `until` */
  | { outcome: 'cooling'; until: Date }
  /** the device is gone or decommissioned: nothing is raised */
  | { outcome: 'ignored' };

export const ResolveRaisedAlertSchema = z.strictObject({
  orgId: uuid(),
  source: AlertSourceSchema,
  dedupKey: z.string().min(1).max(255),
  /** the resolution note (rules: "conditions cleared") */
  note: z.string().max(2000).nullable().optional(),
});
export type ResolveRaisedAlertInput = z.input<typeof ResolveRaisedAlertSchema>;

/** One raise or resolve of a key at a time, on every instance: each decides from the rows as the other left them. */
async function lockKey(tx: RequestContext, orgId: string, source: string, dedupKey: string): Promise<void> {
  await tx.em.execute('select pg_advisory_xact_lock(hashtext(?))', [`alert:${orgId}:${source}:${dedupKey}`]);
}

const openAlert = (tx: RequestContext, orgId: string, source: string, dedupKey: string) => tx.em.findOne(Alert, { orgId, source, dedupKey, status: { $ne: 'resolved' } });

/** Raises the alert of `dedupKey` unless it is open or cooling down (see RaiseOutcome). In the caller's transaction. */
export async function raiseAlert(tx: RequestContext, rawInput: RaiseAlertInput): Promise<RaiseOutcome> {
  const input = parseInput(RaiseAlertSchema, rawInput);
  const { orgId, source, dedupKey } = input;
  const deviceId = input.deviceId ?? null;
  await lockKey(tx, orgId, source, dedupKey);
  const [device] = deviceId ? await findDevices(tx, { ids: [deviceId], active: true }, { scope: 'all' }) : [];
  if (deviceId && device?.orgId !== orgId) return { outcome: 'ignored' };
  const open = await openAlert(tx, orgId, source, dedupKey);
  if (open) return { outcome: 'open', alert: alertView(open) };
  const now = tx.runtime.clock.now();
  const cooldown = input.cooldownMinutes ?? 0;
  if (cooldown > 0) {
    const last = await tx.em.findOne(Alert, { orgId, source, dedupKey, status: 'resolved' }, { orderBy: { resolvedAt: 'desc' } });
    const coolsAt = last?.resolvedAt ? last.resolvedAt.getTime() + cooldown * 60_000 : 0;
    if (coolsAt > now.getTime()) return { outcome: 'cooling', until: new Date(coolsAt) };
  }
  // Maintenance windows cover devices: an alert about no device is never suppressed by one.
  const suppressed = deviceId !== null && (await suppressedDeviceIds(tx, [deviceId])).has(deviceId);
  const alert = tx.em.create(Alert, {
    orgId,
    siteId: device?.siteId ?? null,
    deviceId,
    // Rule alerts keep naming their rule by foreign key (set null when it is deleted).
    ruleId: source === RULE_SOURCE ? input.sourceId : null,
    source,
    sourceId: input.sourceId,
    dedupKey,
    severity: input.severity,
    status: suppressed ? 'suppressed' : 'active',
    title: input.title,
    message: input.message ?? null,
    triggeredAt: now,
  });
  await correlate(tx, alert, input.groupId ?? null);
  await tx.em.flush();
  // A suppressed alert is recorded and shown, but notifies no one.
  if (!suppressed) await emit(tx, { type: 'alert.triggered', orgId, data: alertEventData(alert) });
  await alertChanged(tx, alert);
  return { outcome: 'raised', alert: alertView(alert) };
}

/**
 * The condition behind `dedupKey` cleared: its open alert (active, acknowledged or suppressed) resolves,
 * and the channels that were told of it hear it is over. Answers it, or null when none was open.
 */
export async function resolveAlert(tx: RequestContext, rawInput: ResolveRaisedAlertInput): Promise<AlertView | null> {
  const input = parseInput(ResolveRaisedAlertSchema, rawInput);
  await lockKey(tx, input.orgId, input.source, input.dedupKey);
  const alert = await openAlert(tx, input.orgId, input.source, input.dedupKey);
  if (!alert) return null;
  Object.assign(alert, { status: 'resolved', resolvedAt: tx.runtime.clock.now(), resolutionNote: input.note ?? null });
  await tx.em.flush();
  await emit(tx, { type: 'alert.resolved', orgId: alert.orgId, data: alertEventData(alert) });
  await alertChanged(tx, alert);
  return alertView(alert);
}
