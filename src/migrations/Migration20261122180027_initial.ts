import { Migration } from '@mikro-orm/migrations';

export class Migration20261122180027_initial extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "audit_log" ("id" uuid not null, "seq" bigint not null, "created_at" timestamptz not null, "actor_type" varchar(20) not null, "actor_id" uuid null, "actor_email" varchar(255) null, "action" varchar(100) not null, "resource_type" varchar(100) not null, "resource_id" varchar(100) null, "org_id" uuid null, "partner_id" uuid null, "ip" varchar(64) null, "user_agent" text null, "result" varchar(20) not null default 'success', "changes" jsonb not null, "details" jsonb not null, "prev_hash" varchar(64) not null, "hash" varchar(64) not null, constraint "audit_log_pkey" primary key ("id"));`);
    this.addSql(`alter table "audit_log" add constraint "audit_log_seq_unique" unique ("seq");`);
    this.addSql(`create index "audit_log_actor_id_index" on "audit_log" ("actor_id");`);
    this.addSql(`create index "audit_log_partner_id_index" on "audit_log" ("partner_id");`);
    this.addSql(`create index "audit_log_action_index" on "audit_log" ("action");`);
    this.addSql(`create index "audit_log_org_id_created_at_index" on "audit_log" ("org_id", "created_at");`);

    this.addSql(`create table "login_attempt" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "email" varchar(255) not null, "ip" varchar(64) not null, "success" boolean not null, constraint "login_attempt_pkey" primary key ("id"));`);
    this.addSql(`create index "login_attempt_ip_created_at_index" on "login_attempt" ("ip", "created_at");`);
    this.addSql(`create index "login_attempt_email_created_at_index" on "login_attempt" ("email", "created_at");`);

    this.addSql(`create table "outbox_event" ("id" uuid not null, "type" varchar(100) not null, "org_id" uuid null, "data" jsonb not null, "created_at" timestamptz not null, "available_at" timestamptz not null, "dispatched_at" timestamptz null, "attempts" int not null default 0, "last_error" text null, constraint "outbox_event_pkey" primary key ("id"));`);
    this.addSql(`create index "outbox_event_dispatched_at_available_at_index" on "outbox_event" ("dispatched_at", "available_at");`);

    this.addSql(`create table "partner" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "name" varchar(255) not null, "status" varchar(20) not null default 'active', "require_mfa" boolean not null default false, "settings" jsonb not null, constraint "partner_pkey" primary key ("id"));`);

    this.addSql(`create table "organization" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "partner_id" uuid not null, "name" varchar(255) not null, "status" varchar(20) not null default 'active', "require_mfa" boolean not null default false, "settings" jsonb not null, constraint "organization_pkey" primary key ("id"));`);
    this.addSql(`create index "organization_partner_id_index" on "organization" ("partner_id");`);

    this.addSql(`create table "role" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "name" varchar(255) not null, "description" text null, "scope" varchar(20) not null, "partner_id" uuid null, "org_id" uuid null, "permissions" jsonb not null, "is_system" boolean not null default false, "require_mfa" boolean not null default false, "created_by" uuid null, constraint "role_pkey" primary key ("id"));`);
    this.addSql(`create index "role_partner_id_index" on "role" ("partner_id");`);
    this.addSql(`create index "role_org_id_index" on "role" ("org_id");`);

    this.addSql(`create table "site" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "name" varchar(255) not null, "timezone" varchar(100) not null default 'UTC', "address" text null, constraint "site_pkey" primary key ("id"));`);
    this.addSql(`create index "site_org_id_index" on "site" ("org_id");`);

    this.addSql(`create table "user" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "email" varchar(255) not null, "name" varchar(255) not null, "password_hash" text null, "status" varchar(20) not null default 'active', "mfa_enabled" boolean not null default false, "mfa_secret" text null, "mfa_recovery_codes" jsonb not null, "token_version" int not null default 0, "last_login_at" timestamptz null, "invite_token_hash" varchar(64) null, "invite_expires_at" timestamptz null, constraint "user_pkey" primary key ("id"));`);
    this.addSql(`alter table "user" add constraint "user_email_unique" unique ("email");`);
    this.addSql(`create index "user_invite_token_hash_index" on "user" ("invite_token_hash");`);

    this.addSql(`create table "membership" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "user_id" uuid not null, "scope" varchar(20) not null, "partner_id" uuid null, "org_id" uuid null, "role_id" uuid not null, "org_access" varchar(20) not null default 'all', "org_ids" jsonb not null, "site_ids" jsonb not null, constraint "membership_pkey" primary key ("id"));`);
    this.addSql(`create index "membership_user_id_index" on "membership" ("user_id");`);
    this.addSql(`create index "membership_partner_id_index" on "membership" ("partner_id");`);
    this.addSql(`create index "membership_org_id_index" on "membership" ("org_id");`);
    this.addSql(`create index "membership_role_id_index" on "membership" ("role_id");`);
    this.addSql(`alter table "membership" add constraint "membership_user_id_partner_id_org_id_unique" unique ("user_id", "partner_id", "org_id");`);

    this.addSql(`create table "refresh_token" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "user_id" uuid not null, "membership_id" uuid not null, "family_id" uuid not null, "token_hash" varchar(64) not null, "mfa" boolean not null default false, "method" varchar(20) not null default 'password', "expires_at" timestamptz not null, "used_at" timestamptz null, "revoked_at" timestamptz null, "ip" varchar(64) null, "user_agent" text null, constraint "refresh_token_pkey" primary key ("id"));`);
    this.addSql(`create index "refresh_token_user_id_index" on "refresh_token" ("user_id");`);
    this.addSql(`create index "refresh_token_family_id_index" on "refresh_token" ("family_id");`);
    this.addSql(`alter table "refresh_token" add constraint "refresh_token_token_hash_unique" unique ("token_hash");`);

    this.addSql(`create table "api_key" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "name" varchar(255) not null, "prefix" varchar(32) not null, "key_hash" varchar(64) not null, "scopes" jsonb not null, "user_id" uuid not null, "membership_id" uuid not null, "org_id" uuid null, "partner_id" uuid null, "expires_at" timestamptz null, "last_used_at" timestamptz null, "revoked_at" timestamptz null, constraint "api_key_pkey" primary key ("id"));`);
    this.addSql(`alter table "api_key" add constraint "api_key_prefix_unique" unique ("prefix");`);
    this.addSql(`create index "api_key_user_id_index" on "api_key" ("user_id");`);
    this.addSql(`create index "api_key_org_id_index" on "api_key" ("org_id");`);
    this.addSql(`create index "api_key_partner_id_index" on "api_key" ("partner_id");`);

    this.addSql(`alter table "organization" add constraint "organization_partner_id_foreign" foreign key ("partner_id") references "partner" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "role" add constraint "role_partner_id_foreign" foreign key ("partner_id") references "partner" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "role" add constraint "role_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "site" add constraint "site_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "membership" add constraint "membership_user_id_foreign" foreign key ("user_id") references "user" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "membership" add constraint "membership_partner_id_foreign" foreign key ("partner_id") references "partner" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "membership" add constraint "membership_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "membership" add constraint "membership_role_id_foreign" foreign key ("role_id") references "role" ("id") on update cascade on delete restrict;`);

    this.addSql(`alter table "refresh_token" add constraint "refresh_token_user_id_foreign" foreign key ("user_id") references "user" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "refresh_token" add constraint "refresh_token_membership_id_foreign" foreign key ("membership_id") references "membership" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "api_key" add constraint "api_key_user_id_foreign" foreign key ("user_id") references "user" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "api_key" add constraint "api_key_membership_id_foreign" foreign key ("membership_id") references "membership" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "organization" drop constraint "organization_partner_id_foreign";`);

    this.addSql(`alter table "role" drop constraint "role_partner_id_foreign";`);

    this.addSql(`alter table "membership" drop constraint "membership_partner_id_foreign";`);

    this.addSql(`alter table "role" drop constraint "role_org_id_foreign";`);

    this.addSql(`alter table "site" drop constraint "site_org_id_foreign";`);

    this.addSql(`alter table "membership" drop constraint "membership_org_id_foreign";`);

    this.addSql(`alter table "membership" drop constraint "membership_role_id_foreign";`);

    this.addSql(`alter table "membership" drop constraint "membership_user_id_foreign";`);

    this.addSql(`alter table "refresh_token" drop constraint "refresh_token_user_id_foreign";`);

    this.addSql(`alter table "api_key" drop constraint "api_key_user_id_foreign";`);

    this.addSql(`alter table "refresh_token" drop constraint "refresh_token_membership_id_foreign";`);

    this.addSql(`alter table "api_key" drop constraint "api_key_membership_id_foreign";`);

    this.addSql(`drop table if exists "audit_log" cascade;`);

    this.addSql(`drop table if exists "login_attempt" cascade;`);

    this.addSql(`drop table if exists "outbox_event" cascade;`);

    this.addSql(`drop table if exists "partner" cascade;`);

    this.addSql(`drop table if exists "organization" cascade;`);

    this.addSql(`drop table if exists "role" cascade;`);

    this.addSql(`drop table if exists "site" cascade;`);

    this.addSql(`drop table if exists "user" cascade;`);

    this.addSql(`drop table if exists "membership" cascade;`);

    this.addSql(`drop table if exists "refresh_token" cascade;`);

    this.addSql(`drop table if exists "api_key" cascade;`);
  }

}
