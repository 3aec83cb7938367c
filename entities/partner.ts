import { Entity, Property } from '@mikro-orm/core';
import { BaseEntity } from './base.js';

export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** Spec Versioning 7: the days and UTC times (`HH:MM`) during which agents may update themselves. */
export interface AgentUpdateWindow {
  days: Weekday[];
  startUtc: string;
  endUtc: string;
}

/** Settings shared by partners and organizations (an organization's values override its partner's). */
export interface TenantSettings {
  agentUpdateWindow?: AgentUpdateWindow | null;
}

/** An MSP: owns organizations. */
@Entity()
export class Partner extends BaseEntity<'status' | 'requireMfa' | 'settings' | 'contactEmail'> {
  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'string', length: 20 })
  status: 'active' | 'suspended' = 'active';

  /** every member of the partner must sign in with a second factor */
  @Property({ type: 'boolean' })
  requireMfa = false;

  @Property({ type: 'string', length: 255, nullable: true })
  contactEmail: string | null = null;

  @Property({ type: 'json' })
  settings: TenantSettings = {};
}
