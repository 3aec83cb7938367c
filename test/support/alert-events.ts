import { randomUUID } from 'node:crypto';
import type { AlertSeverity } from '../../entities/alert.js';
import { RequestContext } from '../../src/auth/context.js';
import { withTransaction } from '../../src/db/transaction.js';
import { raiseAlert as raise, resolveAlert, type RaiseOutcome } from '../../src/services/alerts/alert-raise.js';
import type { TestApp } from './app.js';
import { sql } from './db.js';

export interface RaisedAlert {
  alertId: string;
  /** the outbox event that announced it (wait for it with `dispatched`); null when it was raised suppressed, which announces nothing */
  eventId: string | null;
  status: string;
}

/**
 * An alert raised as any domain raises one (`raiseAlert`, src/services/alert-raise.ts): deduplicated,
 * suppressed under maintenance, correlated and announced by `alert.triggered`, for the consumers of
 * alerts independently of how rules evaluate. By default a source `test` alert with a key of its own.
 */
export async function raiseAlert(
  app: TestApp,
  fields: { orgId: string; deviceId?: string | null; severity: AlertSeverity; title?: string; message?: string; source?: string; sourceId?: string; dedupKey?: string },
): Promise<RaisedAlert> {
  const outcome: RaiseOutcome = await withTransaction(RequestContext.system(app.server.runtime, 'test: raise an alert'), (tx) =>
    raise(tx, {
      orgId: fields.orgId,
      deviceId: fields.deviceId ?? null,
      source: fields.source ?? 'test',
      sourceId: fields.sourceId ?? randomUUID(),
      severity: fields.severity,
      title: fields.title ?? `Disk almost full (${fields.severity})`,
      message: fields.message ?? 'C: has 2% free',
      dedupKey: fields.dedupKey ?? randomUUID(),
    }),
  );
  if (outcome.outcome !== 'raised' && outcome.outcome !== 'open') throw new Error(`no alert raised: ${outcome.outcome}`);
  const [event] = await sql<{ id: string }>(app, `select id from outbox_event where type = 'alert.triggered' and data->>'alertId' = ?`, [outcome.alert.id]);
  return { alertId: outcome.alert.id, eventId: event?.id ?? null, status: outcome.alert.status };
}

/** The condition behind `dedupKey` cleared, as its source says it (`resolveAlert`): answers the alert it resolved, if one was open. */
export async function resolveRaisedAlert(app: TestApp, key: { orgId: string; source: string; dedupKey: string }): Promise<string | null> {
  const resolved = await withTransaction(RequestContext.system(app.server.runtime, 'test: resolve an alert'), (tx) => resolveAlert(tx, key));
  return resolved?.id ?? null;
}
