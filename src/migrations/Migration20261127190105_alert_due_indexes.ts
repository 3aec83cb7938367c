import { Migration } from '@mikro-orm/migrations';

export class Migration20261127190105_alert_due_indexes extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create index "alert_condition_state_due_at_index" on "alert_condition_state" ("due_at");`);

    this.addSql(`create index "alert_suppression_ends_index" on "alert" ("suppressed_until") where "status" = 'suppressed' and "suppressed_until" is not null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "alert_suppression_ends_index";`);

    this.addSql(`drop index "alert_condition_state_due_at_index";`);
  }

}
