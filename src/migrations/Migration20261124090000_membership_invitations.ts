import { Migration } from '@mikro-orm/migrations';

export class Migration20261124090000_membership_invitations extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "membership" add column "status" varchar(20) not null default 'active', add column "invite_token_hash" varchar(64) null, add column "invite_expires_at" timestamptz null, add column "invited_name" varchar(255) null;`);
    this.addSql(`create index "membership_invite_token_hash_index" on "membership" ("invite_token_hash");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "membership_invite_token_hash_index";`);
    this.addSql(`alter table "membership" drop column "status", drop column "invite_token_hash", drop column "invite_expires_at", drop column "invited_name";`);
  }

}
