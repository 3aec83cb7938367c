import type { RequestContext } from '../auth/context.js';
import type { DomainEvent } from './types.js';

/**
 * Who of an organization hears one of a domain's events over the `domainEvents` subscription, decided
 * as the domain's own reads decide (a caller limited to some sites hears of their sites' devices only):
 * the event as the caller may see it, or null. Registered by the owning manifest (`eventSight`) under
 * the first part of its events' names (`device` for `device.online`); events of no registered part
 * reach everyone who sees their organization.
 */
export type EventSight = (ctx: RequestContext, event: DomainEvent) => Promise<DomainEvent | null>;

/** An `EventSight` that shows the event whole when `check` holds. */
export const shownWhen =
  (check: (ctx: RequestContext, event: DomainEvent) => Promise<boolean>): EventSight =>
  async (ctx, event) =>
    (await check(ctx, event)) ? event : null;

let sights = new Map<string, EventSight>();

/** Installs every domain's event sights (at start, from the manifests); a part registered twice stops start-up. */
export function installEventSights(tables: Record<string, EventSight>[]): void {
  sights = new Map();
  for (const [part, sight] of tables.flatMap((table) => Object.entries(table))) {
    if (sights.has(part)) throw new Error(`The events of ${part}.* have two sights`);
    sights.set(part, sight);
  }
}

/** The event as the caller may see it (its organization already decided), by its domain's sight. */
export function eventInSight(ctx: RequestContext, event: DomainEvent): Promise<DomainEvent | null> {
  const sight = sights.get(event.type.split('.')[0]!);
  return sight ? sight(ctx, event) : Promise.resolve(event);
}
