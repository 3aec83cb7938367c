import { Migration } from '@mikro-orm/migrations';

export class Migration20261129092853_patching extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "patch" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "source" varchar(20) not null, "external_id" varchar(200) not null, "title" varchar(500) not null, "severity" varchar(20) not null default 'unknown', "kb_number" varchar(50) null, "package_name" varchar(300) null, "version" varchar(200) null, "vendor" varchar(200) null, "release_date" date null, "cve_ids" jsonb not null, "cvss_score" double precision null, "enriched_at" timestamptz null, "approval_status" varchar(20) not null default 'pending', "defer_until" timestamptz null, constraint "patch_pkey" primary key ("id"));`);
    this.addSql(`create index "patch_org_id_created_at_id_index" on "patch" ("org_id", "created_at", "id");`);
    this.addSql(`alter table "patch" add constraint "patch_org_id_source_external_id_unique" unique ("org_id", "source", "external_id");`);

    this.addSql(`create table "patch_approval" ("id" uuid not null, "org_id" uuid not null, "patch_id" uuid not null, "status" varchar(20) not null, "decided_by" uuid null, "policy_id" uuid null, "defer_until" timestamptz null, "note" varchar(1000) null, "decided_at" timestamptz not null, constraint "patch_approval_pkey" primary key ("id"));`);
    this.addSql(`create index "patch_approval_patch_id_index" on "patch_approval" ("patch_id");`);
    this.addSql(`create index "patch_approval_org_id_decided_at_id_index" on "patch_approval" ("org_id", "decided_at", "id");`);

    this.addSql(`create table "patch_device_status" ("id" uuid not null, "patch_id" uuid not null, "device_id" uuid not null, "status" varchar(20) not null, "reported_at" timestamptz not null, constraint "patch_device_status_pkey" primary key ("id"));`);
    this.addSql(`create index "patch_device_status_patch_id_status_index" on "patch_device_status" ("patch_id", "status");`);
    this.addSql(`alter table "patch_device_status" add constraint "patch_device_status_device_id_patch_id_unique" unique ("device_id", "patch_id");`);

    this.addSql(`alter table "patch" add constraint "patch_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "patch_approval" add constraint "patch_approval_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "patch_approval" add constraint "patch_approval_patch_id_foreign" foreign key ("patch_id") references "patch" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "patch_device_status" add constraint "patch_device_status_patch_id_foreign" foreign key ("patch_id") references "patch" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "patch_device_status" add constraint "patch_device_status_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);

    // The inventory's patch rows (an id per device, no source) cannot become patches of a source: dropped;
    // each device's next patch report fills the patching tables (docs/decisions.md).
    this.addSql(`drop table if exists "device_patch" cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "patch_approval" cascade;`);
    this.addSql(`drop table if exists "patch_device_status" cascade;`);
    this.addSql(`drop table if exists "patch" cascade;`);

    // The inventory's table comes back empty.
    this.addSql(`create table "device_patch" ("id" uuid not null, "device_id" uuid not null, "patch_id" varchar(200) not null, "title" varchar(500) null, "severity" varchar(50) null, "installed" boolean not null default false, "installed_at" date null, "reported_at" timestamptz not null, constraint "device_patch_pkey" primary key ("id"));`);
    this.addSql(`alter table "device_patch" add constraint "device_patch_device_id_patch_id_unique" unique ("device_id", "patch_id");`);
    this.addSql(`alter table "device_patch" add constraint "device_patch_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);
  }

}
