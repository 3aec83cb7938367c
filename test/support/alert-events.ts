import { Alert, type AlertSeverity } from '../../entities/alert.js';
import { RequestContext } from '../../src/auth/context.js';
import { withTransaction } from '../../src/db/transaction.js';
import { emit } from '../../src/events/outbox.js';
import { alertEventData } from '../../src/services/alerts/alerts.js';
import type { TestApp } from './app.js';

export interface RaisedAlert {
  alertId: string;
  /** the outbox event that announced it (wait for it with `dispatched`) */
  eventId: string;
}

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
    const event = await emit(tx, { type: 'alert.triggered', orgId: alert.orgId, data: alertEventData(alert) });
    return { alertId: alert.id, eventId: event.id };
  });
}
