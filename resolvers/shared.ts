import { ClassType, Field, Int, ObjectType } from 'type-graphql';
import { z } from 'zod';
import { objectType } from '../src/graphql/contract.js';
import type { Connection } from '../src/pagination.js';

// Pages are derived from `pageSchema` (src/pagination.ts); cursor lists use this Relay connection.

// Plain data types: their fields resolve without the per-field middleware (they never reach for the request context).
@ObjectType({ simpleResolvers: true })
export class PageInfo {
  @Field(() => Boolean)
  hasNextPage!: boolean;

  @Field(() => String, { nullable: true })
  endCursor!: string | null;
}

const connections = new Map<string, ClassType>();

/**
 * Relay-style `XConnection { edges { node cursor } pageInfo totalCount }` for cursor-paged lists,
 * answered by a service's `Connection<T>` (src/pagination.ts). `totalCount` is a number, or a
 * function that counts: it runs only when the field is selected, so a page costs no count unless asked.
 */
function ConnectionOf<T extends object>(item: ClassType<T>, name: string): ClassType<Connection<T>> {
  const known = connections.get(name);
  if (known) return known as ClassType<Connection<T>>;

  @ObjectType(`${name}Edge`, { simpleResolvers: true })
  class Edge {
    @Field(() => item)
    node!: T;

    @Field(() => String)
    cursor!: string;
  }

  @ObjectType(`${name}Connection`, { simpleResolvers: true })
  class ConnectionType {
    @Field(() => [Edge])
    edges!: Edge[];

    @Field(() => PageInfo)
    pageInfo!: PageInfo;

    // A method field: type-graphql answers the service's own `totalCount` (a number, or a function it calls).
    @Field(() => Int, { description: 'every item the arguments select, across all pages' })
    totalCount(): number {
      throw new Error(`${name}Connection answered without totalCount`);
    }
  }
  connections.set(name, ConnectionType);
  return ConnectionType as unknown as ClassType<Connection<T>>;
}

/** The connection of a view schema, named after its `meta({ title })`: `DeviceConnection`, `DeviceEdge`. */
export function connectionOf<S extends z.ZodObject>(view: S): ClassType<Connection<z.output<S>>> {
  const title = (z.globalRegistry.get(view) as { title?: string } | undefined)?.title;
  if (!title) throw new Error('connectionOf: the view schema needs meta({ title })');
  return ConnectionOf(objectType(title, view) as ClassType<z.output<S> & object>, title) as ClassType<Connection<z.output<S>>>;
}
