import { Migration } from '@mikro-orm/migrations';

export class Migration20261129115843_security_posture extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "security_threat" ("id" uuid not null, "org_id" uuid not null, "device_id" uuid not null, "external_id" varchar(200) not null, "name" varchar(500) not null, "severity" varchar(20) not null, "path" varchar(2000) null, "status" varchar(20) not null default 'detected', "detected_at" timestamptz not null, "updated_at" timestamptz not null, constraint "security_threat_pkey" primary key ("id"));`);
    this.addSql(`create index "security_threat_org_id_detected_at_id_index" on "security_threat" ("org_id", "detected_at", "id");`);
    this.addSql(`alter table "security_threat" add constraint "security_threat_device_id_external_id_unique" unique ("device_id", "external_id");`);

    this.addSql(`create table "device_security_state" ("id" uuid not null, "device_id" uuid not null, "org_id" uuid not null, "antivirus" jsonb null, "firewall_enabled" boolean null, "encryption_enabled" boolean null, "password_policy" jsonb null, "local_admins" jsonb not null, "reported_at" timestamptz not null, constraint "device_security_state_pkey" primary key ("id"));`);
    this.addSql(`create index "device_security_state_org_id_index" on "device_security_state" ("org_id");`);
    this.addSql(`alter table "device_security_state" add constraint "device_security_state_device_id_unique" unique ("device_id");`);

    this.addSql(`alter table "security_threat" add constraint "security_threat_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "security_threat" add constraint "security_threat_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "device_security_state" add constraint "device_security_state_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "device_security_state" add constraint "device_security_state_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "security_threat" cascade;`);

    this.addSql(`drop table if exists "device_security_state" cascade;`);
  }

}
