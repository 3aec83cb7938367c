import { Migration } from '@mikro-orm/migrations';

export class Migration20261124132937_devices extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "device" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "site_id" uuid null, "agent_id" uuid not null, "hostname" varchar(255) not null, "status" varchar(20) not null default 'pending', "os_type" varchar(20) null, "os_version" varchar(100) null, "architecture" varchar(50) null, "agent_version" varchar(50) null, "machine_id" varchar(255) null, "hardware_info" jsonb null, "metrics" jsonb null, "token_hash" varchar(64) null, "auto_update" boolean not null default true, "watchdog_status" varchar(50) null, "main_agent_silent_since" timestamptz null, "last_seen_at" timestamptz not null, "enrolled_at" timestamptz not null, "status_changed_at" timestamptz not null, "decommissioned_at" timestamptz null, "tags" jsonb not null, "updating_to_version" varchar(50) null, constraint "device_pkey" primary key ("id"));`);
    this.addSql(`create index "device_site_id_index" on "device" ("site_id");`);
    this.addSql(`alter table "device" add constraint "device_agent_id_unique" unique ("agent_id");`);
    this.addSql(`alter table "device" add constraint "device_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "device_status_last_seen_at_index" on "device" ("status", "last_seen_at");`);
    this.addSql(`create index "device_org_id_enrolled_at_id_index" on "device" ("org_id", "enrolled_at", "id");`);
    this.addSql(`create index "device_org_id_last_seen_at_id_index" on "device" ("org_id", "last_seen_at", "id");`);
    this.addSql(`create index "device_org_id_hostname_id_index" on "device" ("org_id", "hostname", "id");`);
    this.addSql(`alter table "device" add constraint "device_org_id_machine_id_unique" unique ("org_id", "machine_id");`);

    this.addSql(`create table "enrollment_key" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "site_id" uuid null, "name" varchar(255) not null, "prefix" varchar(32) not null, "key_hash" varchar(64) not null, "expires_at" timestamptz null, "max_usage" int null, "usage_count" int not null default 0, "last_used_at" timestamptz null, "created_by" uuid null, "device_id" uuid null, constraint "enrollment_key_pkey" primary key ("id"));`);
    this.addSql(`create index "enrollment_key_org_id_index" on "enrollment_key" ("org_id");`);
    this.addSql(`alter table "enrollment_key" add constraint "enrollment_key_prefix_unique" unique ("prefix");`);
    this.addSql(`alter table "enrollment_key" add constraint "enrollment_key_key_hash_unique" unique ("key_hash");`);

    this.addSql(`create table "device_inventory" ("device_id" uuid not null, "hardware" jsonb null, "software" jsonb null, "patches" jsonb null, "network" jsonb null, "updated_at" timestamptz not null, constraint "device_inventory_pkey" primary key ("device_id"));`);

    this.addSql(`create table "device_command" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "device_id" uuid not null, "org_id" uuid not null, "type" varchar(100) not null, "payload" jsonb not null, "status" varchar(20) not null default 'pending', "created_by" uuid null, "sent_at" timestamptz null, "completed_at" timestamptz null, "timeout_at" timestamptz not null, "exit_code" int null, "stdout" text null, "stderr" text null, "result" jsonb null, constraint "device_command_pkey" primary key ("id"));`);
    this.addSql(`create index "device_command_status_timeout_at_index" on "device_command" ("status", "timeout_at");`);
    this.addSql(`create index "device_command_device_id_status_created_at_index" on "device_command" ("device_id", "status", "created_at");`);

    this.addSql(`alter table "device" add constraint "device_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "device" add constraint "device_site_id_foreign" foreign key ("site_id") references "site" ("id") on update cascade on delete set null;`);

    this.addSql(`alter table "enrollment_key" add constraint "enrollment_key_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "enrollment_key" add constraint "enrollment_key_site_id_foreign" foreign key ("site_id") references "site" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "enrollment_key" add constraint "enrollment_key_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "device_inventory" add constraint "device_inventory_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "device_command" add constraint "device_command_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "enrollment_key" drop constraint "enrollment_key_device_id_foreign";`);

    this.addSql(`alter table "device_inventory" drop constraint "device_inventory_device_id_foreign";`);

    this.addSql(`alter table "device_command" drop constraint "device_command_device_id_foreign";`);

    this.addSql(`drop table if exists "device" cascade;`);

    this.addSql(`drop table if exists "enrollment_key" cascade;`);

    this.addSql(`drop table if exists "device_inventory" cascade;`);

    this.addSql(`drop table if exists "device_command" cascade;`);
  }

}
