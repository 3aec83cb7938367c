import { Migration } from '@mikro-orm/migrations';

export class Migration20261129133349_software_catalog extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "software_catalog" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "name" varchar(255) not null, "vendor" varchar(255) not null, "category" varchar(100) not null, "description" text null, "latest_version" varchar(100) null, constraint "software_catalog_pkey" primary key ("id"));`);
    this.addSql(`create index "software_catalog_org_id_created_at_id_index" on "software_catalog" ("org_id", "created_at", "id");`);
    this.addSql(`alter table "software_catalog" add constraint "software_catalog_org_id_name_unique" unique ("org_id", "name");`);

    this.addSql(`create table "software_version" ("id" uuid not null, "catalog_id" uuid not null, "version" varchar(100) not null, "installers" jsonb not null, "release_notes" text null, "created_at" timestamptz not null, constraint "software_version_pkey" primary key ("id"));`);
    this.addSql(`create index "software_version_catalog_id_created_at_id_index" on "software_version" ("catalog_id", "created_at", "id");`);
    this.addSql(`alter table "software_version" add constraint "software_version_catalog_id_version_unique" unique ("catalog_id", "version");`);

    this.addSql(`alter table "software_catalog" add constraint "software_catalog_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "software_version" add constraint "software_version_catalog_id_foreign" foreign key ("catalog_id") references "software_catalog" ("id") on update cascade on delete cascade;`);

  }

  override async down(): Promise<void> {
    this.addSql(`alter table "software_version" drop constraint "software_version_catalog_id_foreign";`);

    this.addSql(`drop table if exists "software_catalog" cascade;`);

    this.addSql(`drop table if exists "software_version" cascade;`);
  }

}
