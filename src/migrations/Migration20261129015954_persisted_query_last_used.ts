import { Migration } from '@mikro-orm/migrations';

export class Migration20261129015954_persisted_query_last_used extends Migration {

  override async up(): Promise<void> {
    // Registrations past GRAPHQL_PERSISTED_QUERIES_MAX evict the least recently used (not an entity:
    // written by hand, as migration:create diffs entities only).
    this.addSql(`alter table "persisted_query" add column "last_used_at" timestamptz not null default now();`);
    this.addSql(`create index "persisted_query_last_used_at_index" on "persisted_query" ("last_used_at") where not "trusted";`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "persisted_query" drop column "last_used_at";`);
  }

}
