import { Migration } from '@mikro-orm/migrations';

export class Migration20261124111000_rate_limits extends Migration {

  override async up(): Promise<void> {
    // rate-limiter-flexible's PostgreSQL store (src/http/rate-limit.ts), in the shape it would create itself:
    // counters shared by every instance, not an entity. `expire` is epoch milliseconds.
    this.addSql(`create table "rate_limit" ("key" varchar(255) not null, "points" int not null default 0, "expire" bigint null, constraint "rate_limit_pkey" primary key ("key"));`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "rate_limit" cascade;`);
  }

}
