import { AlertConditionState, AlertRule } from '../../../entities/alert.js';
import { RequestContext } from '../../auth/context.js';
import { withTransaction } from '../../db/transaction.js';
import { publishOnCommit } from '../../events/pubsub.js';
import { onePer } from '../../memo.js';
import type { Runtime } from '../../runtime.js';
import { deviceGroupIds, factsOf, findDevices, matches, type DeviceFacts } from '../devices/api.js';
import { dueAt, ruleHolds, ruleTarget } from './alert-conditions.js';
import { RULES_TOPIC, enabledRules, type CachedRule } from './alert-rules.js';
import { RULE_SOURCE, raiseAlert, resolveAlert } from './alert-raise.js';
import { ALERT_STATE_TOPIC } from './alerts.js';

/*
 * Rule evaluation, on arrival of what changes a device's facts (heartbeats, status changes), never by
 * scanning devices. The rules come from the per-instance cache; so does each device's standing per
 * rule (`clear`, `pending` since its conditions started holding, `open` alert), loaded once per
 * device and instance and dropped on every instance when another changes it. A steady heartbeat
 * therefore reads and writes nothing here: only transitions (conditions start holding, fire, clear)
 * write, each in its own transaction that re-reads what it acts on. `checkDueConditions`, a recurring
 * job, fires pending conditions whose time has come without a heartbeat (a device gone silent).
 */

type Standing = { kind: 'pending'; dueAt: number } | { kind: 'open' };

const MAX_CACHED_DEVICES = 100_000;

class DeviceStandings {
  private readonly devices = new Map<string, Promise<Map<string, Standing>>>();

  constructor(private readonly runtime: Runtime) {
    runtime.pubsub.on(ALERT_STATE_TOPIC, (payload) => this.devices.delete((payload as { deviceId: string }).deviceId));
    // A rule change may drop pending conditions of many devices: each reloads on its next evaluation (rule changes are rare).
    runtime.pubsub.on(RULES_TOPIC, () => this.devices.clear());
  }

  forget(deviceId: string): void {
    this.devices.delete(deviceId);
  }

  of(deviceId: string): Promise<Map<string, Standing>> {
    let standings = this.devices.get(deviceId);
    if (!standings) {
      if (this.devices.size >= MAX_CACHED_DEVICES) this.devices.delete(this.devices.keys().next().value!);
      standings = this.load(deviceId);
      this.devices.set(deviceId, standings);
      standings.catch(() => this.devices.get(deviceId) === standings && this.devices.delete(deviceId));
    }
    return standings;
  }

  private async load(deviceId: string): Promise<Map<string, Standing>> {
    const rows = (await this.runtime.orm.em.fork().execute(
      `select rule_id, due_at from alert_condition_state where device_id = ?
        union all select rule_id, null from alert where device_id = ? and rule_id is not null and status <> 'resolved'`,
      [deviceId, deviceId],
    )) as { rule_id: string; due_at: Date | string | null }[];
    const standings = new Map<string, Standing>();
    for (const row of rows) standings.set(row.rule_id, row.due_at === null ? { kind: 'open' } : { kind: 'pending', dueAt: new Date(row.due_at).getTime() });
    return standings;
  }
}

const standings = onePer((runtime: Runtime) => new DeviceStandings(runtime));

/** In a transition's transaction: every instance reloads the device's standings once it commits. */
async function standingChanged(tx: RequestContext, deviceId: string): Promise<void> {
  await publishOnCommit(tx.em, ALERT_STATE_TOPIC, { deviceId });
  tx.afterCommit(async () => standings(tx.runtime).forget(deviceId));
}

/**
 * Evaluates the organization's rules that watch the device against what is known of it `at` (a
 * heartbeat's arrival; by default now). Called after a heartbeat or status change has committed;
 * never fails its caller (a failure is logged and the next arrival evaluates again).
 */
export async function evaluateDevice(runtime: Runtime, facts: DeviceFacts, at: Date = runtime.clock.now()): Promise<void> {
  try {
    const rules = await enabledRules(runtime, facts.orgId);
    if (rules.length === 0) return;
    const groupIds = rules.some((rule) => rule.targetType === 'group') ? await deviceGroupIds(runtime.orm.em.fork(), facts.id) : [];
    const watching = rules.filter((rule) => matches(facts, ruleTarget(rule), groupIds));
    if (watching.length === 0) return;
    const known = await standings(runtime).of(facts.id);
    const now = at;
    for (const rule of watching) {
      const { holds, reason } = ruleHolds(rule, facts);
      if (holds === null) continue;
      const standing = known.get(rule.id);
      if (holds && !standing) await startHolding(runtime, rule, facts, reason, now);
      else if (holds && standing?.kind === 'pending' && standing.dueAt <= now.getTime()) await fire(runtime, rule.id, facts.id);
      else if (!holds && standing?.kind === 'pending') await stopHolding(runtime, rule.id, facts.id);
      else if (!holds && standing?.kind === 'open' && rule.autoResolve) await autoResolve(runtime, rule, facts.id);
    }
  } catch (error) {
    runtime.log.error({ err: (error as Error).message, deviceId: facts.id }, 'alert evaluation failed');
  }
}

const system = (runtime: Runtime) => RequestContext.system(runtime, 'alerts.evaluate');

/** Conditions started holding: fires now without a duration, else records since when (the due check or a later heartbeat fires it). */
async function startHolding(runtime: Runtime, rule: CachedRule, facts: DeviceFacts, reason: string, now: Date): Promise<void> {
  const due = dueAt(rule, facts, now);
  if (due <= now) return fire(runtime, rule.id, facts.id, reason);
  await withTransaction(system(runtime), async (tx) => {
    await tx.em.execute(
      `insert into alert_condition_state (id, created_at, updated_at, rule_id, device_id, since, due_at) values (gen_random_uuid(), now(), now(), ?, ?, ?, ?)
        on conflict (rule_id, device_id) do nothing`,
      [rule.id, facts.id, now, due],
    );
    await standingChanged(tx, facts.id);
  });
}

async function stopHolding(runtime: Runtime, ruleId: string, deviceId: string): Promise<void> {
  await withTransaction(system(runtime), async (tx) => {
    await tx.em.nativeDelete(AlertConditionState, { ruleId, deviceId });
    await standingChanged(tx, deviceId);
  });
}

/** A rule's alerts are one per rule and device. */
const ruleDedupKey = (ruleId: string, deviceId: string) => `${ruleId}:${deviceId}`;

/**
 * Raises the rule's alert for the device through `raiseAlert` (dedup, cooldown, maintenance
 * suppression, correlation, policies), under a lock of the pair so its condition state is decided
 * from the rows themselves: within `cooldownMinutes` of the last one resolving the condition waits,
 * due when the cooldown ends; otherwise the condition is settled.
 */
async function fire(runtime: Runtime, ruleId: string, deviceId: string, reason?: string): Promise<void> {
  await withTransaction(system(runtime), async (tx) => {
    await tx.em.execute('select pg_advisory_xact_lock(hashtext(?))', [`alert:${ruleId}:${deviceId}`]);
    const [rule, [device]] = await Promise.all([tx.em.findOne(AlertRule, { id: ruleId }), findDevices(tx, { ids: [deviceId] }, { scope: 'all' })]);
    await standingChanged(tx, deviceId);
    const raised =
      rule?.enabled && device
        ? await raiseAlert(tx, {
            orgId: device.orgId,
            deviceId,
            source: RULE_SOURCE,
            sourceId: ruleId,
            severity: rule.severity,
            title: `${rule.name}: ${device.hostname}`,
            message: reason ?? (ruleHolds(rule, factsOf(device)).reason || null),
            dedupKey: ruleDedupKey(ruleId, deviceId),
            cooldownMinutes: rule.cooldownMinutes,
            groupId: rule.targetType === 'group' ? rule.targetId : null,
          })
        : null;
    if (raised?.outcome !== 'cooling') {
      await tx.em.nativeDelete(AlertConditionState, { ruleId, deviceId });
      return;
    }
    await tx.em.execute(
      `insert into alert_condition_state (id, created_at, updated_at, rule_id, device_id, since, due_at) values (gen_random_uuid(), now(), now(), ?, ?, ?, ?)
        on conflict (rule_id, device_id) do update set due_at = greatest(alert_condition_state.due_at, excluded.due_at), updated_at = now()`,
      [ruleId, deviceId, tx.runtime.clock.now(), raised.until],
    );
  });
}

/** The conditions cleared: the open alert (active, acknowledged or suppressed) resolves. */
async function autoResolve(runtime: Runtime, rule: CachedRule, deviceId: string): Promise<void> {
  await withTransaction(system(runtime), async (tx) => {
    await standingChanged(tx, deviceId);
    await resolveAlert(tx, { orgId: rule.orgId, source: RULE_SOURCE, dedupKey: ruleDedupKey(rule.id, deviceId), note: 'conditions cleared' });
  });
}

const DUE_BATCH = 500;

/**
 * The recurring check: pending conditions whose time has come are decided on the device as it is
 * now (its last heartbeat's data): fired when they still hold, dropped when not. Answers how many it looked at.
 */
export async function checkDueConditions(ctx: RequestContext): Promise<number> {
  const due = await ctx.em.find(AlertConditionState, { dueAt: { $lte: ctx.runtime.clock.now() } }, { orderBy: { dueAt: 'asc' }, limit: DUE_BATCH, disableIdentityMap: true });
  for (const state of due) {
    const [rule, [device]] = await Promise.all([
      ctx.em.findOne(AlertRule, { id: state.ruleId }, { disableIdentityMap: true }),
      findDevices(ctx, { ids: [state.deviceId] }, { scope: 'all', detached: true }),
    ]);
    const holds = rule && device ? ruleHolds(rule, factsOf(device)).holds : false;
    if (holds === false) await stopHolding(ctx.runtime, state.ruleId, state.deviceId);
    else await fire(ctx.runtime, state.ruleId, state.deviceId);
  }
  return due.length;
}
