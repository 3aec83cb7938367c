import { Migration } from '@mikro-orm/migrations';

export class Migration20261127181034_automations extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "automation" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "name" varchar(255) not null, "enabled" boolean not null default true, "trigger" jsonb not null, "trigger_type" varchar(20) not null, "target" jsonb not null, "steps" jsonb not null, "on_failure" varchar(20) not null, "webhook_token" text null, "next_run_at" timestamptz null, "created_by" uuid null, constraint "automation_pkey" primary key ("id"));`);
    this.addSql(`create index "automation_org_id_trigger_type_index" on "automation" ("org_id", "trigger_type");`);
    this.addSql(`create index "automation_next_run_at_index" on "automation" ("next_run_at");`);
    this.addSql(`alter table "automation" add constraint "automation_org_id_name_unique" unique ("org_id", "name");`);

    this.addSql(`create table "automation_run" ("id" uuid not null, "automation_id" uuid not null, "org_id" uuid not null, "source" varchar(20) not null, "event_id" uuid null, "status" varchar(20) not null default 'running', "phase" varchar(20) not null default 'ready', "step_index" int not null default 0, "plan" jsonb not null, "device_ids" jsonb not null, "resume_at" timestamptz null, "started_at" timestamptz not null, "completed_at" timestamptz null, constraint "automation_run_pkey" primary key ("id"));`);
    this.addSql(`create index "automation_run_org_id_index" on "automation_run" ("org_id");`);
    this.addSql(`create index "automation_run_resume_at_index" on "automation_run" ("resume_at");`);
    this.addSql(`create index "automation_run_automation_id_started_at_id_index" on "automation_run" ("automation_id", "started_at", "id");`);
    this.addSql(`alter table "automation_run" add constraint "automation_run_automation_id_event_id_unique" unique ("automation_id", "event_id");`);

    this.addSql(`create table "automation_run_result" ("id" uuid not null, "run_id" uuid not null, "device_id" uuid not null, "step_index" int not null, "status" varchar(20) not null, "execution_id" uuid null, "command_id" uuid null, "error" text null, constraint "automation_run_result_pkey" primary key ("id"));`);
    this.addSql(`create index "automation_run_result_execution_id_index" on "automation_run_result" ("execution_id");`);
    this.addSql(`alter table "automation_run_result" add constraint "automation_run_result_run_id_step_index_device_id_unique" unique ("run_id", "step_index", "device_id");`);

    this.addSql(`alter table "automation" add constraint "automation_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "automation_run" add constraint "automation_run_automation_id_foreign" foreign key ("automation_id") references "automation" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "automation_run_result" add constraint "automation_run_result_run_id_foreign" foreign key ("run_id") references "automation_run" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "automation_run_result" add constraint "automation_run_result_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "automation_run" drop constraint "automation_run_automation_id_foreign";`);

    this.addSql(`alter table "automation_run_result" drop constraint "automation_run_result_run_id_foreign";`);

    this.addSql(`drop table if exists "automation" cascade;`);

    this.addSql(`drop table if exists "automation_run" cascade;`);

    this.addSql(`drop table if exists "automation_run_result" cascade;`);
  }

}
