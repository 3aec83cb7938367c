import { LockMode } from '@mikro-orm/core';
import { Rollout, RolloutDevice, type PauseReason, type RolloutDeviceStatus, type WavePlan } from '../../../entities/deployment.js';
import type { RequestContext } from '../../auth/context.js';
import { uuidArray } from '../../db/arrays.js';
import { recordAudit } from '../audit/api.js';
import { cancelQueuedCommands, findDevices, toTarget } from '../devices/api.js';
import { rolloutKinds } from './kinds.js';
import type { Outcome } from './rollout-kind.js';

/*
 * Waves: how a rollout's devices are cut into them (at initialize), and the engine that moves a
 * running rollout on: starts the next wave once the current one reached its success threshold,
 * pauses on a threshold missed, completes after the last wave. Every step re-reads the counts under
 * the rollout's row lock, so any caller (a start, a command's result, due work) may call `advance`.
 */

/**
 * Wave sizes for `n` devices: a percent wave takes `ceil(percent * n / 100)` (never more than are
 * left) and the last takes the rest; count waves take their count and leftovers make a last wave.
 * Empty waves are dropped (a small fleet cut in many shares).
 */
export function cutWaves(plan: WavePlan, n: number): number[] {
  const sizes: number[] = [];
  let left = n;
  if ('percent' in plan[0]!) {
    const percents = (plan as { percent: number }[]).map((wave) => wave.percent);
    percents.forEach((percent, i) => {
      const size = i === percents.length - 1 ? left : Math.min(left, Math.ceil((percent * n) / 100));
      sizes.push(size);
      left -= size;
    });
  } else {
    for (const { count } of plan as { count: number }[]) {
      const size = Math.min(left, count);
      sizes.push(size);
      left -= size;
    }
    if (left > 0) sizes.push(left);
  }
  return sizes.filter((size) => size > 0);
}

/** One wave's devices by status. */
export interface WaveCounts {
  size: number;
  pending: number;
  running: number;
  succeeded: number;
  failed: number;
  cancelled: number;
}

const emptyCounts = (): WaveCounts => ({ size: 0, pending: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 });

/** The rollouts' waves with their counts, by rollout then wave (1…): one grouped statement. */
export async function waveCounts(ctx: RequestContext, rolloutIds: readonly string[]): Promise<Map<string, Map<number, WaveCounts>>> {
  const result = new Map<string, Map<number, WaveCounts>>(rolloutIds.map((id) => [id, new Map()]));
  if (rolloutIds.length === 0) return result;
  const rows = (await ctx.em.execute(
    `select rollout_id, wave, status, count(*)::int as n from rollout_device where rollout_id = any(?::uuid[]) group by rollout_id, wave, status`,
    [uuidArray(rolloutIds)],
  )) as { rollout_id: string; wave: number; status: RolloutDeviceStatus; n: number }[];
  for (const row of rows) {
    const waves = result.get(row.rollout_id)!;
    const counts = waves.get(row.wave) ?? emptyCounts();
    counts[row.status] += row.n;
    counts.size += row.n;
    waves.set(row.wave, counts);
  }
  for (const [id, waves] of result) result.set(id, new Map([...waves].sort(([a], [b]) => a - b)));
  return result;
}

/**
 * Hands the rollout's change to these rows' devices and records what that did to each (a queued
 * command, a start, a failure). Their start is taken before the hand-out: what it caused (a policy's
 * evaluation) is never older than the start it is compared with.
 */
export async function handOut(tx: RequestContext, rollout: Rollout, rows: RolloutDevice[]): Promise<void> {
  const startedAt = tx.runtime.clock.now();
  // Only devices still active in the rollout's organization get its change (one may have moved or gone since initialize); the rest fail.
  const present = new Set((await findDevices(tx, { target: toTarget({ orgId: rollout.orgId }), ids: rows.map((row) => row.deviceId), active: true }, { scope: 'all', fields: ['id'], orderBy: 'id' })).map((d) => d.id));
  const reachable = rows.filter((row) => present.has(row.deviceId));
  const outcomes = reachable.length > 0 ? await rolloutKinds[rollout.type].handOut(tx, rollout, reachable) : new Map<string, Outcome>();
  for (const row of rows) if (!present.has(row.deviceId)) outcomes.set(row.deviceId, { failed: 'the device is no longer an active device of the organization' });
  const now = tx.runtime.clock.now();
  for (const row of rows) {
    const outcome = outcomes.get(row.deviceId) ?? { failed: 'the change could not be handed to the device' };
    row.startedAt = startedAt;
    if ('commandId' in outcome) {
      row.commandId = outcome.commandId;
    } else if ('started' in outcome) {
      row.status = 'running';
    } else {
      row.status = 'failed';
      row.reason = outcome.failed.slice(0, 500);
      row.finishedAt = now;
    }
  }
}

/** Hands the rollout's change to devices of started waves that wait for it (pending, nothing queued). */
export async function handOutWaiting(tx: RequestContext, rollout: Rollout, wave?: number): Promise<void> {
  const rows = await tx.em.find(
    RolloutDevice,
    { rolloutId: rollout.id, status: 'pending', commandId: null, wave: wave ?? { $lte: rollout.currentWave } },
    { orderBy: { position: 'asc' } },
  );
  if (rows.length === 0) return;
  await handOut(tx, rollout, rows);
  await tx.em.flush();
}

/**
 * Stops handing out: commands queued for devices whose agent has not taken them yet are cancelled
 * (the devices stay `pending`, their turn comes again on resume). A command its agent took meanwhile
 * keeps running, and so does its device.
 */
async function withdrawQueued(tx: RequestContext, rollout: Rollout): Promise<void> {
  const waiting = await tx.em.find(RolloutDevice, { rolloutId: rollout.id, status: 'pending', commandId: { $ne: null } });
  const cancelled = new Set(await cancelQueuedCommands(tx, waiting.map((row) => row.commandId!), { tellTypes: true }));
  for (const row of waiting) {
    if (cancelled.has(row.commandId!)) {
      row.commandId = null;
      row.startedAt = null;
    } else {
      // Its agent took it (the event saying so may still be on its way).
      row.status = 'running';
    }
  }
  await tx.em.flush();
}

/** Pauses a running rollout; nothing new is handed out until it resumes. */
export async function pauseRollout(tx: RequestContext, rollout: Rollout, reason: PauseReason): Promise<void> {
  rollout.status = 'paused';
  rollout.pauseReason = reason;
  await withdrawQueued(tx, rollout);
  await tx.em.flush();
}

/** Cancels a rollout: devices whose change was not handed out become `cancelled`; those under way go on. */
export async function cancelRolloutDevices(tx: RequestContext, rollout: Rollout): Promise<void> {
  await withdrawQueued(tx, rollout);
  const now = tx.runtime.clock.now();
  for (const row of await tx.em.find(RolloutDevice, { rolloutId: rollout.id, status: 'pending' })) {
    row.status = 'cancelled';
    row.finishedAt = now;
  }
  await tx.em.flush();
}

/** The share of `part` in `whole` reaches `percent` (an empty whole always does). */
const reaches = (part: number, whole: number, percent: number) => part * 100 >= percent * whole;

/**
 * Moves a running rollout on as far as it goes now (see the module's comment); the caller holds the
 * rollout's row lock. Auto-pauses and completion are audited as the system's.
 */
export async function advance(tx: RequestContext, rollout: Rollout): Promise<void> {
  for (;;) {
    if (rollout.status !== 'running') return;
    const waves = (await waveCounts(tx, [rollout.id])).get(rollout.id)!;
    const last = Math.max(0, ...waves.keys());
    const started = [...waves].filter(([index]) => index <= rollout.currentWave).map(([, counts]) => counts);
    const startedCount = started.reduce((n, w) => n + w.size, 0);
    const failed = started.reduce((n, w) => n + w.failed, 0) - rollout.acceptedFailures;
    if (startedCount > 0 && failed * 100 > rollout.failureThresholdPercent * startedCount) {
      await autoPause(tx, rollout, 'failure_threshold', { failed, started: startedCount });
      return;
    }
    const current = waves.get(rollout.currentWave) ?? emptyCounts();
    const settled = current.pending + current.running === 0;
    const passed = rollout.acceptedWave >= rollout.currentWave || reaches(current.succeeded, current.size - current.cancelled, rollout.successThresholdPercent);
    if (passed && rollout.currentWave < last) {
      rollout.currentWave += 1;
      await handOutWaiting(tx, rollout, rollout.currentWave);
      continue;
    }
    if (settled && !passed) {
      await autoPause(tx, rollout, 'success_threshold', { wave: rollout.currentWave, succeeded: current.succeeded, size: current.size });
      return;
    }
    if (rollout.currentWave >= last && started.every((w) => w.pending + w.running === 0)) {
      rollout.status = 'completed';
      rollout.completedAt = tx.runtime.clock.now();
      await tx.em.flush();
      await recordAudit(tx, { action: 'deployment.complete', resourceType: 'deployment', resourceId: rollout.id, orgId: rollout.orgId, details: { name: rollout.name } });
    }
    return;
  }
}

async function autoPause(tx: RequestContext, rollout: Rollout, reason: PauseReason, details: Record<string, unknown>): Promise<void> {
  await pauseRollout(tx, rollout, reason);
  await recordAudit(tx, { action: 'deployment.auto_pause', resourceType: 'deployment', resourceId: rollout.id, orgId: rollout.orgId, details: { name: rollout.name, reason, ...details } });
}

/** The rollout under its row lock, read afresh; null when it is gone. */
export function lockRollout(tx: RequestContext, id: string): Promise<Rollout | null> {
  return tx.em.findOne(Rollout, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
}
