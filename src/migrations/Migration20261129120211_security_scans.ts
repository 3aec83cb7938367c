import { Migration } from '@mikro-orm/migrations';

export class Migration20261129120211_security_scans extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "security_scan" ("id" uuid not null, "org_id" uuid not null, "device_id" uuid not null, "type" varchar(20) not null, "status" varchar(20) not null default 'queued', "threats_found" int null, "command_id" uuid null, "created_by" uuid null, "created_at" timestamptz not null, "completed_at" timestamptz null, constraint "security_scan_pkey" primary key ("id"));`);
    this.addSql(`create index "security_scan_command_id_index" on "security_scan" ("command_id");`);
    this.addSql(`create index "security_scan_device_id_created_at_id_index" on "security_scan" ("device_id", "created_at", "id");`);
    this.addSql(`create index "security_scan_status_created_at_index" on "security_scan" ("status", "created_at");`);
    this.addSql(`create index "security_threat_status_updated_at_index" on "security_threat" ("status", "updated_at");`);

    this.addSql(`alter table "security_scan" add constraint "security_scan_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "security_scan" add constraint "security_scan_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);

  }

  override async down(): Promise<void> {

    this.addSql(`drop index "security_threat_status_updated_at_index";`);
    this.addSql(`drop table if exists "security_scan" cascade;`);
  }

}
