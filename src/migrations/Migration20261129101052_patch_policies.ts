import { Migration } from '@mikro-orm/migrations';

export class Migration20261129101052_patch_policies extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "patch_policy" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "name" varchar(255) not null, "enabled" boolean not null default true, "targets" jsonb null, "auto_approve" jsonb not null, "schedule" jsonb not null, "reboot_behavior" varchar(20) not null, constraint "patch_policy_pkey" primary key ("id"));`);
    this.addSql(`create index "patch_policy_org_id_created_at_id_index" on "patch_policy" ("org_id", "created_at", "id");`);
    this.addSql(`alter table "patch_policy" add constraint "patch_policy_org_id_name_unique" unique ("org_id", "name");`);

    this.addSql(`alter table "patch_policy" add constraint "patch_policy_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "patch_policy" cascade;`);
  }

}
