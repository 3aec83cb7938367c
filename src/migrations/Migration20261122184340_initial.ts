import { Migration } from '@mikro-orm/migrations';

export class Migration20261122184340_initial extends Migration {

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

    this.addSql(`create table "partner" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "name" varchar(255) not null, "status" varchar(20) not null default 'active', "require_mfa" boolean not null default false, "contact_email" varchar(255) null, "settings" jsonb not null, constraint "partner_pkey" primary key ("id"));`);

    this.addSql(`create table "organization" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "partner_id" uuid not null, "name" varchar(255) not null, "status" varchar(20) not null default 'active', "require_mfa" boolean not null default false, "contact_email" varchar(255) null, "settings" jsonb not null, constraint "organization_pkey" primary key ("id"));`);
    this.addSql(`create index "organization_partner_id_index" on "organization" ("partner_id");`);

    this.addSql(`create table "access_review" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "name" varchar(255) not null, "org_id" uuid null, "partner_id" uuid null, "status" varchar(20) not null default 'open', "due_at" timestamptz null, "created_by" uuid null, "completed_at" timestamptz null, "completed_by" uuid null, constraint "access_review_pkey" primary key ("id"));`);
    this.addSql(`create index "access_review_org_id_index" on "access_review" ("org_id");`);
    this.addSql(`create index "access_review_partner_id_index" on "access_review" ("partner_id");`);

    this.addSql(`create table "access_review_item" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "review_id" uuid not null, "user_id" uuid not null, "user_email" varchar(255) not null, "user_name" varchar(255) not null, "membership_id" uuid not null, "role_id" uuid not null, "role_name" varchar(255) not null, "decision" varchar(20) not null default 'pending', "notes" text null, "decided_by" uuid null, "decided_at" timestamptz null, constraint "access_review_item_pkey" primary key ("id"));`);
    this.addSql(`create index "access_review_item_review_id_index" on "access_review_item" ("review_id");`);

    this.addSql(`create table "role" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "name" varchar(255) not null, "description" text null, "scope" varchar(20) not null, "partner_id" uuid null, "org_id" uuid null, "permissions" jsonb not null, "is_system" boolean not null default false, "require_mfa" boolean not null default false, "created_by" uuid null, constraint "role_pkey" primary key ("id"));`);
    this.addSql(`create index "role_partner_id_index" on "role" ("partner_id");`);
    this.addSql(`create index "role_org_id_index" on "role" ("org_id");`);

    this.addSql(`create table "site" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "name" varchar(255) not null, "timezone" varchar(100) not null default 'UTC', "address" text null, constraint "site_pkey" primary key ("id"));`);
    this.addSql(`create index "site_org_id_index" on "site" ("org_id");`);

    this.addSql(`create table "sso_exchange_code" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "code_hash" varchar(64) not null, "tokens" text not null, "expires_at" timestamptz not null, constraint "sso_exchange_code_pkey" primary key ("id"));`);
    this.addSql(`alter table "sso_exchange_code" add constraint "sso_exchange_code_code_hash_unique" unique ("code_hash");`);
    this.addSql(`create index "sso_exchange_code_expires_at_index" on "sso_exchange_code" ("expires_at");`);

    this.addSql(`create table "sso_provider" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "name" varchar(255) not null, "type" varchar(10) not null, "status" varchar(20) not null default 'inactive', "preset" varchar(50) null, "issuer" varchar(500) null, "client_id" varchar(255) null, "client_secret" text null, "authorization_url" varchar(500) null, "token_url" varchar(500) null, "user_info_url" varchar(500) null, "jwks_url" varchar(500) null, "scopes" varchar(500) null, "attribute_mapping" jsonb null, "auto_provision" boolean not null default true, "default_role_id" uuid null, "allowed_domains" varchar(1000) null, "enforce_sso" boolean not null default false, "entity_id" varchar(500) null, "sso_url" varchar(500) null, "certificate" text null, "allow_idp_initiated" boolean not null default false, "force_authn" boolean not null default false, "name_id_format" varchar(255) null, "created_by" uuid null, constraint "sso_provider_pkey" primary key ("id"));`);
    this.addSql(`create index "sso_provider_org_id_index" on "sso_provider" ("org_id");`);
    this.addSql(`create unique index "sso_provider_one_active_per_org" on "sso_provider" ("org_id") where "status" = 'active';`);

    this.addSql(`create table "saml_request" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "provider_id" uuid not null, "request_id" varchar(100) not null, "relay_key" varchar(64) not null, "redirect_path" varchar(500) not null, "expires_at" timestamptz not null, constraint "saml_request_pkey" primary key ("id"));`);
    this.addSql(`create index "saml_request_provider_id_index" on "saml_request" ("provider_id");`);
    this.addSql(`alter table "saml_request" add constraint "saml_request_request_id_unique" unique ("request_id");`);
    this.addSql(`alter table "saml_request" add constraint "saml_request_relay_key_unique" unique ("relay_key");`);
    this.addSql(`create index "saml_request_expires_at_index" on "saml_request" ("expires_at");`);

    this.addSql(`create table "saml_assertion" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "provider_id" uuid not null, "assertion_id" varchar(255) not null, "expires_at" timestamptz not null, constraint "saml_assertion_pkey" primary key ("id"));`);
    this.addSql(`create index "saml_assertion_expires_at_index" on "saml_assertion" ("expires_at");`);
    this.addSql(`alter table "saml_assertion" add constraint "saml_assertion_provider_id_assertion_id_unique" unique ("provider_id", "assertion_id");`);

    this.addSql(`create table "sso_session" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "provider_id" uuid not null, "state" varchar(64) not null, "nonce" varchar(64) not null, "code_verifier" varchar(128) not null, "redirect_path" varchar(500) not null, "expires_at" timestamptz not null, constraint "sso_session_pkey" primary key ("id"));`);
    this.addSql(`create index "sso_session_provider_id_index" on "sso_session" ("provider_id");`);
    this.addSql(`alter table "sso_session" add constraint "sso_session_state_unique" unique ("state");`);
    this.addSql(`create index "sso_session_expires_at_index" on "sso_session" ("expires_at");`);

    this.addSql(`create table "user" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "email" varchar(255) not null, "name" varchar(255) not null, "password_hash" text null, "status" varchar(20) not null default 'active', "mfa_enabled" boolean not null default false, "mfa_secret" text null, "mfa_recovery_codes" jsonb not null, "mfa_last_used_step" int null, "token_version" int not null default 0, "last_login_at" timestamptz null, "invite_token_hash" varchar(64) null, "invite_expires_at" timestamptz null, constraint "user_pkey" primary key ("id"));`);
    this.addSql(`alter table "user" add constraint "user_email_unique" unique ("email");`);
    this.addSql(`create index "user_invite_token_hash_index" on "user" ("invite_token_hash");`);

    this.addSql(`create table "sso_identity" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "user_id" uuid not null, "provider_id" uuid not null, "external_id" varchar(255) not null, "email" varchar(255) not null, "profile" jsonb not null, "access_token" text null, "refresh_token" text null, "token_expires_at" timestamptz null, "last_login_at" timestamptz null, constraint "sso_identity_pkey" primary key ("id"));`);
    this.addSql(`create index "sso_identity_provider_id_index" on "sso_identity" ("provider_id");`);
    this.addSql(`alter table "sso_identity" add constraint "sso_identity_user_id_provider_id_unique" unique ("user_id", "provider_id");`);

    this.addSql(`create table "membership" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "user_id" uuid not null, "scope" varchar(20) not null, "partner_id" uuid null, "org_id" uuid null, "role_id" uuid not null, "org_access" varchar(20) not null default 'all', "org_ids" jsonb not null, "site_ids" jsonb not null, constraint "membership_pkey" primary key ("id"));`);
    this.addSql(`create index "membership_user_id_index" on "membership" ("user_id");`);
    this.addSql(`create index "membership_partner_id_index" on "membership" ("partner_id");`);
    this.addSql(`create index "membership_org_id_index" on "membership" ("org_id");`);
    this.addSql(`create index "membership_role_id_index" on "membership" ("role_id");`);
    this.addSql(`alter table "membership" add constraint "membership_user_id_partner_id_org_id_unique" unique ("user_id", "partner_id", "org_id");`);

    this.addSql(`create table "refresh_token" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "user_id" uuid not null, "membership_id" uuid not null, "family_id" uuid not null, "token_hash" varchar(64) not null, "mfa" boolean not null default false, "method" varchar(20) not null default 'password', "token_version" int not null default 0, "expires_at" timestamptz not null, "used_at" timestamptz null, "revoked_at" timestamptz null, "ip" varchar(64) null, "user_agent" text null, constraint "refresh_token_pkey" primary key ("id"));`);
    this.addSql(`create index "refresh_token_user_id_index" on "refresh_token" ("user_id");`);
    this.addSql(`create index "refresh_token_family_id_index" on "refresh_token" ("family_id");`);
    this.addSql(`alter table "refresh_token" add constraint "refresh_token_token_hash_unique" unique ("token_hash");`);

    this.addSql(`create table "api_key" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "name" varchar(255) not null, "prefix" varchar(32) not null, "key_hash" varchar(64) not null, "scopes" jsonb not null, "user_id" uuid not null, "membership_id" uuid not null, "org_id" uuid null, "partner_id" uuid null, "expires_at" timestamptz null, "last_used_at" timestamptz null, "revoked_at" timestamptz null, constraint "api_key_pkey" primary key ("id"));`);
    this.addSql(`alter table "api_key" add constraint "api_key_prefix_unique" unique ("prefix");`);
    this.addSql(`create index "api_key_user_id_index" on "api_key" ("user_id");`);
    this.addSql(`create index "api_key_org_id_index" on "api_key" ("org_id");`);
    this.addSql(`create index "api_key_partner_id_index" on "api_key" ("partner_id");`);

    this.addSql(`create table "webhook" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "org_id" uuid not null, "name" varchar(255) not null, "url" text not null, "secret" text null, "events" jsonb not null, "headers" jsonb not null, "status" varchar(20) not null default 'active', "retry_policy" jsonb null, "success_count" int not null default 0, "failure_count" int not null default 0, "consecutive_failures" int not null default 0, "failing_since" timestamptz null, "last_delivery_at" timestamptz null, "last_success_at" timestamptz null, "created_by" uuid null, constraint "webhook_pkey" primary key ("id"));`);
    this.addSql(`create index "webhook_org_id_status_index" on "webhook" ("org_id", "status");`);

    this.addSql(`create table "webhook_delivery" ("id" uuid not null, "webhook_id" uuid not null, "org_id" uuid not null, "status" varchar(20) not null default 'pending', "event" varchar(100) not null, "event_id" varchar(100) not null, "payload" jsonb not null, "response_status" int null, "response_body" text null, "attempt" int not null default 0, "next_attempt_at" timestamptz null, "response_time_ms" int null, "error_message" text null, "created_at" timestamptz not null, "delivered_at" timestamptz null, "locked_until" timestamptz null, "dead_lettered_at" timestamptz null, "redriven_at" timestamptz null, "retry_of" uuid null, constraint "webhook_delivery_pkey" primary key ("id"));`);
    this.addSql(`create index "webhook_delivery_org_id_dead_lettered_at_index" on "webhook_delivery" ("org_id", "dead_lettered_at");`);
    this.addSql(`create index "webhook_delivery_status_next_attempt_at_index" on "webhook_delivery" ("status", "next_attempt_at");`);
    this.addSql(`create index "webhook_delivery_webhook_id_created_at_index" on "webhook_delivery" ("webhook_id", "created_at");`);
    this.addSql(`create unique index "webhook_delivery_event_unique" on "webhook_delivery" ("webhook_id", "event_id") where "retry_of" is null;`);

    this.addSql(`alter table "organization" add constraint "organization_partner_id_foreign" foreign key ("partner_id") references "partner" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "access_review" add constraint "access_review_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "access_review" add constraint "access_review_partner_id_foreign" foreign key ("partner_id") references "partner" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "access_review_item" add constraint "access_review_item_review_id_foreign" foreign key ("review_id") references "access_review" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "role" add constraint "role_partner_id_foreign" foreign key ("partner_id") references "partner" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "role" add constraint "role_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "site" add constraint "site_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "sso_provider" add constraint "sso_provider_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "sso_provider" add constraint "sso_provider_default_role_id_foreign" foreign key ("default_role_id") references "role" ("id") on update cascade on delete set null;`);

    this.addSql(`alter table "saml_request" add constraint "saml_request_provider_id_foreign" foreign key ("provider_id") references "sso_provider" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "saml_assertion" add constraint "saml_assertion_provider_id_foreign" foreign key ("provider_id") references "sso_provider" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "sso_session" add constraint "sso_session_provider_id_foreign" foreign key ("provider_id") references "sso_provider" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "sso_identity" add constraint "sso_identity_user_id_foreign" foreign key ("user_id") references "user" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "sso_identity" add constraint "sso_identity_provider_id_foreign" foreign key ("provider_id") references "sso_provider" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "membership" add constraint "membership_user_id_foreign" foreign key ("user_id") references "user" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "membership" add constraint "membership_partner_id_foreign" foreign key ("partner_id") references "partner" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "membership" add constraint "membership_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "membership" add constraint "membership_role_id_foreign" foreign key ("role_id") references "role" ("id") on update cascade on delete restrict;`);

    this.addSql(`alter table "refresh_token" add constraint "refresh_token_user_id_foreign" foreign key ("user_id") references "user" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "refresh_token" add constraint "refresh_token_membership_id_foreign" foreign key ("membership_id") references "membership" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "api_key" add constraint "api_key_user_id_foreign" foreign key ("user_id") references "user" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "api_key" add constraint "api_key_membership_id_foreign" foreign key ("membership_id") references "membership" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "webhook" add constraint "webhook_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "webhook_delivery" add constraint "webhook_delivery_webhook_id_foreign" foreign key ("webhook_id") references "webhook" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "webhook_delivery" add constraint "webhook_delivery_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "organization" drop constraint "organization_partner_id_foreign";`);

    this.addSql(`alter table "access_review" drop constraint "access_review_partner_id_foreign";`);

    this.addSql(`alter table "role" drop constraint "role_partner_id_foreign";`);

    this.addSql(`alter table "membership" drop constraint "membership_partner_id_foreign";`);

    this.addSql(`alter table "access_review" drop constraint "access_review_org_id_foreign";`);

    this.addSql(`alter table "role" drop constraint "role_org_id_foreign";`);

    this.addSql(`alter table "site" drop constraint "site_org_id_foreign";`);

    this.addSql(`alter table "sso_provider" drop constraint "sso_provider_org_id_foreign";`);

    this.addSql(`alter table "membership" drop constraint "membership_org_id_foreign";`);

    this.addSql(`alter table "webhook" drop constraint "webhook_org_id_foreign";`);

    this.addSql(`alter table "webhook_delivery" drop constraint "webhook_delivery_org_id_foreign";`);

    this.addSql(`alter table "access_review_item" drop constraint "access_review_item_review_id_foreign";`);

    this.addSql(`alter table "sso_provider" drop constraint "sso_provider_default_role_id_foreign";`);

    this.addSql(`alter table "membership" drop constraint "membership_role_id_foreign";`);

    this.addSql(`alter table "saml_request" drop constraint "saml_request_provider_id_foreign";`);

    this.addSql(`alter table "saml_assertion" drop constraint "saml_assertion_provider_id_foreign";`);

    this.addSql(`alter table "sso_session" drop constraint "sso_session_provider_id_foreign";`);

    this.addSql(`alter table "sso_identity" drop constraint "sso_identity_provider_id_foreign";`);

    this.addSql(`alter table "sso_identity" drop constraint "sso_identity_user_id_foreign";`);

    this.addSql(`alter table "membership" drop constraint "membership_user_id_foreign";`);

    this.addSql(`alter table "refresh_token" drop constraint "refresh_token_user_id_foreign";`);

    this.addSql(`alter table "api_key" drop constraint "api_key_user_id_foreign";`);

    this.addSql(`alter table "refresh_token" drop constraint "refresh_token_membership_id_foreign";`);

    this.addSql(`alter table "api_key" drop constraint "api_key_membership_id_foreign";`);

    this.addSql(`alter table "webhook_delivery" drop constraint "webhook_delivery_webhook_id_foreign";`);

    this.addSql(`drop table if exists "audit_log" cascade;`);

    this.addSql(`drop table if exists "login_attempt" cascade;`);

    this.addSql(`drop table if exists "outbox_event" cascade;`);

    this.addSql(`drop table if exists "partner" cascade;`);

    this.addSql(`drop table if exists "organization" cascade;`);

    this.addSql(`drop table if exists "access_review" cascade;`);

    this.addSql(`drop table if exists "access_review_item" cascade;`);

    this.addSql(`drop table if exists "role" cascade;`);

    this.addSql(`drop table if exists "site" cascade;`);

    this.addSql(`drop table if exists "sso_exchange_code" cascade;`);

    this.addSql(`drop table if exists "sso_provider" cascade;`);

    this.addSql(`drop table if exists "saml_request" cascade;`);

    this.addSql(`drop table if exists "saml_assertion" cascade;`);

    this.addSql(`drop table if exists "sso_session" cascade;`);

    this.addSql(`drop table if exists "user" cascade;`);

    this.addSql(`drop table if exists "sso_identity" cascade;`);

    this.addSql(`drop table if exists "membership" cascade;`);

    this.addSql(`drop table if exists "refresh_token" cascade;`);

    this.addSql(`drop table if exists "api_key" cascade;`);

    this.addSql(`drop table if exists "webhook" cascade;`);

    this.addSql(`drop table if exists "webhook_delivery" cascade;`);
  }

}
