import { ArgsType, ClassType, Field, Int, ObjectType } from 'type-graphql';
import { objectType } from '../src/graphql/contract.js';
import { DEFAULT_LIMIT, MAX_LIMIT, PaginationSchema } from '../src/pagination.js';

/** The `pagination` block of page/limit lists, as in REST (`{data, pagination:{page, limit, total}}`). */
export const Pagination = objectType('Pagination', PaginationSchema);

@ArgsType()
export class PageArgs {
  @Field(() => Int, { defaultValue: 1 })
  page!: number;

  @Field(() => Int, { defaultValue: DEFAULT_LIMIT, description: `1 to ${MAX_LIMIT}` })
  limit!: number;
}

/** `XPage { data: [X!]!, pagination: Pagination! }` for a list type, mirroring the REST list body. */
export function PageOf<T extends object>(item: ClassType<T>, name: string) {
  @ObjectType(name)
  class PageType {
    @Field(() => [item])
    data!: T[];

    @Field(() => Pagination)
    pagination!: InstanceType<typeof Pagination>;
  }
  return PageType;
}

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
