import { Migration } from '@mikro-orm/migrations';

export class Migration20261129120225_security_scores extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "security_policy" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "name" varchar(255) not null, "targets" jsonb null, "settings" jsonb not null, constraint "security_policy_pkey" primary key ("id"));`);
    this.addSql(`create index "security_policy_org_id_created_at_id_index" on "security_policy" ("org_id", "created_at", "id");`);

    this.addSql(`create table "security_score_sample" ("id" uuid not null, "device_id" uuid not null, "org_id" uuid not null, "score" double precision not null, "recorded_at" timestamptz not null, constraint "security_score_sample_pkey" primary key ("id"));`);
    this.addSql(`create index "security_score_sample_org_id_recorded_at_index" on "security_score_sample" ("org_id", "recorded_at");`);
    this.addSql(`create index "security_score_sample_device_id_recorded_at_index" on "security_score_sample" ("device_id", "recorded_at");`);

    this.addSql(`create table "security_recommendation" ("id" uuid not null, "org_id" uuid not null, "device_id" uuid not null, "factor" varchar(40) not null, "status" varchar(20) not null default 'open', "title" varchar(200) not null, "message" varchar(1000) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "security_recommendation_pkey" primary key ("id"));`);
    this.addSql(`create index "security_recommendation_org_id_created_at_id_index" on "security_recommendation" ("org_id", "created_at", "id");`);
    this.addSql(`alter table "security_recommendation" add constraint "security_recommendation_device_id_factor_unique" unique ("device_id", "factor");`);

    this.addSql(`create table "device_security_score" ("id" uuid not null, "device_id" uuid not null, "org_id" uuid not null, "score" double precision not null, "factors" jsonb not null, "computed_at" timestamptz not null, constraint "device_security_score_pkey" primary key ("id"));`);
    this.addSql(`create index "device_security_score_org_id_index" on "device_security_score" ("org_id");`);
    this.addSql(`alter table "device_security_score" add constraint "device_security_score_device_id_unique" unique ("device_id");`);

    this.addSql(`alter table "security_policy" add constraint "security_policy_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "security_score_sample" add constraint "security_score_sample_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "security_score_sample" add constraint "security_score_sample_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "security_recommendation" add constraint "security_recommendation_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "security_recommendation" add constraint "security_recommendation_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "device_security_score" add constraint "device_security_score_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "device_security_score" add constraint "device_security_score_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "security_policy" cascade;`);

    this.addSql(`drop table if exists "security_score_sample" cascade;`);

    this.addSql(`drop table if exists "security_recommendation" cascade;`);

    this.addSql(`drop table if exists "device_security_score" cascade;`);
  }

}
