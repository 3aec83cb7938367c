import type { z } from 'zod';
import type { Rollout, RolloutDevice, RolloutPayload } from '../../../entities/deployment.js';
import type { RequestContext } from '../../auth/context.js';
import type { Permission } from '../../auth/permissions.js';

/** What handing a device its change did: a command queued (pending until its agent takes it), started at once (running), or failed. */
export type Outcome = { commandId: string } | { started: true } | { failed: string };

/** A settled device of a type checked in due work: its final status and what it settled as. */
export interface Settled {
  status: 'succeeded' | 'failed';
  reason: string | null;
}

export interface RolloutKind {
  /** what the caller must hold on the organization to create or start one (nobody grants what they do not hold) */
  permission: Permission;
  payload: z.ZodType<RolloutPayload>;
  /** checks what the payload names, as the caller (another organization's: 404) */
  check(ctx: RequestContext, orgId: string, payload: RolloutPayload): Promise<void>;
  /** hands the change to these devices of their wave, in the caller's transaction */
  handOut(tx: RequestContext, rollout: Rollout, rows: RolloutDevice[]): Promise<Map<string, Outcome>>;
  /** for types not carried by a command: which of these running devices settled, checked now */
  settle?(ctx: RequestContext, rollout: Rollout, rows: RolloutDevice[]): Promise<Map<string, Settled>>;
  /** devices that just settled: undo what held them (an agent version pin) */
  release?(tx: RequestContext, deviceIds: string[]): Promise<void>;
}
