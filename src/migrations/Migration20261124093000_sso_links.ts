import { Migration } from '@mikro-orm/migrations';

export class Migration20261124093000_sso_links extends Migration {

  override async up(): Promise<void> {
    // Links written before logins were matched by subject may name an account that the provider's organization
    // does not own alone, or one subject twice: those were matched by email only. They are dropped; the
    // account's next SSO login follows the first-login rules (or its owner confirms the link).
    this.addSql(`delete from "sso_identity" i using "sso_provider" p where p."id" = i."provider_id" and exists (select 1 from "membership" m where m."user_id" = i."user_id" and m."org_id" is distinct from p."org_id");`);
    this.addSql(`delete from "sso_identity" i where exists (select 1 from "sso_identity" o where o."provider_id" = i."provider_id" and o."external_id" = i."external_id" and o."id" <> i."id");`);

    this.addSql(`alter table "sso_session" add column "link_user_id" uuid null;`);
    this.addSql(`alter table "sso_session" add constraint "sso_session_link_user_id_foreign" foreign key ("link_user_id") references "user" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "sso_identity" add constraint "sso_identity_provider_id_external_id_unique" unique ("provider_id", "external_id");`);

    this.addSql(`alter table "saml_request" add column "link_user_id" uuid null;`);
    this.addSql(`alter table "saml_request" add constraint "saml_request_link_user_id_foreign" foreign key ("link_user_id") references "user" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "saml_request" drop constraint "saml_request_link_user_id_foreign";`);

    this.addSql(`alter table "sso_session" drop constraint "sso_session_link_user_id_foreign";`);

    this.addSql(`alter table "saml_request" drop column "link_user_id";`);

    this.addSql(`alter table "sso_identity" drop constraint "sso_identity_provider_id_external_id_unique";`);

    this.addSql(`alter table "sso_session" drop column "link_user_id";`);
  }

}
