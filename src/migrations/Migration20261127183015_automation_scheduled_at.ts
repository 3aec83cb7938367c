import { Migration } from '@mikro-orm/migrations';

export class Migration20261127183015_automation_scheduled_at extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "automation" add column "scheduled_at" timestamptz null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "automation" drop column "scheduled_at";`);
  }

}
