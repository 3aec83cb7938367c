import { Migration } from '@mikro-orm/migrations';

export class Migration20261129120402_patch_jobs extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "patch_job" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "policy_id" uuid null, "status" varchar(20) not null default 'scheduled', "reboot_behavior" varchar(20) not null, "rerun" boolean not null default false, "completed_at" timestamptz null, constraint "patch_job_pkey" primary key ("id"));`);
    this.addSql(`create index "patch_job_org_id_created_at_id_index" on "patch_job" ("org_id", "created_at", "id");`);
    this.addSql(`create unique index "patch_job_one_open_per_policy" on "patch_job" ("policy_id") where "status" in ('scheduled', 'running');`);

    this.addSql(`create table "patch_schedule_fire" ("id" uuid not null, "policy_id" uuid not null, "fired_for" timestamptz not null, constraint "patch_schedule_fire_pkey" primary key ("id"));`);
    this.addSql(`alter table "patch_schedule_fire" add constraint "patch_schedule_fire_policy_id_unique" unique ("policy_id");`);

    this.addSql(`create table "patch_job_device" ("id" uuid not null, "job_id" uuid not null, "device_id" uuid not null, "status" varchar(20) not null, "patch_ids" jsonb not null, "command_id" uuid null, "timeout_at" timestamptz null, "updated_at" timestamptz not null, constraint "patch_job_device_pkey" primary key ("id"));`);
    this.addSql(`create index "patch_job_device_status_index" on "patch_job_device" ("status");`);
    this.addSql(`create index "patch_job_device_command_id_index" on "patch_job_device" ("command_id");`);
    this.addSql(`create index "patch_job_device_device_id_index" on "patch_job_device" ("device_id");`);
    this.addSql(`alter table "patch_job_device" add constraint "patch_job_device_job_id_device_id_unique" unique ("job_id", "device_id");`);

    this.addSql(`alter table "patch_job" add constraint "patch_job_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "patch_job" add constraint "patch_job_policy_id_foreign" foreign key ("policy_id") references "patch_policy" ("id") on update cascade on delete set null;`);

    this.addSql(`alter table "patch_schedule_fire" add constraint "patch_schedule_fire_policy_id_foreign" foreign key ("policy_id") references "patch_policy" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "patch_job_device" add constraint "patch_job_device_job_id_foreign" foreign key ("job_id") references "patch_job" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "patch_job_device" add constraint "patch_job_device_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);

  }

  override async down(): Promise<void> {
    this.addSql(`alter table "patch_job_device" drop constraint "patch_job_device_job_id_foreign";`);

    this.addSql(`drop table if exists "patch_job" cascade;`);

    this.addSql(`drop table if exists "patch_schedule_fire" cascade;`);

    this.addSql(`drop table if exists "patch_job_device" cascade;`);
  }

}
