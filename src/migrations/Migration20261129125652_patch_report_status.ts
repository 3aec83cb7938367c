import { Migration } from '@mikro-orm/migrations';

export class Migration20261129125652_patch_report_status extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create index "patch_report_status_created_at_index" on "patch_report" ("status", "created_at");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "patch_report_status_created_at_index";`);
  }

}
