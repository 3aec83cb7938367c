import { Migration } from '@mikro-orm/migrations';

export class Migration20261124141000_agent_versions extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "agent_version" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "version" varchar(50) not null, "component" varchar(20) not null, "os" varchar(20) not null, "arch" varchar(20) not null, "asset_name" varchar(255) not null, "url" text not null, "checksum" varchar(64) not null, "size" int null, "prerelease" boolean not null default false, "published_at" timestamptz not null, "promoted_at" timestamptz null, constraint "agent_version_pkey" primary key ("id"));`);
    this.addSql(`create index "agent_version_published_at_index" on "agent_version" ("published_at");`);
    this.addSql(`create index "agent_version_component_os_arch_promoted_at_index" on "agent_version" ("component", "os", "arch", "promoted_at");`);
    this.addSql(`alter table "agent_version" add constraint "agent_version_version_component_os_arch_unique" unique ("version", "component", "os", "arch");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "agent_version" cascade;`);
  }

}
