import { Migration } from '@mikro-orm/migrations';

export class Migration20261129150328_patch_report_attempts extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "patch_report" add column "attempts" int not null default 0;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "patch_report" drop column "attempts";`);
  }

}
