import { Migration } from '@mikro-orm/migrations';

export class Migration20261122181637_access_reviews extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "access_review" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "name" varchar(255) not null, "org_id" uuid null, "partner_id" uuid null, "status" varchar(20) not null default 'open', "due_at" timestamptz null, "created_by" uuid null, "completed_at" timestamptz null, "completed_by" uuid null, constraint "access_review_pkey" primary key ("id"));`);
    this.addSql(`create index "access_review_org_id_index" on "access_review" ("org_id");`);
    this.addSql(`create index "access_review_partner_id_index" on "access_review" ("partner_id");`);

    this.addSql(`create table "access_review_item" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "review_id" uuid not null, "user_id" uuid not null, "user_email" varchar(255) not null, "user_name" varchar(255) not null, "membership_id" uuid not null, "role_id" uuid not null, "role_name" varchar(255) not null, "decision" varchar(20) not null default 'pending', "notes" text null, "decided_by" uuid null, "decided_at" timestamptz null, constraint "access_review_item_pkey" primary key ("id"));`);
    this.addSql(`create index "access_review_item_review_id_index" on "access_review_item" ("review_id");`);

    this.addSql(`alter table "access_review" add constraint "access_review_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "access_review" add constraint "access_review_partner_id_foreign" foreign key ("partner_id") references "partner" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "access_review_item" add constraint "access_review_item_review_id_foreign" foreign key ("review_id") references "access_review" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "access_review_item" drop constraint "access_review_item_review_id_foreign";`);

    this.addSql(`drop table if exists "access_review" cascade;`);

    this.addSql(`drop table if exists "access_review_item" cascade;`);
  }

}
