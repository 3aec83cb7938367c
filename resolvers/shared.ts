import { ClassType, Field, Int, ObjectType } from 'type-graphql';
import { z } from 'zod';
import { objectType } from '../src/graphql/contract.js';
import type { RequestContext } from '../src/auth/context.js';
import { PaginationSchema, encodeCursor, pageConnection, pageInfoOf, type Connection, type ConnectionPageInput, type CursorConnectionInput, type CursorPage, type Page, type PagedConnection } from '../src/pagination.js';

// Every GraphQL list is a Relay connection: cursor lists answer a service's `Connection<T>`, page/limit lists are read through `paged`.

// Plain data types: their fields resolve without the per-field middleware (they never reach for the request context).
@ObjectType({ simpleResolvers: true, description: 'Where a page of a connection sits in the whole list.' })
export class PageInfo {
  @Field(() => Boolean, { description: 'Whether items follow this page: pass `endCursor` as `after` to read them.' })
  hasNextPage!: boolean;

  @Field(() => Boolean, { description: 'Whether items come before this page (the page was read with `after`).' })
  hasPreviousPage!: boolean;

  @Field(() => String, { nullable: true, description: "The first edge's cursor; null when the page is empty." })
  startCursor!: string | null;

  @Field(() => String, { nullable: true, description: "The last edge's cursor, the `after` of the next page; null when the page is empty." })
  endCursor!: string | null;
}

const connections = new Map<string, ClassType>();

/**
 * Relay-style `XConnection { edges { node cursor } pageInfo totalCount }`, answered by a service's
 * `Connection<T>` (src/pagination.ts). `totalCount` is a number, or a function that counts: it runs
 * only when the field is selected, so a page costs no count unless asked. A page/limit list's
 * connection (`paged`) also keeps the page's `data` and `pagination`, deprecated.
 */
function ConnectionOf<T extends object>(item: ClassType<T>, name: string, what: string, legacyPage: boolean): ClassType<Connection<T>> {
  const known = connections.get(name);
  if (known) return known as ClassType<Connection<T>>;

  @ObjectType(`${name}Edge`, { simpleResolvers: true, description: `One of ${what}, with the cursor that continues the list after it.` })
  class Edge {
    @Field(() => item, { description: 'The item.' })
    node!: T;

    @Field(() => String, { description: 'Opaque position of this item: pass it as `after` to read the items that follow.' })
    cursor!: string;
  }

  @ObjectType(`${name}Connection`, { simpleResolvers: true, description: `A page of ${what} (Relay connection: read further with \`first\` and \`after: pageInfo.endCursor\`).` })
  class ConnectionType {
    @Field(() => [Edge], { description: 'The items of this page, in the list’s order.' })
    edges!: Edge[];

    @Field(() => PageInfo, { description: 'Cursors of this page and whether more items follow.' })
    pageInfo!: PageInfo;

    // A method field: type-graphql answers the service's own `totalCount` (a number, or a function it calls).
    @Field(() => Int, { description: 'How many items the arguments select, across all pages.' })
    totalCount(): number {
      throw new Error(`${name}Connection answered without totalCount`);
    }
  }
  if (legacyPage) {
    Field(() => [item], { description: 'The items of this page (as `edges.node`).', deprecationReason: 'Use edges.' })(ConnectionType.prototype, 'data');
    Field(() => objectType('Pagination', PaginationSchema), { description: 'The page as page/limit numbers.', deprecationReason: 'Use pageInfo and totalCount.' })(
      ConnectionType.prototype,
      'pagination',
    );
  }
  connections.set(name, ConnectionType);
  return ConnectionType as unknown as ClassType<Connection<T>>;
}

function itemType(view: z.ZodType): { type: ClassType; title: string } {
  const title = (z.globalRegistry.get(view) as { title?: string } | undefined)?.title;
  if (!title || !(view instanceof z.ZodObject)) throw new Error('a connection item must be a view schema with meta({ title })');
  return { type: objectType(title, view), title };
}

/** `WebhookDelivery` → `webhook deliveries`: how descriptions name a connection's items. */
const plural = (title: string) =>
  title
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .replace(/([^aeiou])y$/, '$1ie')
    .replace(/([^s])$/, '$1s');

/** The connection of a view schema, named after its `meta({ title })`: `DeviceConnection`, `DeviceEdge`. */
export function connectionOf<S extends z.ZodObject>(view: S): ClassType<Connection<z.output<S>>> {
  const { type, title } = itemType(view);
  return ConnectionOf(type as ClassType<z.output<S> & object>, title, plural(title), false) as ClassType<Connection<z.output<S>>>;
}

/**
 * The connection of a page/limit list (`pageSchema(view, 'XPage')`): `XConnection`, or `nameConnection`
 * where the item's connection already exists with another shape.
 */
export function pageConnectionOf<S extends z.ZodObject<{ data: z.ZodArray<z.ZodObject> }>>(page: S, name?: string): ClassType<PagedConnection<z.output<S>['data'][number]>> {
  const { type, title } = itemType(page.shape.data.element);
  return ConnectionOf(type, name ?? title, plural(title), true) as ClassType<PagedConnection<z.output<S>['data'][number]>>;
}

/**
 * A page/limit list's service as a connection's: its last argument takes `first`/`after` (or the
 * deprecated `page`/`limit`) beside its filters, and the pages it answers become edges.
 */
export function paged<A extends unknown[], Q extends object, T>(
  service: (ctx: RequestContext, ...rest: [...A, Q]) => Promise<Page<T>>,
): (ctx: RequestContext, ...rest: [...A, Omit<Q, 'page' | 'limit'> & ConnectionPageInput]) => Promise<PagedConnection<T>> {
  return (ctx, ...rest) => {
    const before = rest.slice(0, -1) as A;
    const { first, after, page, limit, ...filters } = rest.at(-1) as ConnectionPageInput & Record<string, unknown>;
    return pageConnection({ first, after, page, limit }, (pageInput) => service(ctx, ...before, { ...filters, ...pageInput } as unknown as Q));
  };
}

/**
 * A cursor list's service (`{data, nextCursor}`) as a connection's: `first`/`after` become its
 * `limit`/`cursor`, each item's cursor is its position in the list's order (`sortValue` of the view,
 * the value the service's keyset sorts on, then its id), and `totalCount` runs `count` with the same
 * filters only when selected.
 */
export function cursored<Q extends object, T extends { id: string }>(
  service: (ctx: RequestContext, query: Q) => Promise<CursorPage<T>>,
  sortValue: (item: T) => string | number,
  count: (ctx: RequestContext, filters: Omit<Q, 'cursor' | 'limit'>) => Promise<number>,
): (ctx: RequestContext, args: Omit<Q, 'cursor' | 'limit'> & CursorConnectionInput) => Promise<Connection<T>> {
  return async (ctx, args) => {
    const { first, after, ...filters } = args;
    const page = await service(ctx, { ...filters, cursor: after, limit: first } as unknown as Q);
    const edges = page.data.map((node) => ({ node, cursor: encodeCursor({ value: sortValue(node), id: node.id }) }));
    return { edges, pageInfo: pageInfoOf(edges, page.nextCursor !== null, after != null), totalCount: () => count(ctx, filters as unknown as Omit<Q, 'cursor' | 'limit'>) };
  };
}
