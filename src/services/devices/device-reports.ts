import { z } from 'zod';
import type { Device } from '../../../entities/device.js';
import type { RequestContext } from '../../auth/context.js';
import { withTransaction } from '../../db/transaction.js';
import type { Runtime } from '../../runtime.js';
import { parseInput } from '../../validation.js';

/*
 * Device reports as extension points: what an agent reports is handed to the domains that registered
 * for it in their manifests (`deviceReports`, installed by `installDomains`), so the agents service
 * only authenticates, records presence and dispatches, and names no other domain.
 */

/** What is known of a device after a heartbeat or a presence change (left out, `undefined`: not known now). */
export interface DeviceFacts {
  id: string;
  orgId: string;
  siteId: string | null;
  status: Device['status'];
  lastSeenAt: Date;
  metrics: Record<string, unknown> | null | undefined;
  watchdogStatus: string | null | undefined;
  mainAgentSilentSince: Date | null | undefined;
}

export function factsOf(device: Device): DeviceFacts {
  return {
    id: device.id,
    orgId: device.orgId,
    siteId: device.siteId,
    status: device.status,
    lastSeenAt: device.lastSeenAt,
    metrics: device.metrics,
    watchdogStatus: device.watchdogStatus,
    mainAgentSilentSince: device.mainAgentSilentSince,
  };
}

/** One part of the inventory (`software`, `patches`, …): how it is checked and who stores it. */
export interface InventoryPart<S extends z.ZodType = z.ZodType> {
  schema: S;
  /** stores the part as reported, replacing what the device reported before; runs in the report's transaction */
  ingest(tx: RequestContext, device: Device, part: z.output<S>): Promise<void>;
}

/** A domain's listeners for device reports (its manifest's `deviceReports`). */
export interface DeviceReportListeners {
  /**
   * The device's facts after each heartbeat, and after each presence change (back online over the
   * channel, offline by the sweep); `at` is when it was seen. Runs once the report is recorded, on the
   * hot path of the steady heartbeat: a listener with nothing to do must not send a statement.
   * A failure is logged and does not fail the report.
   */
  heartbeat?(runtime: Runtime, facts: DeviceFacts, at: Date): Promise<void>;
  /** inventory parts by name, each owned by one domain */
  inventory?: Record<string, InventoryPart>;
  /**
   * An inventory report of the device was stored (committed), naming the parts it sent: for domains
   * that judge the whole inventory rather than own a part (configuration policies). A failure is
   * logged and does not fail the report.
   */
  inventoryReported?(runtime: Runtime, device: { id: string; orgId: string; siteId: string | null }, parts: string[]): Promise<void>;
}

/** Checks a listener's types while keeping an inventory part's schema tied to its `ingest`. */
export const inventoryPart = <S extends z.ZodType>(part: InventoryPart<S>): InventoryPart => part as unknown as InventoryPart;

let heartbeatListeners: NonNullable<DeviceReportListeners['heartbeat']>[] = [];
let inventoryListeners: NonNullable<DeviceReportListeners['inventoryReported']>[] = [];
let inventoryParts = new Map<string, InventoryPart>();
let inventorySchema: z.ZodType<Record<string, unknown>> = z.object({}).strict();

/** Installs every domain's listeners (at start, from the manifests); a part claimed twice stops start-up. */
export function installDeviceReports(listeners: DeviceReportListeners[]): void {
  heartbeatListeners = listeners.flatMap((l) => (l.heartbeat ? [l.heartbeat] : []));
  inventoryListeners = listeners.flatMap((l) => (l.inventoryReported ? [l.inventoryReported] : []));
  inventoryParts = new Map();
  for (const [name, part] of listeners.flatMap((l) => Object.entries(l.inventory ?? {}))) {
    if (inventoryParts.has(name)) throw new Error(`The inventory part ${name} is registered twice`);
    inventoryParts.set(name, part);
  }
  inventorySchema = z.object(Object.fromEntries([...inventoryParts].map(([name, part]) => [name, part.schema.optional()]))).strict();
}

/** Hands the device's facts to every heartbeat listener, side by side; never fails its caller. */
export async function reportHeartbeat(runtime: Runtime, facts: DeviceFacts, at: Date): Promise<void> {
  await Promise.all(
    heartbeatListeners.map((listener) =>
      listener(runtime, facts, at).catch((error: unknown) => runtime.log.error({ err: error, deviceId: facts.id }, 'a heartbeat listener failed')),
    ),
  );
}

/** Checks every part sent against its owner's schema (an unknown part is 400), then stores them all in one transaction; parts not sent stay as they were. */
export async function ingestInventory(ctx: RequestContext, device: Device, input: Record<string, unknown>): Promise<void> {
  const parts = parseInput(inventorySchema, input);
  await withTransaction(ctx, async (tx) => {
    for (const [name, value] of Object.entries(parts)) if (value !== undefined) await inventoryParts.get(name)!.ingest(tx, device, value);
  });
  const sent = Object.keys(parts).filter((name) => parts[name] !== undefined);
  const reported = { id: device.id, orgId: device.orgId, siteId: device.siteId };
  await Promise.all(
    inventoryListeners.map((listener) =>
      listener(ctx.runtime, reported, sent).catch((error: unknown) => ctx.runtime.log.error({ err: error, deviceId: device.id }, 'an inventory listener failed')),
    ),
  );
}
