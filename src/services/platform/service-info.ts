import { z } from 'zod';
import type { RequestContext } from '../../auth/context.js';
import { authorize, canAccessOrg, permits, skipAuthorization, visibleSiteIds } from '../../auth/policy.js';
import { DOMAIN_EVENT_TOPIC } from '../../events/dispatcher.js';
import { selectIterable } from '../../events/subscriptions.js';
import type { DomainEvent, DomainEventMap } from '../../events/types.js';
import { enumValues, timestamp, uuid } from '../../validation.js';
import { maySeeAlert, type AlertEventData } from '../alerts/api.js';
import { runEventInSight } from '../automations/api.js';
import { findDevices, maySeeDevice, type DeviceEventData } from '../devices/api.js';
import { maySeeExecution, type ScriptExecutionEventData } from '../scripts/api.js';

export const ServiceInfoSchema = z
  .object({
    status: z
      .enum(['ok'])
      .meta({ title: 'ServiceStatus', description: 'Whether the service answers.' })
      .register(enumValues, { ok: 'The service is up and answering.' })
      .describe('Always ok when the service answers at all.'),
    version: z.string().describe('The running build’s version (SERVICE_VERSION).'),
  })
  .meta({ title: 'ServiceInfo', description: 'Liveness and version of the service (REST `GET /health`).' });
export type ServiceInfo = z.output<typeof ServiceInfoSchema>;

export const DomainEventSchema = z
  .object({
    id: uuid().describe('Unique ID of the event (the same in webhook deliveries’ X-Service-Event-Id).'),
    type: z.string().describe('The event name, e.g. device.online or webhook.delivery_failed (names contain dots, so this is text, not an enum).'),
    orgId: uuid().nullable().describe('The organization it concerns; null for platform-wide events (system callers only).'),
    timestamp: timestamp().describe('When it happened.'),
    data: z.record(z.string(), z.unknown()).describe('The event’s payload, as webhooks deliver it.'),
  })
  .meta({ title: 'DomainEvent', description: 'A committed domain event, as the outbox publishes it.' });

/** Liveness and version, for anyone (GraphQL `serviceInfo`, as REST `GET /health`). */
export function serviceInfo(ctx: RequestContext): ServiceInfo {
  skipAuthorization(ctx, 'public service information');
  return { status: 'ok', version: ctx.runtime.config.serviceVersion };
}

/**
 * Live committed domain events for the dashboard, limited to organizations the caller can see
 * (system-wide events, without an organization, reach system callers only), and each event about a
 * device, alert, script execution, site, enrollment key, automation run or patch to what its domain shows the caller.
 */
export async function subscribeDomainEvents(ctx: RequestContext, types: string[] | null): Promise<AsyncIterable<DomainEvent>> {
  const principal = await authorize(ctx, 'organizations:read');
  return selectIterable<DomainEvent, DomainEvent>(ctx.runtime.pubsub.subscribe(DOMAIN_EVENT_TOPIC), async (event) => {
    if (types && types.length > 0 && !types.includes(event.type)) return null;
    if (!event.orgId) return principal.scope === 'system' ? event : null;
    return (await canAccessOrg(ctx, event.orgId)) ? inSight(ctx, event) : null;
  });
}

/**
 * The event as the caller may see it, decided as its domain's own subscription decides (a caller
 * limited to some sites hears only of their sites' devices, alerts, executions and sites; a run's
 * event names and counts only their devices); null when it may not. Organization-wide events pass.
 */
async function inSight(ctx: RequestContext, event: DomainEvent): Promise<DomainEvent | null> {
  const shown = (visible: boolean) => (visible ? event : null);
  switch (event.type.split('.')[0]) {
    case 'device': {
      if (event.type !== 'device.command_updated') return shown(await maySeeDevice(ctx, event.data as DeviceEventData));
      // A fresh EntityManager per event: the subscription lives long, its rows must not come from a cache.
      const [device] = await findDevices(ctx.withEm(ctx.em.fork()), { ids: [(event.data as DomainEventMap['device.command_updated']).deviceId] }, { scope: 'all', fields: ['orgId', 'siteId'] });
      return shown(!!device && (await maySeeDevice(ctx, device)));
    }
    case 'alert':
      return shown(await maySeeAlert(ctx, event.data as AlertEventData));
    case 'script':
      return shown(await maySeeExecution(ctx, ctx.em.fork(), event.data as ScriptExecutionEventData));
    case 'site': {
      const sites = visibleSiteIds(ctx, event.orgId);
      return shown(!sites || sites.includes((event.data as DomainEventMap['site.updated']).siteId));
    }
    case 'automation':
      return runEventInSight(ctx, event);
    case 'enrollment_key': {
      // As the key list shows keys: to device readers, a site-limited one only its sites' keys.
      const { siteId } = event.data as DomainEventMap['enrollment_key.created'];
      const sites = visibleSiteIds(ctx, event.orgId);
      return shown((await permits(ctx, 'devices:read', { orgId: event.orgId! })) && (!sites || (siteId !== null && sites.includes(siteId))));
    }
    case 'patch':
      // As the patch lists show patches: to the organization's patch readers (patches are organization-wide).
      return shown(await permits(ctx, 'patches:read', { orgId: event.orgId! }));
    default:
      return event;
  }
}
