import { Migration } from '@mikro-orm/migrations';

export class Migration20261124140000_device_groups extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "device_group" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "site_id" uuid null, "name" varchar(255) not null, "description" text null, "type" varchar(20) not null, "filter" jsonb null, "created_by" uuid null, constraint "device_group_pkey" primary key ("id"));`);
    this.addSql(`create index "device_group_site_id_index" on "device_group" ("site_id");`);
    this.addSql(`alter table "device_group" add constraint "device_group_org_id_name_unique" unique ("org_id", "name");`);

    this.addSql(`create table "device_group_member" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "group_id" uuid not null, "device_id" uuid not null, "source" varchar(20) null, "pin" varchar(20) null, "joined_at" timestamptz null, constraint "device_group_member_pkey" primary key ("id"));`);
    this.addSql(`create index "device_group_member_device_id_index" on "device_group_member" ("device_id");`);
    this.addSql(`alter table "device_group_member" add constraint "device_group_member_group_id_device_id_unique" unique ("group_id", "device_id");`);

    this.addSql(`create table "device_group_log" ("id" uuid not null, "group_id" uuid not null, "device_id" uuid not null, "hostname" varchar(255) not null, "action" varchar(10) not null, "reason" varchar(30) not null, "actor_id" uuid null, "created_at" timestamptz not null, constraint "device_group_log_pkey" primary key ("id"));`);
    this.addSql(`create index "device_group_log_device_id_index" on "device_group_log" ("device_id");`);
    this.addSql(`create index "device_group_log_group_id_created_at_id_index" on "device_group_log" ("group_id", "created_at", "id");`);

    this.addSql(`alter table "device_group" add constraint "device_group_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "device_group" add constraint "device_group_site_id_foreign" foreign key ("site_id") references "site" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "device_group_member" add constraint "device_group_member_group_id_foreign" foreign key ("group_id") references "device_group" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "device_group_member" add constraint "device_group_member_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "device_group_log" add constraint "device_group_log_group_id_foreign" foreign key ("group_id") references "device_group" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "device_group_log" add constraint "device_group_log_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "device_group_member" drop constraint "device_group_member_group_id_foreign";`);

    this.addSql(`alter table "device_group_log" drop constraint "device_group_log_group_id_foreign";`);

    this.addSql(`drop table if exists "device_group" cascade;`);

    this.addSql(`drop table if exists "device_group_member" cascade;`);

    this.addSql(`drop table if exists "device_group_log" cascade;`);
  }

}
