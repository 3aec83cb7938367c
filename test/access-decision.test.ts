import 'reflect-metadata';
import { graphql } from 'graphql';
import { buildSchema, Ctx, Field, FieldResolver, ObjectType, Query, Resolver, Root } from 'type-graphql';
import { Site } from '../entities/site.js';
import { RequestContext, systemPrincipal } from '../src/auth/context.js';
import { authenticated, authorize, skipAuthorization } from '../src/auth/policy.js';
import { withTransaction } from '../src/db/transaction.js';
import type { GraphqlContext } from '../src/graphql/context.js';
import { requireAccessDecision } from '../src/graphql/schema.js';
import { createTestApp, type TestApp } from './support/app.js';
import { sql } from './support/db.js';
import { buildOrg } from './support/factories.js';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

describe('the access-decision backstop', () => {
  test('a transaction whose caller made no access decision rolls back instead of committing', async () => {
    const org = await buildOrg(app);
    const write = (tx: RequestContext) => {
      tx.em.create(Site, { orgId: org.id, name: 'Unchecked', timezone: 'UTC', address: null });
      return tx.em.flush();
    };
    const careless = RequestContext.create(app.server.runtime, systemPrincipal());
    await expect(withTransaction(careless, write)).rejects.toThrow('transaction about to commit without an access decision');
    expect(await sql(app, 'select id from site where org_id = ?', [org.id])).toEqual([]);

    const decided = RequestContext.create(app.server.runtime, systemPrincipal());
    await authorize(decided, 'sites:write', { orgId: org.id, resource: 'Site' });
    await withTransaction(decided, write);
    expect(await sql(app, 'select name from site where org_id = ?', [org.id])).toEqual([{ name: 'Unchecked' }]);
  });

  test('every GraphQL field that reaches for the context makes its own decision; the root field\'s does not cover its field resolvers', async () => {
    @ObjectType('BackstopThing')
    class Thing {
      @Field(() => String)
      id!: string;
    }

    @Resolver(() => Thing)
    class ThingResolver {
      @Query(() => Thing)
      async thing(@Ctx() { ctx }: GraphqlContext): Promise<Thing> {
        await authorize(ctx, 'sites:read');
        return { id: 'one' };
      }

      @Query(() => Boolean)
      careless(@Ctx() { ctx }: GraphqlContext): boolean {
        return ctx.principal !== null;
      }

      @FieldResolver(() => String)
      decided(@Ctx() { ctx }: GraphqlContext, @Root() thing: Thing): string {
        authenticated(ctx);
        return thing.id;
      }

      @FieldResolver(() => String)
      forgetful(@Ctx() { ctx }: GraphqlContext, @Root() thing: Thing): string {
        return `${ctx.meta.requestId}:${thing.id}`;
      }
    }

    const schema = await buildSchema({ resolvers: [ThingResolver], globalMiddlewares: [requireAccessDecision], validate: false });
    const run = (source: string) => {
      const ctx = RequestContext.create(app.server.runtime, systemPrincipal());
      // A decision made for the request as a whole does not count for any one field.
      skipAuthorization(ctx, 'request-wide');
      return graphql({ schema, source, contextValue: { ctx } satisfies GraphqlContext });
    };

    expect(await run('{ thing { id decided } }')).toEqual({ data: { thing: { id: 'one', decided: 'one' } } });
    const forgot = await run('{ thing { id forgetful } }');
    expect(forgot.errors?.map((e) => [e.path, e.message])).toEqual([
      [['thing', 'forgetful'], 'BackstopThing.forgetful answered without an access decision (authorize or skipAuthorization)'],
    ]);
    const root = await run('{ careless }');
    expect(root.errors?.map((e) => e.message)).toEqual(['Query.careless answered without an access decision (authorize or skipAuthorization)']);
  });
});
