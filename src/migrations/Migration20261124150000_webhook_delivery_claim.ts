import { Migration } from '@mikro-orm/migrations';

export class Migration20261124150000_webhook_delivery_claim extends Migration {

  override async up(): Promise<void> {
    // The delivery worker's claim walks the pending deliveries in (created_at, id) order.
    this.addSql(`create index "webhook_delivery_pending_index" on "webhook_delivery" ("created_at", "id") where "status" = 'pending';`);
    // The sweep's and the dead-letter list's indexes hold only the rows those queries look for, so the
    // outcome of a delivery (most end delivered, never dead-lettered) is written to fewer indexes.
    this.addSql(`drop index "webhook_delivery_status_next_attempt_at_index";`);
    this.addSql(`create index "webhook_delivery_waiting_index" on "webhook_delivery" ("status", "next_attempt_at") where "status" in ('pending', 'retrying');`);
    this.addSql(`drop index "webhook_delivery_org_id_dead_lettered_at_index";`);
    this.addSql(`create index "webhook_delivery_dead_letter_index" on "webhook_delivery" ("org_id", "dead_lettered_at") where "dead_lettered_at" is not null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "webhook_delivery_dead_letter_index";`);
    this.addSql(`create index "webhook_delivery_org_id_dead_lettered_at_index" on "webhook_delivery" ("org_id", "dead_lettered_at");`);
    this.addSql(`drop index "webhook_delivery_waiting_index";`);
    this.addSql(`create index "webhook_delivery_status_next_attempt_at_index" on "webhook_delivery" ("status", "next_attempt_at");`);
    this.addSql(`drop index "webhook_delivery_pending_index";`);
  }

}
