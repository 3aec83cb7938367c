import { ClassType, Field, Int, ObjectType } from 'type-graphql';

// Pages are derived from `pageSchema` (src/pagination.ts); cursor lists use this Relay connection.

@ObjectType()
export class PageInfo {
  @Field(() => Boolean)
  hasNextPage!: boolean;

  @Field(() => String, { nullable: true })
  endCursor!: string | null;
}

/** Relay-style `XConnection { edges { node cursor } pageInfo totalCount }` for cursor-paged lists. */
export function ConnectionOf<T extends object>(item: ClassType<T>, name: string) {
  @ObjectType(`${name}Edge`)
  class Edge {
    @Field(() => item)
    node!: T;

    @Field(() => String)
    cursor!: string;
  }

  @ObjectType(`${name}Connection`)
  class Connection {
    @Field(() => [Edge])
    edges!: Edge[];

    @Field(() => PageInfo)
    pageInfo!: PageInfo;

    @Field(() => Int)
    totalCount!: number;
  }
  return Connection;
}
