import { Migration } from '@mikro-orm/migrations';

export class Migration20261122180939_tenant_contact_email extends Migration {

  override async up(): Promise<void> {
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

    this.addSql(`create table "sso_identity" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "user_id" uuid not null, "provider_id" uuid not null, "external_id" varchar(255) not null, "email" varchar(255) not null, "profile" jsonb not null, "access_token" text null, "refresh_token" text null, "token_expires_at" timestamptz null, "last_login_at" timestamptz null, constraint "sso_identity_pkey" primary key ("id"));`);
    this.addSql(`create index "sso_identity_provider_id_index" on "sso_identity" ("provider_id");`);
    this.addSql(`alter table "sso_identity" add constraint "sso_identity_user_id_provider_id_unique" unique ("user_id", "provider_id");`);

    this.addSql(`alter table "sso_provider" add constraint "sso_provider_org_id_foreign" foreign key ("org_id") references "organization" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "sso_provider" add constraint "sso_provider_default_role_id_foreign" foreign key ("default_role_id") references "role" ("id") on update cascade on delete set null;`);

    this.addSql(`alter table "saml_request" add constraint "saml_request_provider_id_foreign" foreign key ("provider_id") references "sso_provider" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "saml_assertion" add constraint "saml_assertion_provider_id_foreign" foreign key ("provider_id") references "sso_provider" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "sso_session" add constraint "sso_session_provider_id_foreign" foreign key ("provider_id") references "sso_provider" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "sso_identity" add constraint "sso_identity_user_id_foreign" foreign key ("user_id") references "user" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "sso_identity" add constraint "sso_identity_provider_id_foreign" foreign key ("provider_id") references "sso_provider" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "partner" add column "contact_email" varchar(255) null;`);

    this.addSql(`alter table "organization" add column "contact_email" varchar(255) null;`);

    this.addSql(`alter table "user" add column "mfa_last_used_step" int null;`);

    this.addSql(`alter table "refresh_token" add column "token_version" int not null default 0;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "saml_request" drop constraint "saml_request_provider_id_foreign";`);

    this.addSql(`alter table "saml_assertion" drop constraint "saml_assertion_provider_id_foreign";`);

    this.addSql(`alter table "sso_session" drop constraint "sso_session_provider_id_foreign";`);

    this.addSql(`alter table "sso_identity" drop constraint "sso_identity_provider_id_foreign";`);

    this.addSql(`drop table if exists "sso_exchange_code" cascade;`);

    this.addSql(`drop table if exists "sso_provider" cascade;`);

    this.addSql(`drop table if exists "saml_request" cascade;`);

    this.addSql(`drop table if exists "saml_assertion" cascade;`);

    this.addSql(`drop table if exists "sso_session" cascade;`);

    this.addSql(`drop table if exists "sso_identity" cascade;`);

    this.addSql(`alter table "organization" drop column "contact_email";`);

    this.addSql(`alter table "partner" drop column "contact_email";`);

    this.addSql(`alter table "refresh_token" drop column "token_version";`);

    this.addSql(`alter table "user" drop column "mfa_last_used_step";`);
  }

}
