import { Migration } from '@mikro-orm/migrations';

export class Migration20261127180123_alerts extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "alert_template" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "name" varchar(255) not null, "description" text null, "conditions" jsonb not null, "severity" varchar(10) not null, constraint "alert_template_pkey" primary key ("id"));`);
    this.addSql(`alter table "alert_template" add constraint "alert_template_org_id_name_unique" unique ("org_id", "name");`);

    this.addSql(`create table "alert_rule" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "name" varchar(255) not null, "template_id" uuid null, "target_type" varchar(20) not null, "target_id" uuid not null, "conditions" jsonb not null, "severity" varchar(10) not null, "cooldown_minutes" int not null default 0, "auto_resolve" boolean not null default true, "enabled" boolean not null default true, "created_by" uuid null, constraint "alert_rule_pkey" primary key ("id"));`);
    this.addSql(`create index "alert_rule_org_id_created_at_id_index" on "alert_rule" ("org_id", "created_at", "id");`);

    this.addSql(`create table "alert_condition_state" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "rule_id" uuid not null, "device_id" uuid not null, "since" timestamptz not null, "due_at" timestamptz not null, constraint "alert_condition_state_pkey" primary key ("id"));`);
    this.addSql(`create index "alert_condition_state_device_id_index" on "alert_condition_state" ("device_id");`);
    this.addSql(`alter table "alert_condition_state" add constraint "alert_condition_state_rule_id_device_id_unique" unique ("rule_id", "device_id");`);

    this.addSql(`create table "alert_correlation_group" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "site_id" uuid null, "key" varchar(100) not null, "severity" varchar(10) not null, "alert_count" int not null default 0, "first_alert_at" timestamptz not null, "last_alert_at" timestamptz not null, constraint "alert_correlation_group_pkey" primary key ("id"));`);
    this.addSql(`create index "alert_correlation_group_org_id_last_alert_at_id_index" on "alert_correlation_group" ("org_id", "last_alert_at", "id");`);
    this.addSql(`create index "alert_correlation_group_org_id_key_last_alert_at_index" on "alert_correlation_group" ("org_id", "key", "last_alert_at");`);

    this.addSql(`create table "alert" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "site_id" uuid null, "device_id" uuid not null, "rule_id" uuid null, "severity" varchar(10) not null, "status" varchar(20) not null default 'active', "title" varchar(255) not null, "message" text null, "triggered_at" timestamptz not null, "acknowledged_at" timestamptz null, "acknowledged_by" uuid null, "resolved_at" timestamptz null, "resolved_by" uuid null, "resolution_note" text null, "suppressed_until" timestamptz null, "correlation_group_id" uuid null, constraint "alert_pkey" primary key ("id"));`);
    this.addSql(`create index "alert_site_id_index" on "alert" ("site_id");`);
    this.addSql(`create index "alert_device_id_index" on "alert" ("device_id");`);
    this.addSql(`create index "alert_correlation_group_id_index" on "alert" ("correlation_group_id");`);
    this.addSql(`create index "alert_rule_id_device_id_resolved_at_index" on "alert" ("rule_id", "device_id", "resolved_at");`);
    this.addSql(`create index "alert_org_id_status_index" on "alert" ("org_id", "status");`);
    this.addSql(`create index "alert_org_id_triggered_at_id_index" on "alert" ("org_id", "triggered_at", "id");`);
    this.addSql(`create unique index "alert_open_rule_device_unique" on "alert" ("rule_id", "device_id") where "status" <> 'resolved';`);

    this.addSql(`alter table "alert_template" add constraint "alert_template_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "alert_rule" add constraint "alert_rule_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "alert_condition_state" add constraint "alert_condition_state_rule_id_foreign" foreign key ("rule_id") references "alert_rule" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "alert_condition_state" add constraint "alert_condition_state_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "alert_correlation_group" add constraint "alert_correlation_group_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "alert_correlation_group" add constraint "alert_correlation_group_site_id_foreign" foreign key ("site_id") references "site" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "alert" add constraint "alert_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "alert" add constraint "alert_site_id_foreign" foreign key ("site_id") references "site" ("id") on update cascade on delete set null;`);
    this.addSql(`alter table "alert" add constraint "alert_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "alert" add constraint "alert_rule_id_foreign" foreign key ("rule_id") references "alert_rule" ("id") on update cascade on delete set null;`);
    this.addSql(`alter table "alert" add constraint "alert_correlation_group_id_foreign" foreign key ("correlation_group_id") references "alert_correlation_group" ("id") on update cascade on delete set null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "alert_condition_state" drop constraint "alert_condition_state_rule_id_foreign";`);

    this.addSql(`alter table "alert" drop constraint "alert_rule_id_foreign";`);

    this.addSql(`alter table "alert" drop constraint "alert_correlation_group_id_foreign";`);

    this.addSql(`drop table if exists "alert_template" cascade;`);

    this.addSql(`drop table if exists "alert_rule" cascade;`);

    this.addSql(`drop table if exists "alert_condition_state" cascade;`);

    this.addSql(`drop table if exists "alert_correlation_group" cascade;`);

    this.addSql(`drop table if exists "alert" cascade;`);
  }

}
