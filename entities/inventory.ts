import { randomUUID } from 'node:crypto';
import { Entity, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/core';
import { Device } from './device.js';

/*
 * The inventory an agent reported, one row per item, owned by the inventory domain (its software part:
 * entities/software.ts). Each part a device reports replaces that device's rows of the part; parts not
 * reported stay as they were.
 */

/** A network interface the device's last network report listed. */
@Entity()
@Index({ properties: ['deviceId'] })
export class DeviceNetworkInterface {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  deviceId!: string;

  @Property({ type: 'string', length: 200 })
  name!: string;

  @Property({ type: 'string', length: 50, nullable: true })
  mac: string | null = null;

  @Property({ type: 'json' })
  ipv4: string[] = [];

  @Property({ type: 'json' })
  ipv6: string[] = [];

  @Property({ type: 'timestamptz' })
  reportedAt!: Date;
}
