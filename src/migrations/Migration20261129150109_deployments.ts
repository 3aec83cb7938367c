import { Migration } from '@mikro-orm/migrations';

export class Migration20261129150109_deployments extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "rollout" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "name" varchar(255) not null, "type" varchar(20) not null, "payload" jsonb not null, "targets" jsonb not null, "waves" jsonb not null, "success_threshold_percent" int not null, "failure_threshold_percent" int not null, "status" varchar(20) not null default 'draft', "pause_reason" varchar(20) null, "current_wave" int not null default 0, "accepted_failures" int not null default 0, "accepted_wave" int not null default 0, "created_by" uuid null, "started_at" timestamptz null, "completed_at" timestamptz null, constraint "rollout_pkey" primary key ("id"));`);
    this.addSql(`create index "rollout_status_index" on "rollout" ("status");`);
    this.addSql(`create index "rollout_org_id_created_at_id_index" on "rollout" ("org_id", "created_at", "id");`);

    this.addSql(`create table "rollout_device" ("id" uuid not null, "rollout_id" uuid not null, "device_id" uuid not null, "wave" int not null, "position" int not null, "status" varchar(20) not null default 'pending', "command_id" uuid null, "reason" varchar(500) null, "started_at" timestamptz null, "finished_at" timestamptz null, constraint "rollout_device_pkey" primary key ("id"));`);
    this.addSql(`create index "rollout_device_device_id_index" on "rollout_device" ("device_id");`);
    this.addSql(`create index "rollout_device_command_id_index" on "rollout_device" ("command_id");`);
    this.addSql(`create index "rollout_device_rollout_id_position_index" on "rollout_device" ("rollout_id", "position");`);
    this.addSql(`alter table "rollout_device" add constraint "rollout_device_rollout_id_device_id_unique" unique ("rollout_id", "device_id");`);

    this.addSql(`alter table "rollout" add constraint "rollout_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "rollout_device" add constraint "rollout_device_rollout_id_foreign" foreign key ("rollout_id") references "rollout" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "rollout_device" add constraint "rollout_device_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "device" add column "pinned_agent_version" varchar(50) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "rollout_device" drop constraint "rollout_device_rollout_id_foreign";`);

    this.addSql(`drop table if exists "rollout" cascade;`);

    this.addSql(`drop table if exists "rollout_device" cascade;`);

    this.addSql(`alter table "device" drop column "pinned_agent_version";`);
  }

}
