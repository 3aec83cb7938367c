import { Alert, type AlertSeverity } from '../../entities/alert.js';
import { RequestContext } from '../../src/auth/context.js';
import { withTransaction } from '../../src/db/transaction.js';
import { emit } from '../../src/events/outbox.js';
import type { AlertEventData } from '../../src/events/types.js';
import type { TestApp } from './app.js';

export interface RaisedAlert {
  alertId: string;
  /** the outbox event that announced it (wait for it with `dispatched`) */
  eventId: string;
}

const eventData = (a: Alert): AlertEventData => ({ alertId: a.id, orgId: a.orgId, siteId: a.siteId, deviceId: a.deviceId, ruleId: a.ruleId, severity: a.severity, status: a.status, title: a.title });

/**
 * An alert as the alert domain raises one: the row and its `alert.triggered` event in one transaction
 * (for the consumers of alert events, independent of how rules evaluate).
 */
export async function raiseAlert(
  app: TestApp,
  fields: { orgId: string; deviceId: string; siteId?: string | null; severity: AlertSeverity; title?: string; message?: string; status?: 'active' | 'suppressed' },
): Promise<RaisedAlert> {
  const runtime = app.server.runtime;
  return withTransaction(RequestContext.system(runtime, 'test: raise an alert'), async (tx) => {
    const alert = tx.em.create(Alert, {
      orgId: fields.orgId,
      deviceId: fields.deviceId,
      siteId: fields.siteId ?? null,
      severity: fields.severity,
      title: fields.title ?? `Disk almost full (${fields.severity})`,
      message: fields.message ?? 'C: has 2% free',
      status: fields.status ?? 'active',
      triggeredAt: runtime.clock.now(),
    });
    await tx.em.flush();
    const event = await emit(tx, { type: 'alert.triggered', orgId: alert.orgId, data: eventData(alert) });
    return { alertId: alert.id, eventId: event.id };
  });
}

/** Acknowledges or resolves an alert as the alert domain does: the row and its event together. */
export async function settleAlert(app: TestApp, alertId: string, how: 'acknowledged' | 'resolved'): Promise<string> {
  const runtime = app.server.runtime;
  return withTransaction(RequestContext.system(runtime, `test: alert ${how}`), async (tx) => {
    const alert = await tx.em.findOneOrFail(Alert, { id: alertId });
    alert.status = how;
    if (how === 'acknowledged') alert.acknowledgedAt = runtime.clock.now();
    else alert.resolvedAt = runtime.clock.now();
    await tx.em.flush();
    return (await emit(tx, { type: how === 'acknowledged' ? 'alert.acknowledged' : 'alert.resolved', orgId: alert.orgId, data: eventData(alert) })).id;
  });
}
