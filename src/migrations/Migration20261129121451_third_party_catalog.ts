import { Migration } from '@mikro-orm/migrations';

export class Migration20261129121451_third_party_catalog extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "third_party_catalog_entry" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "name" varchar(200) not null, "vendor" varchar(200) not null, "versions" jsonb not null, "service_tested" boolean not null default false, "last_test" jsonb null, constraint "third_party_catalog_entry_pkey" primary key ("id"));`);
    this.addSql(`create index "third_party_catalog_entry_created_at_id_index" on "third_party_catalog_entry" ("created_at", "id");`);

    this.addSql(`create table "vulnerability_cache" ("package_name" varchar(300) not null, "version" varchar(200) not null, "cve_ids" jsonb null, "cvss_score" double precision null, "fetched_at" timestamptz null, "failures" int not null default 0, "retry_at" timestamptz null, constraint "vulnerability_cache_pkey" primary key ("package_name", "version"));`);
    this.addSql(`create index "vulnerability_cache_retry_at_index" on "vulnerability_cache" ("retry_at");`);

  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "third_party_catalog_entry" cascade;`);

    this.addSql(`drop table if exists "vulnerability_cache" cascade;`);
  }

}
