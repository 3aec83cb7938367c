import { Migration } from '@mikro-orm/migrations';

export class Migration20261129150247_configuration_policies extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "configuration_policy" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "name" varchar(255) not null, "description" text null, "targets" jsonb null, "rules" jsonb not null, "status" varchar(20) not null default 'inactive', "last_evaluated_at" timestamptz null, constraint "configuration_policy_pkey" primary key ("id"));`);
    this.addSql(`create index "configuration_policy_org_id_created_at_id_index" on "configuration_policy" ("org_id", "created_at", "id");`);

    this.addSql(`create table "configuration_policy_remediation" ("command_id" uuid not null, "policy_id" uuid not null, "device_id" uuid not null, "org_id" uuid not null, "rule_index" int not null, "type" varchar(50) not null, "status" varchar(20) not null default 'queued', "created_at" timestamptz not null, constraint "configuration_policy_remediation_pkey" primary key ("command_id"));`);
    this.addSql(`create index "configuration_policy_remediation_policy_id_device_id_index" on "configuration_policy_remediation" ("policy_id", "device_id");`);

    this.addSql(`create table "configuration_policy_device" ("id" uuid not null, "policy_id" uuid not null, "device_id" uuid not null, "org_id" uuid not null, "applied" boolean not null default false, "status" varchar(20) null, "settled_status" varchar(20) null, "violations" jsonb not null, "evaluation_id" uuid null, "pending_command_id" uuid null, "evaluated_at" timestamptz null, constraint "configuration_policy_device_pkey" primary key ("id"));`);
    this.addSql(`create index "configuration_policy_device_pending_command_id_index" on "configuration_policy_device" ("pending_command_id");`);
    this.addSql(`create index "configuration_policy_device_device_id_index" on "configuration_policy_device" ("device_id");`);
    this.addSql(`alter table "configuration_policy_device" add constraint "configuration_policy_device_policy_id_device_id_unique" unique ("policy_id", "device_id");`);

    this.addSql(`alter table "configuration_policy" add constraint "configuration_policy_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "configuration_policy_remediation" add constraint "configuration_policy_remediation_policy_id_foreign" foreign key ("policy_id") references "configuration_policy" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "configuration_policy_remediation" add constraint "configuration_policy_remediation_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "configuration_policy_remediation" add constraint "configuration_policy_remediation_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "configuration_policy_device" add constraint "configuration_policy_device_policy_id_foreign" foreign key ("policy_id") references "configuration_policy" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "configuration_policy_device" add constraint "configuration_policy_device_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "configuration_policy_device" add constraint "configuration_policy_device_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

  }

  override async down(): Promise<void> {
    this.addSql(`alter table "configuration_policy_remediation" drop constraint "configuration_policy_remediation_policy_id_foreign";`);

    this.addSql(`alter table "configuration_policy_device" drop constraint "configuration_policy_device_policy_id_foreign";`);

    this.addSql(`drop table if exists "configuration_policy" cascade;`);

    this.addSql(`drop table if exists "configuration_policy_remediation" cascade;`);

    this.addSql(`drop table if exists "configuration_policy_device" cascade;`);
  }

}
