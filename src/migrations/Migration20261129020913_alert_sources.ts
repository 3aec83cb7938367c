import { Migration } from '@mikro-orm/migrations';

export class Migration20261129020913_alert_sources extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "alert" add column "source" varchar(40) null, add column "source_id" uuid null, add column "dedup_key" varchar(255) null;`);
    // Every alert so far was a rule's: its source is the rule, its key the rule and device (`alert:<id>` once the rule is gone).
    this.addSql(`update "alert" set "source" = 'alert_rule', "source_id" = "rule_id", "dedup_key" = case when "rule_id" is null then 'alert:' || "id" else "rule_id" || ':' || "device_id" end;`);
    this.addSql(`alter table "alert" alter column "source" set not null, alter column "dedup_key" set not null;`);
    this.addSql(`alter table "alert" alter column "device_id" drop not null;`);

    this.addSql(`drop index "alert_open_rule_device_unique";`);
    this.addSql(`create index "alert_org_id_source_dedup_key_resolved_at_index" on "alert" ("org_id", "source", "dedup_key", "resolved_at");`);
    this.addSql(`create unique index "alert_open_dedup_unique" on "alert" ("org_id", "source", "dedup_key") where "status" <> 'resolved';`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "alert_open_dedup_unique";`);
    this.addSql(`drop index "alert_org_id_source_dedup_key_resolved_at_index";`);
    this.addSql(`delete from "alert" where "device_id" is null;`);
    this.addSql(`alter table "alert" alter column "device_id" set not null;`);
    this.addSql(`alter table "alert" drop column "source", drop column "source_id", drop column "dedup_key";`);
    this.addSql(`create unique index "alert_open_rule_device_unique" on "alert" ("rule_id", "device_id") where "status" <> 'resolved';`);
  }

}
