import { Migration } from '@mikro-orm/migrations';

export class Migration20261129120251_patch_reports extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "patch_report" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "requested_by" uuid not null, "format" varchar(10) not null, "status" varchar(20) not null default 'queued', "scope" jsonb not null, "error" varchar(500) null, "content" bytea null, "size_bytes" int null, "started_at" timestamptz null, "completed_at" timestamptz null, "expires_at" timestamptz not null, constraint "patch_report_pkey" primary key ("id"));`);
    this.addSql(`create index "patch_report_org_id_requested_by_index" on "patch_report" ("org_id", "requested_by");`);
    this.addSql(`create index "patch_report_expires_at_index" on "patch_report" ("expires_at");`);

    this.addSql(`alter table "patch_report" add constraint "patch_report_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "patch_report" cascade;`);
  }

}
