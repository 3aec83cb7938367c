import { Migration } from '@mikro-orm/migrations';

export class Migration20261127190000_maintenance extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "maintenance_window" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "site_id" uuid null, "name" varchar(255) not null, "timezone" varchar(64) not null, "starts_at" varchar(19) not null, "duration_minutes" int not null, "recurrence" jsonb not null, "target_site_ids" uuid[] not null, "target_group_ids" uuid[] not null, "target_device_ids" uuid[] not null, "suppress_alerts" boolean not null, "defer_updates" boolean not null, "defer_patching" boolean not null, "status" varchar(20) not null default 'active', "cancelled_at" timestamptz null, "scheduled_through" timestamptz null, "created_by" uuid null, constraint "maintenance_window_pkey" primary key ("id"));`);
    this.addSql(`create index "maintenance_window_org_id_index" on "maintenance_window" ("org_id");`);
    this.addSql(`create index "maintenance_window_site_id_index" on "maintenance_window" ("site_id");`);

    this.addSql(`create table "maintenance_occurrence" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "window_id" uuid not null, "org_id" uuid not null, "site_id" uuid null, "starts_at" timestamptz not null, "ends_at" timestamptz not null, "status" varchar(20) not null default 'scheduled', "started_at" timestamptz null, "ended_at" timestamptz null, constraint "maintenance_occurrence_pkey" primary key ("id"));`);
    this.addSql(`create index "maintenance_occurrence_org_id_status_index" on "maintenance_occurrence" ("org_id", "status");`);
    this.addSql(`create index "maintenance_occurrence_status_starts_at_index" on "maintenance_occurrence" ("status", "starts_at");`);
    this.addSql(`alter table "maintenance_occurrence" add constraint "maintenance_occurrence_window_id_starts_at_unique" unique ("window_id", "starts_at");`);

    this.addSql(`alter table "maintenance_window" add constraint "maintenance_window_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "maintenance_window" add constraint "maintenance_window_site_id_foreign" foreign key ("site_id") references "site" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "maintenance_occurrence" add constraint "maintenance_occurrence_window_id_foreign" foreign key ("window_id") references "maintenance_window" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "maintenance_occurrence" add constraint "maintenance_occurrence_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "maintenance_occurrence" add constraint "maintenance_occurrence_site_id_foreign" foreign key ("site_id") references "site" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "maintenance_occurrence" cascade;`);
    this.addSql(`drop table if exists "maintenance_window" cascade;`);
  }

}
