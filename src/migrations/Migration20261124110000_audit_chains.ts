import { Migration } from '@mikro-orm/migrations';

export class Migration20261124110000_audit_chains extends Migration {

  override async up(): Promise<void> {
    // `seq` now comes from a sequence, so appends to different chains need no common lock.
    this.addSql(`create sequence "audit_log_seq";`);
    this.addSql(`select setval('audit_log_seq', coalesce((select max("seq") from "audit_log"), 0) + 1, false);`);

    // Entries written so far were chained in `seq` order across every tenant: they stay one chain, `legacy`,
    // verifiable as before (the hash covers the same content), and each tenant's chain starts afresh.
    this.addSql(`alter table "audit_log" add column "chain" varchar(50) null, add column "chain_seq" bigint null;`);
    this.addSql(`update "audit_log" set "chain" = 'legacy', "chain_seq" = "seq";`);
    this.addSql(`alter table "audit_log" alter column "chain" set not null, alter column "chain_seq" set not null;`);
    this.addSql(`alter table "audit_log" add constraint "audit_log_chain_chain_seq_unique" unique ("chain", "chain_seq");`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "audit_log" drop constraint "audit_log_chain_chain_seq_unique";`);
    this.addSql(`alter table "audit_log" drop column "chain", drop column "chain_seq";`);
    this.addSql(`drop sequence "audit_log_seq";`);
  }

}
