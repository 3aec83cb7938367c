import { Migration } from '@mikro-orm/migrations';

export class Migration20261129025118_owned_inventory extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "device_software" ("id" uuid not null, "device_id" uuid not null, "name" varchar(500) not null, "version" varchar(200) null, "publisher" varchar(500) null, "install_date" date null, "reported_at" timestamptz not null, constraint "device_software_pkey" primary key ("id"));`);
    this.addSql(`create index "device_software_device_id_index" on "device_software" ("device_id");`);

    this.addSql(`create table "device_patch" ("id" uuid not null, "device_id" uuid not null, "patch_id" varchar(200) not null, "title" varchar(500) null, "severity" varchar(50) null, "installed" boolean not null default false, "installed_at" date null, "reported_at" timestamptz not null, constraint "device_patch_pkey" primary key ("id"));`);
    this.addSql(`alter table "device_patch" add constraint "device_patch_device_id_patch_id_unique" unique ("device_id", "patch_id");`);

    this.addSql(`create table "device_network_interface" ("id" uuid not null, "device_id" uuid not null, "name" varchar(200) not null, "mac" varchar(50) null, "ipv4" jsonb not null, "ipv6" jsonb not null, "reported_at" timestamptz not null, constraint "device_network_interface_pkey" primary key ("id"));`);
    this.addSql(`create index "device_network_interface_device_id_index" on "device_network_interface" ("device_id");`);

    this.addSql(`alter table "device_software" add constraint "device_software_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "device_patch" add constraint "device_patch_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "device_network_interface" add constraint "device_network_interface_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);

    // The reported JSON becomes rows: items that are objects with a name (software, network) or an id (patches); dates
    // in the forms agents send (YYYY-MM-DD, YYYYMMDD, an ISO time), others dropped; hardware becomes the device's hardwareInfo.
    this.addSql(`create function "pg_temp"."inventory_date"(value text) returns date language plpgsql as $$
      begin
        return case when value ~ '^\\d{4}-?\\d{2}-?\\d{2}($|T)' then to_date(replace(left(value, 10), '-', ''), 'YYYYMMDD') end;
      exception when others then return null;
      end $$;`);
    this.addSql(`create function "pg_temp"."inventory_items"(part jsonb) returns setof jsonb language sql immutable as $$
      select item from jsonb_array_elements(case when jsonb_typeof(part) = 'array' then part else '[]'::jsonb end) as item where jsonb_typeof(item) = 'object' $$;`);
    this.addSql(`insert into "device_software" ("id", "device_id", "name", "version", "publisher", "install_date", "reported_at")
      select gen_random_uuid(), i."device_id", left(trim(s->>'name'), 500), nullif(left(trim(s->>'version'), 200), ''), nullif(left(trim(s->>'publisher'), 500), ''),
        "pg_temp"."inventory_date"(trim(s->>'installDate')), i."updated_at"
      from "device_inventory" i cross join lateral "pg_temp"."inventory_items"(i."software") s
      where coalesce(trim(s->>'name'), '') <> '';`);
    this.addSql(`insert into "device_patch" ("id", "device_id", "patch_id", "title", "severity", "installed", "installed_at", "reported_at")
      select distinct on (i."device_id", left(trim(p->>'id'), 200)) gen_random_uuid(), i."device_id", left(trim(p->>'id'), 200), nullif(left(trim(p->>'title'), 500), ''),
        nullif(left(trim(p->>'severity'), 50), ''), coalesce(p->'installed' = 'true'::jsonb, false), "pg_temp"."inventory_date"(trim(p->>'installedAt')), i."updated_at"
      from "device_inventory" i cross join lateral "pg_temp"."inventory_items"(i."patches") p
      where coalesce(trim(p->>'id'), '') <> '';`);
    this.addSql(`insert into "device_network_interface" ("id", "device_id", "name", "mac", "ipv4", "ipv6", "reported_at")
      select gen_random_uuid(), i."device_id", left(trim(n->>'name'), 200), nullif(left(trim(n->>'mac'), 50), ''),
        case jsonb_typeof(n->'ipv4') when 'string' then jsonb_build_array(n->'ipv4') when 'array' then n->'ipv4' else '[]'::jsonb end,
        case jsonb_typeof(n->'ipv6') when 'string' then jsonb_build_array(n->'ipv6') when 'array' then n->'ipv6' else '[]'::jsonb end,
        i."updated_at"
      from "device_inventory" i cross join lateral "pg_temp"."inventory_items"(
        case when jsonb_typeof(i."network") = 'object' then (select coalesce(jsonb_agg(jsonb_build_object('name', e.key) || e.value), '[]') from jsonb_each(i."network") e where jsonb_typeof(e.value) = 'object') else i."network" end
      ) n
      where coalesce(trim(n->>'name'), '') <> '';`);
    this.addSql(`update "device" set "hardware_info" = i."hardware" from "device_inventory" i where i."device_id" = "device"."id" and jsonb_typeof(i."hardware") = 'object';`);

    this.addSql(`drop table if exists "device_inventory" cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`create table "device_inventory" ("device_id" uuid not null, "hardware" jsonb null, "software" jsonb null, "patches" jsonb null, "network" jsonb null, "updated_at" timestamptz(6) not null, constraint "device_inventory_pkey" primary key ("device_id"));`);

    this.addSql(`alter table "device_inventory" add constraint "device_inventory_device_id_foreign" foreign key ("device_id") references "device" ("id") on update cascade on delete cascade;`);
    // The rows go back as the JSON lists they came from (hardware stays the device's hardwareInfo).
    this.addSql(`insert into "device_inventory" ("device_id", "software", "patches", "network", "updated_at")
      select d."id",
        (select jsonb_agg(jsonb_strip_nulls(jsonb_build_object('name', s."name", 'version', s."version", 'publisher', s."publisher", 'installDate', s."install_date"))) from "device_software" s where s."device_id" = d."id"),
        (select jsonb_agg(jsonb_strip_nulls(jsonb_build_object('id', p."patch_id", 'title', p."title", 'severity', p."severity", 'installed', p."installed", 'installedAt', p."installed_at"))) from "device_patch" p where p."device_id" = d."id"),
        (select jsonb_agg(jsonb_strip_nulls(jsonb_build_object('name', n."name", 'mac', n."mac", 'ipv4', n."ipv4", 'ipv6', n."ipv6"))) from "device_network_interface" n where n."device_id" = d."id"),
        now()
      from "device" d
      where exists (select 1 from "device_software" where "device_id" = d."id") or exists (select 1 from "device_patch" where "device_id" = d."id")
        or exists (select 1 from "device_network_interface" where "device_id" = d."id");`);

    this.addSql(`drop table if exists "device_software" cascade;`);

    this.addSql(`drop table if exists "device_patch" cascade;`);

    this.addSql(`drop table if exists "device_network_interface" cascade;`);
  }

}
