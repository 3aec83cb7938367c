import { Migration } from '@mikro-orm/migrations';

export class Migration20261127180608_scripts extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "script" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "name" varchar(255) not null, "description" text null, "language" varchar(20) not null, "content" text not null, "parameters" jsonb not null, "run_as" varchar(20) not null default 'system', "timeout_seconds" int not null default 300, "os_types" jsonb not null, "category" varchar(100) null, "tags" jsonb not null, "version" int not null default 1, "created_by" uuid null, "imported_from" varchar(100) null, constraint "script_pkey" primary key ("id"));`);
    this.addSql(`alter table "script" add constraint "script_org_id_name_unique" unique ("org_id", "name");`);

    this.addSql(`create table "script_category" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "name" varchar(100) not null, "description" text null, constraint "script_category_pkey" primary key ("id"));`);
    this.addSql(`alter table "script_category" add constraint "script_category_org_id_name_unique" unique ("org_id", "name");`);

    this.addSql(`create table "script_tag" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "name" varchar(50) not null, constraint "script_tag_pkey" primary key ("id"));`);
    this.addSql(`alter table "script_tag" add constraint "script_tag_org_id_name_unique" unique ("org_id", "name");`);

    this.addSql(`create table "script_version" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "script_id" uuid not null, "version" int not null, "content" text not null, "note" text null, "created_by" uuid null, constraint "script_version_pkey" primary key ("id"));`);
    this.addSql(`alter table "script_version" add constraint "script_version_script_id_version_unique" unique ("script_id", "version");`);

    this.addSql(`create table "script_execution" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "script_id" uuid not null, "device_id" uuid not null, "command_id" uuid null, "script_version" int not null, "status" varchar(20) not null default 'pending', "parameters" jsonb not null, "timeout_seconds" int not null, "deadline_at" timestamptz not null, "exit_code" int null, "stdout" text null, "stderr" text null, "truncated" boolean not null default false, "started_at" timestamptz null, "completed_at" timestamptz null, "created_by" uuid null, constraint "script_execution_pkey" primary key ("id"));`);
    this.addSql(`create index "script_execution_org_id_index" on "script_execution" ("org_id");`);
    this.addSql(`create index "script_execution_device_id_index" on "script_execution" ("device_id");`);
    this.addSql(`create index "script_execution_command_id_index" on "script_execution" ("command_id");`);
    this.addSql(`create index "script_execution_status_deadline_at_index" on "script_execution" ("status", "deadline_at");`);
    this.addSql(`create index "script_execution_script_id_created_at_id_index" on "script_execution" ("script_id", "created_at", "id");`);

    this.addSql(`alter table "script" add constraint "script_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "script_category" add constraint "script_category_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "script_tag" add constraint "script_tag_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "script_version" add constraint "script_version_script_id_foreign" foreign key ("script_id") references "script" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "script_execution" add constraint "script_execution_script_id_foreign" foreign key ("script_id") references "script" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "script_execution" add constraint "script_execution_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "script_execution" add constraint "script_execution_command_id_foreign" foreign key ("command_id") references "device_command" ("id") on update cascade on delete set null;`);

  }

  override async down(): Promise<void> {
    this.addSql(`alter table "script_version" drop constraint "script_version_script_id_foreign";`);

    this.addSql(`alter table "script_execution" drop constraint "script_execution_script_id_foreign";`);

    this.addSql(`drop table if exists "script" cascade;`);

    this.addSql(`drop table if exists "script_category" cascade;`);

    this.addSql(`drop table if exists "script_tag" cascade;`);

    this.addSql(`drop table if exists "script_version" cascade;`);

    this.addSql(`drop table if exists "script_execution" cascade;`);
  }

}
