import { z } from 'zod';
import type { RequestContext } from '../auth/context.js';
import { authorize, canAccessOrg, skipAuthorization } from '../auth/policy.js';
import { DOMAIN_EVENT_TOPIC } from '../events/dispatcher.js';
import { filterIterable } from '../events/subscriptions.js';
import type { DomainEvent } from '../events/types.js';

export const ServiceInfoSchema = z.object({ status: z.string(), version: z.string() }).meta({ title: 'ServiceInfo' });
export type ServiceInfo = z.output<typeof ServiceInfoSchema>;

export const DomainEventSchema = z
  .object({ id: z.string(), type: z.string(), orgId: z.string().nullable(), timestamp: z.string(), data: z.record(z.string(), z.unknown()) })
  .meta({ title: 'DomainEvent' });

/** Liveness and version, for anyone (GraphQL `serviceInfo`, as REST `GET /health`). */
export function serviceInfo(ctx: RequestContext): ServiceInfo {
  skipAuthorization(ctx, 'public service information');
  return { status: 'ok', version: ctx.runtime.config.serviceVersion };
}

/**
 * Live committed domain events for the dashboard, limited to organizations the caller can see
 * (system-wide events, without an organization, reach system callers only).
 */
export async function subscribeDomainEvents(ctx: RequestContext, types: string[] | null): Promise<AsyncIterable<DomainEvent>> {
  const principal = await authorize(ctx, 'organizations:read');
  return filterIterable<DomainEvent>(ctx.runtime.pubsub.subscribe(DOMAIN_EVENT_TOPIC), async (event) => {
    if (types && types.length > 0 && !types.includes(event.type)) return false;
    if (!event.orgId) return principal.scope === 'system';
    return canAccessOrg(ctx, event.orgId);
  });
}
