import { Migration } from '@mikro-orm/migrations';

export class Migration20261127170000_persisted_queries extends Migration {

  override async up(): Promise<void> {
    // Apollo's automatic persisted queries (src/graphql/persisted-queries.ts), shared by every instance:
    // a store behind Apollo's cache interface, not an entity.
    this.addSql(`create table "persisted_query" ("key" varchar(100) not null, "query" text not null, "created_at" timestamptz not null default now(), constraint "persisted_query_pkey" primary key ("key"));`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "persisted_query" cascade;`);
  }

}
