import { z } from 'zod';
import type { RequestContext } from '../../auth/context.js';
import { authorize, canAccessOrg, skipAuthorization } from '../../auth/policy.js';
import { DOMAIN_EVENT_TOPIC } from '../../events/dispatcher.js';
import { selectIterable } from '../../events/subscriptions.js';
import { eventInSight } from '../../events/sight.js';
import type { DomainEvent } from '../../events/types.js';
import { enumValues, timestamp, uuid } from '../../validation.js';

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
    return (await canAccessOrg(ctx, event.orgId)) ? eventInSight(ctx, event) : null;
  });
}

