import { Migration } from '@mikro-orm/migrations';

export class Migration20261129151107_software_deployments extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "software_deployment" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "catalog_id" uuid not null, "version_id" uuid not null, "name" varchar(255) not null, "version" varchar(100) not null, "installers" jsonb not null, "action" varchar(20) not null, "targets" jsonb null, "schedule" jsonb not null, "due_at" timestamptz null, "status" varchar(20) not null default 'scheduled', "created_by" uuid null, "completed_at" timestamptz null, constraint "software_deployment_pkey" primary key ("id"));`);
    this.addSql(`create index "software_deployment_status_index" on "software_deployment" ("status");`);
    this.addSql(`create index "software_deployment_org_id_created_at_id_index" on "software_deployment" ("org_id", "created_at", "id");`);

    this.addSql(`create table "software_deployment_result" ("id" uuid not null, "deployment_id" uuid not null, "device_id" uuid not null, "hostname" varchar(255) not null, "status" varchar(20) not null, "reason" text null, "command_id" uuid null, "exit_code" int null, "error" text null, "updated_at" timestamptz not null, constraint "software_deployment_result_pkey" primary key ("id"));`);
    this.addSql(`create index "software_deployment_result_waiting" on "software_deployment_result" ("deployment_id", "id") where "status" = 'pending' and "command_id" is null;`);
    this.addSql(`create index "software_deployment_result_command_id_index" on "software_deployment_result" ("command_id");`);
    this.addSql(`create index "software_deployment_result_deployment_id_hostname_id_index" on "software_deployment_result" ("deployment_id", "hostname", "id");`);
    this.addSql(`alter table "software_deployment_result" add constraint "software_deployment_result_deployment_id_device_id_unique" unique ("deployment_id", "device_id");`);

    this.addSql(`alter table "software_deployment" add constraint "software_deployment_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "software_deployment_result" add constraint "software_deployment_result_deployment_id_foreign" foreign key ("deployment_id") references "software_deployment" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "software_deployment_result" add constraint "software_deployment_result_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);

  }

  override async down(): Promise<void> {
    this.addSql(`alter table "software_deployment_result" drop constraint "software_deployment_result_deployment_id_foreign";`);

    this.addSql(`drop table if exists "software_deployment" cascade;`);

    this.addSql(`drop table if exists "software_deployment_result" cascade;`);
  }

}
