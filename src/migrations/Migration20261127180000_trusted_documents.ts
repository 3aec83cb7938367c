import { Migration } from '@mikro-orm/migrations';

export class Migration20261127180000_trusted_documents extends Migration {

  override async up(): Promise<void> {
    // Trusted documents (PERSISTED_QUERIES=trusted) live beside the automatic registrations, marked:
    // only an import sets the mark, so registering a query anonymously never makes it trusted.
    this.addSql(`alter table "persisted_query" add column "trusted" boolean not null default false, add column "name" varchar(255) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "persisted_query" drop column "trusted", drop column "name";`);
  }

}
