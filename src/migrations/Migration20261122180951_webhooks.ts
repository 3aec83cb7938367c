import { Migration } from '@mikro-orm/migrations';

export class Migration20261122180951_webhooks extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "webhook" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "name" varchar(255) not null, "url" text not null, "secret" text null, "events" jsonb not null, "headers" jsonb not null, "status" varchar(20) not null default 'active', "retry_policy" jsonb null, "success_count" int not null default 0, "failure_count" int not null default 0, "consecutive_failures" int not null default 0, "failing_since" timestamptz null, "last_delivery_at" timestamptz null, "last_success_at" timestamptz null, "created_by" uuid null, constraint "webhook_pkey" primary key ("id"));`);
    this.addSql(`create index "webhook_org_id_status_index" on "webhook" ("org_id", "status");`);

    this.addSql(`create table "webhook_delivery" ("id" uuid not null, "webhook_id" uuid not null, "org_id" uuid not null, "status" varchar(20) not null default 'pending', "event" varchar(100) not null, "event_id" varchar(100) not null, "payload" jsonb not null, "response_status" int null, "response_body" text null, "attempt" int not null default 0, "next_attempt_at" timestamptz null, "response_time_ms" int null, "error_message" text null, "created_at" timestamptz not null, "delivered_at" timestamptz null, "locked_until" timestamptz null, "dead_lettered_at" timestamptz null, "redriven_at" timestamptz null, "retry_of" uuid null, constraint "webhook_delivery_pkey" primary key ("id"));`);
    this.addSql(`create index "webhook_delivery_org_id_dead_lettered_at_index" on "webhook_delivery" ("org_id", "dead_lettered_at");`);
    this.addSql(`create index "webhook_delivery_status_next_attempt_at_index" on "webhook_delivery" ("status", "next_attempt_at");`);
    this.addSql(`create index "webhook_delivery_webhook_id_created_at_index" on "webhook_delivery" ("webhook_id", "created_at");`);
    this.addSql(`create unique index "webhook_delivery_event_unique" on "webhook_delivery" ("webhook_id", "event_id") where "retry_of" is null;`);

    this.addSql(`alter table "webhook" add constraint "webhook_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "webhook_delivery" add constraint "webhook_delivery_webhook_id_foreign" foreign key ("webhook_id") references "webhook" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "webhook_delivery" add constraint "webhook_delivery_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "webhook_delivery" drop constraint "webhook_delivery_webhook_id_foreign";`);

    this.addSql(`drop table if exists "webhook" cascade;`);

    this.addSql(`drop table if exists "webhook_delivery" cascade;`);
  }

}
