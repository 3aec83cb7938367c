import { Migration } from '@mikro-orm/migrations';

export class Migration20261127191000_alert_notifications extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "alert_policy" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "name" varchar(255) not null, "severities" jsonb not null, "channel_ids" jsonb not null, "targets" jsonb null, "notify_user_ids" jsonb not null, "escalation_steps" jsonb not null, "enabled" boolean not null default true, "created_by" uuid null, constraint "alert_policy_pkey" primary key ("id"));`);
    this.addSql(`create index "alert_policy_org_id_created_at_index" on "alert_policy" ("org_id", "created_at");`);

    this.addSql(`create table "alert_escalation" ("id" uuid not null, "org_id" uuid not null, "alert_id" uuid not null, "policy_id" uuid not null, "step" int not null, "due_at" timestamptz not null, "status" varchar(20) not null default 'pending', "settled_at" timestamptz null, "created_at" timestamptz not null, constraint "alert_escalation_pkey" primary key ("id"));`);
    this.addSql(`create index "alert_escalation_alert_id_index" on "alert_escalation" ("alert_id");`);
    this.addSql(`create index "alert_escalation_due_index" on "alert_escalation" ("due_at") where "status" = 'pending';`);
    this.addSql(`alter table "alert_escalation" add constraint "alert_escalation_alert_id_policy_id_step_unique" unique ("alert_id", "policy_id", "step");`);

    this.addSql(`create table "alert_channel" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "name" varchar(255) not null, "type" varchar(20) not null, "config" jsonb not null, "secret" text null, "secret_hint" varchar(255) null, "enabled" boolean not null default true, "last_delivery_status" varchar(20) null, "last_delivery_error" text null, "last_delivery_at" timestamptz null, "created_by" uuid null, constraint "alert_channel_pkey" primary key ("id"));`);
    this.addSql(`create index "alert_channel_org_id_created_at_index" on "alert_channel" ("org_id", "created_at");`);

    this.addSql(`create table "alert_channel_delivery" ("id" uuid not null, "channel_id" uuid not null, "org_id" uuid not null, "kind" varchar(20) not null, "alert_id" uuid null, "policy_id" uuid null, "dedup_key" varchar(200) null, "message" jsonb not null, "status" varchar(20) not null default 'pending', "attempt" int not null default 0, "error" text null, "response_status" int null, "next_attempt_at" timestamptz null, "locked_until" timestamptz null, "delivered_at" timestamptz null, "created_at" timestamptz not null, constraint "alert_channel_delivery_pkey" primary key ("id"));`);
    this.addSql(`create index "alert_channel_delivery_waiting_index" on "alert_channel_delivery" ("next_attempt_at") where "status" in ('pending', 'retrying');`);
    this.addSql(`create index "alert_channel_delivery_channel_id_created_at_index" on "alert_channel_delivery" ("channel_id", "created_at");`);
    this.addSql(`alter table "alert_channel_delivery" add constraint "alert_channel_delivery_channel_id_dedup_key_unique" unique ("channel_id", "dedup_key");`);

    this.addSql(`create table "notification" ("id" uuid not null, "user_id" uuid not null, "org_id" uuid not null, "type" varchar(30) not null, "title" varchar(500) not null, "message" text null, "severity" varchar(20) null, "alert_id" uuid null, "dedup_key" varchar(200) null, "read_at" timestamptz null, "created_at" timestamptz not null, constraint "notification_pkey" primary key ("id"));`);
    this.addSql(`create index "notification_user_id_created_at_id_index" on "notification" ("user_id", "created_at", "id");`);
    this.addSql(`alter table "notification" add constraint "notification_user_id_dedup_key_unique" unique ("user_id", "dedup_key");`);

    this.addSql(`alter table "alert_policy" add constraint "alert_policy_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "alert_escalation" add constraint "alert_escalation_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "alert_escalation" add constraint "alert_escalation_policy_id_foreign" foreign key ("policy_id") references "alert_policy" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "alert_channel" add constraint "alert_channel_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "alert_channel_delivery" add constraint "alert_channel_delivery_channel_id_foreign" foreign key ("channel_id") references "alert_channel" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "alert_channel_delivery" add constraint "alert_channel_delivery_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "notification" add constraint "notification_user_id_foreign" foreign key ("user_id") references "user" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "notification" add constraint "notification_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

  }

  override async down(): Promise<void> {
    this.addSql(`alter table "alert_escalation" drop constraint "alert_escalation_policy_id_foreign";`);

    this.addSql(`alter table "alert_channel_delivery" drop constraint "alert_channel_delivery_channel_id_foreign";`);


    this.addSql(`drop table if exists "alert_policy" cascade;`);

    this.addSql(`drop table if exists "alert_escalation" cascade;`);

    this.addSql(`drop table if exists "alert_channel" cascade;`);

    this.addSql(`drop table if exists "alert_channel_delivery" cascade;`);

    this.addSql(`drop table if exists "notification" cascade;`);
  }

}
