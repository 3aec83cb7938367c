import { RolloutDevice } from '../../../entities/deployment.js';
import type { RequestContext } from '../../auth/context.js';
import { withTransaction } from '../../db/transaction.js';
import type { DomainEvent, DomainEventMap } from '../../events/types.js';
import { rolloutKinds } from './kinds.js';
import { advance, lockRollout } from './waves.js';

/*
 * How devices' outcomes reach their rollouts: command results (script, software) by commandId from
 * the committed `device.command_updated` events, and checks in due work for the types no command
 * carries (policy: evaluated; agent_version: heartbeats the version).
 */

type CommandUpdate = DomainEventMap['device.command_updated'];

const FINAL: Record<string, 'succeeded' | 'failed'> = { completed: 'succeeded', failed: 'failed', timeout: 'failed', cancelled: 'failed' };

/** Records the commands' news on the rollout devices they carry (matched by commandId; others' commands are ignored), then moves their rollouts on. */
export async function recordCommandUpdates(sys: RequestContext, events: DomainEvent[]): Promise<void> {
  const updates = events.map((event) => event.data as CommandUpdate).filter((data) => data.status === 'sent' || data.status in FINAL);
  if (updates.length === 0) return;
  await withTransaction(sys, async (tx) => {
    const rows = await tx.em.find(RolloutDevice, { commandId: { $in: [...new Set(updates.map((u) => u.commandId))] } });
    if (rows.length === 0) return;
    const byCommand = new Map(rows.map((row) => [row.commandId!, row]));
    const now = tx.runtime.clock.now();
    const touched = new Set<string>();
    for (const update of updates) {
      const row = byCommand.get(update.commandId);
      if (!row || row.status === 'succeeded' || row.status === 'failed' || row.status === 'cancelled') continue;
      if (update.status === 'sent') {
        row.status = 'running';
      } else {
        row.status = FINAL[update.status]!;
        row.reason = row.status === 'failed' ? `the command ended ${update.status}` : null;
        row.finishedAt = now;
      }
      touched.add(row.rolloutId);
    }
    await tx.em.flush();
    for (const id of [...touched].sort()) await advanceRollout(tx, id);
  });
}

async function advanceRollout(tx: RequestContext, id: string): Promise<void> {
  const rollout = await lockRollout(tx, id);
  if (rollout) await advance(tx, rollout);
}

/** At most this many running devices are checked a tick (oldest first). */
const SETTLE_BATCH = 1000;

/**
 * Due work: checks the running devices of the types no command carries (any rollout status: a
 * cancelled rollout's devices under way still finish) and moves their rollouts on.
 */
export async function settleRunningDevices(ctx: RequestContext): Promise<void> {
  const types = Object.entries(rolloutKinds).filter(([, kind]) => kind.settle).map(([type]) => type);
  const rows = (await ctx.em.execute(
    `select d.rollout_id, d.device_id from rollout_device d join rollout r on r.id = d.rollout_id
      where d.status = 'running' and r.type = any(?::text[]) order by d.started_at, d.id limit ?`,
    [`{${types.join(',')}}`, SETTLE_BATCH],
  )) as { rollout_id: string; device_id: string }[];
  const byRollout = new Map<string, string[]>();
  for (const row of rows) byRollout.set(row.rollout_id, [...(byRollout.get(row.rollout_id) ?? []), row.device_id]);
  for (const [rolloutId, deviceIds] of byRollout) {
    await withTransaction(ctx, async (tx) => {
      const rollout = await lockRollout(tx, rolloutId);
      if (!rollout) return;
      const kind = rolloutKinds[rollout.type];
      const running = await tx.em.find(RolloutDevice, { rolloutId, deviceId: { $in: deviceIds }, status: 'running' });
      const settled = await kind.settle!(tx, rollout, running);
      const done = running.filter((row) => settled.has(row.deviceId));
      if (done.length === 0) return;
      const now = tx.runtime.clock.now();
      for (const row of done) {
        const outcome = settled.get(row.deviceId)!;
        Object.assign(row, { status: outcome.status, reason: outcome.reason, finishedAt: now });
      }
      await tx.em.flush();
      await kind.release?.(tx, done.map((row) => row.deviceId));
      await advance(tx, rollout);
    });
  }
}
