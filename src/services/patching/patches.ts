import type { FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import type { Device } from '../../../entities/device.js';
import { Patch, PatchDeviceStatus } from '../../../entities/patch.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, isUuid, loadOwned, permits, tenantSql, tenantWhere } from '../../auth/policy.js';
import { uuidArray } from '../../db/arrays.js';
import { containsPattern } from '../../db/like.js';
import { requestRows, statement } from '../../db/prepared.js';
import { notFound } from '../../errors.js';
import { emitMany } from '../../events/outbox.js';
import { cursorListFields, cursorPageSchema, finishCursorPage, keysetWhere } from '../../pagination.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { findDevices, inventoryPart, siteLimitedDevicesSql } from '../devices/api.js';
import { applyPatchPoliciesToDevice, policiesTargeting } from './auto-approval.js';
import { installForDevice } from './patch-jobs.js';
import { ENRICH_JOB } from './cve-enrichment.js';
import { boundedJson } from '../shared/json.js';
import { requiredText as text, optionalText } from '../shared/text.js';
import { shownWhen } from '../../events/sight.js';

/*
 * Patches: what an organization's agents report missing or installed (the inventory's `patches` part),
 * one row per organization, source and the source's identifier, with each device's status of it, and
 * the approval state the patch approvals (patch-approvals.ts) decide.
 */

export const RESOURCE = 'Patch';

export const PATCH_SOURCES = ['microsoft', 'apple', 'linux', 'third_party', 'custom'] as const;
export const PATCH_SEVERITIES = ['critical', 'important', 'moderate', 'low', 'unknown'] as const;
export const PATCH_INSTALL_STATUSES = ['missing', 'installed', 'failed', 'pending_reboot'] as const;
export const APPROVAL_STATUSES = ['pending', 'approved', 'declined', 'deferred'] as const;

export const PatchSourceSchema = z
  .enum(PATCH_SOURCES)
  .meta({ title: 'PatchSource', description: 'Where a patch comes from' })
  .register(enumValues, {
    microsoft: 'Windows Update (a KB).',
    apple: 'Apple software updates.',
    linux: 'A Linux distribution’s package manager.',
    third_party: 'A third-party application’s vendor.',
    custom: 'Anything else the agent reports.',
  });
export const PatchSeveritySchema = z
  .enum(PATCH_SEVERITIES)
  .meta({ title: 'PatchSeverity', description: 'How serious what a patch fixes is, as its source rates it' })
  .register(enumValues, {
    critical: 'Fixes a flaw that can be exploited without user action.',
    important: 'Fixes a serious flaw.',
    moderate: 'Fixes a flaw of limited reach.',
    low: 'Fixes a minor flaw.',
    unknown: 'Not rated by its source.',
  });
export const PatchInstallStatusSchema = z
  .enum(PATCH_INSTALL_STATUSES)
  .meta({ title: 'PatchInstallStatus', description: 'A patch’s state on a device, as its agent last reported it' })
  .register(enumValues, {
    missing: 'Applicable and not installed.',
    installed: 'Installed.',
    failed: 'Its installation failed.',
    pending_reboot: 'Installed, waiting for a restart.',
  });
export const ApprovalStatusSchema = z
  .enum(APPROVAL_STATUSES)
  .meta({ title: 'PatchApprovalStatus', description: 'Whether a patch may be installed' })
  .register(enumValues, {
    pending: 'No decision yet (or a deferral that has run out).',
    approved: 'May be installed.',
    declined: 'Must not be installed.',
    deferred: 'Decided later: pending again once `deferUntil` has passed.',
  });

// ── the agents' report ──────────────────────────────────────────────────────────────────────────

/** At most this many patches per report, written this many per statement. */
const MAX_ITEMS = 20_000;
const WRITE_BATCH = 2_000;

/** A calendar date (`YYYY-MM-DD`, or an ISO time whose date is kept). */
const releaseDate = z
  .string()
  .trim()
  .regex(/^\d{4}-\d{2}-\d{2}($|T)/, { message: 'must be a date (YYYY-MM-DD or an ISO date-time)' })
  .transform((value) => value.slice(0, 10))
  .refine((day) => new Date(`${day}T00:00:00Z`).toISOString().startsWith(day), { message: 'must be a real calendar date' })
  .nullish()
  .transform((value) => value ?? null);

/** One patch as an agent reports it; other fields are ignored. */
const ReportedPatchSchema = z.object({
  source: PatchSourceSchema,
  externalId: text(200),
  title: text(500),
  severity: PatchSeveritySchema.nullish().transform((value) => value ?? 'unknown'),
  kbNumber: optionalText(50),
  packageName: optionalText(300),
  version: optionalText(200),
  vendor: optionalText(200),
  releaseDate,
  status: PatchInstallStatusSchema,
});
type ReportedPatch = z.output<typeof ReportedPatchSchema>;

/*
 * New patches are inserted and changed ones updated; unchanged ones are not written, nor locked (an
 * upsert's `do update … where` would lock every reported row until commit, so every report of an
 * organization's devices, which name the same patches, would queue behind the others).
 */
const MOVED = '(patch.package_name, patch.version) is distinct from (t.package_name, t.version)';
const WRITE_PATCHES = `with t as (
      select * from jsonb_to_recordset(?::jsonb) as t(source text, external_id text, title text, severity text, kb_number text, package_name text, version text, vendor text, release_date date)
    ),
    changed as (
      update patch set title = t.title, severity = t.severity, kb_number = t.kb_number, package_name = t.package_name,
          version = t.version, vendor = t.vendor, release_date = t.release_date, updated_at = ?,
          -- another package or version is enriched anew (cve-enrichment.ts)
          cve_ids = case when ${MOVED} then '[]'::jsonb else patch.cve_ids end,
          cvss_score = case when ${MOVED} then null else patch.cvss_score end,
          enriched_at = case when ${MOVED} then null else patch.enriched_at end
        from t
        where patch.org_id = ? and patch.source = t.source and patch.external_id = t.external_id
          and (patch.title, patch.severity, patch.kb_number, patch.package_name, patch.version, patch.vendor, patch.release_date)
            is distinct from (t.title, t.severity, t.kb_number, t.package_name, t.version, t.vendor, t.release_date)
        returning patch.id, patch.source = 'third_party' and patch.enriched_at is null as unenriched
    ),
    added as (
      insert into patch (id, org_id, source, external_id, title, severity, kb_number, package_name, version, vendor, release_date, cve_ids, approval_status, created_at, updated_at)
        select gen_random_uuid(), ?, t.source, t.external_id, t.title, t.severity, t.kb_number, t.package_name, t.version, t.vendor, t.release_date, '[]'::jsonb, 'pending', ?, ?
          from t
      on conflict (org_id, source, external_id) do nothing
      returning id, source = 'third_party' as unenriched
    )
  select id, false as inserted, unenriched from changed union all select id, true as inserted, unenriched from added`;

const INSERT_STATUSES = `insert into patch_device_status (id, patch_id, device_id, status, reported_at)
    select gen_random_uuid(), p.id, ?, t.status, ?
      from jsonb_to_recordset(?::jsonb) as t(source text, external_id text, status text)
      join patch p on p.org_id = ? and p.source = t.source and p.external_id = t.external_id`;

/**
 * Stores a device's patch report: each patch upserted in its organization by (source, externalId), its
 * catalog fields refreshed from the report; the device's statuses replaced by the reported ones. A
 * patch new to the organization emits `patch.available` (one insert of the outbox for the batch); the
 * patch policies targeting the device then approve its pending patches they match.
 */
async function ingestPatches(tx: RequestContext, device: Device, items: ReportedPatch[]): Promise<void> {
  // One entry per patch: a patch listed twice keeps its last entry.
  const patches = [...new Map(items.map((item) => [`${item.source}\u0000${item.externalId}`, item])).values()];
  const now = tx.runtime.clock.now();
  let unenriched = false;
  await tx.em.nativeDelete(PatchDeviceStatus, { deviceId: device.id });
  for (let i = 0; i < patches.length; i += WRITE_BATCH) {
    const batch = patches.slice(i, i + WRITE_BATCH);
    const catalog = batch.map((p) => ({
      source: p.source,
      external_id: p.externalId,
      title: p.title,
      severity: p.severity,
      kb_number: p.kbNumber,
      package_name: p.packageName,
      version: p.version,
      vendor: p.vendor,
      release_date: p.releaseDate,
    }));
    const written = (await tx.em.execute(WRITE_PATCHES, [JSON.stringify(catalog), now, device.orgId, device.orgId, now, now])) as { id: string; inserted: boolean; unenriched: boolean }[];
    unenriched ||= written.some((row) => row.unenriched);
    const statuses = batch.map((p) => ({ source: p.source, external_id: p.externalId, status: p.status }));
    await tx.em.execute(INSERT_STATUSES, [device.id, now, JSON.stringify(statuses), device.orgId]);
    await emitMany(tx, 'patch.available', written.filter((row) => row.inserted).map((row) => ({ orgId: device.orgId, data: { patchId: row.id } })));
  }
  // The organization's patch policies that target the device approve what they match, in the report's
  // transaction, and its immediate ones install what the device now reports missing and approved.
  const targeting = await policiesTargeting(tx, device);
  await applyPatchPoliciesToDevice(tx, device, targeting);
  await installForDevice(tx, device, targeting);
  // Enriched from the vulnerability database outside the agent's request (the due-work tick retries what this misses).
  if (unenriched) tx.afterCommit(() => tx.runtime.jobs.schedule(ENRICH_JOB, {}));
}

export const patchReport = inventoryPart({ schema: boundedJson(z.array(ReportedPatchSchema).max(MAX_ITEMS)), ingest: ingestPatches });

// ── views ───────────────────────────────────────────────────────────────────────────────────────

const PatchCountsSchema = z
  .object({
    installed: z.number().int().describe('devices that report it installed'),
    missing: z.number().int().describe('devices that report it missing'),
    failed: z.number().int().describe('devices whose installation of it failed'),
    pendingReboot: z.number().int().describe('devices where it waits for a restart'),
  })
  .meta({ title: 'PatchDeviceCounts', description: 'How many of the organization’s devices report the patch in each state' });

export const PatchViewSchema = z
  .object({
    id: uuid().describe('the patch'),
    orgId: uuid().describe('the organization whose agents reported it'),
    source: PatchSourceSchema,
    externalId: z.string().describe('the source’s identifier of the patch'),
    title: z.string().describe('as the last report named it'),
    severity: PatchSeveritySchema,
    kbNumber: z.string().nullable().describe('the KB number (Microsoft patches)'),
    packageName: z.string().nullable().describe('the package it updates'),
    version: z.string().nullable().describe('the version it installs'),
    vendor: z.string().nullable().describe('who publishes it'),
    releaseDate: z.iso.date().nullable().describe('when it was released (YYYY-MM-DD)'),
    cveIds: z.array(z.string()).describe('the vulnerabilities it fixes (enrichment: empty until then)'),
    cvssScore: z.number().nullable().describe('the highest CVSS score of those vulnerabilities (enrichment: null until then)'),
    enrichedAt: timestamp().nullable().describe('when it was last enriched from a vulnerability database; null before'),
    approvalStatus: ApprovalStatusSchema,
    deferUntil: timestamp().nullable().describe('a deferred patch: until when; null otherwise'),
    counts: PatchCountsSchema,
    deviceStatus: PatchInstallStatusSchema.optional().describe('its state on the device the list was filtered by (`deviceId`); absent otherwise'),
    createdAt: timestamp().describe('when an agent of the organization first reported it'),
    updatedAt: timestamp().describe('when its catalog fields or approval last changed'),
  })
  .meta({ title: 'Patch', description: 'A patch an organization’s agents reported, with its approval and how its devices stand' });
export type PatchView = z.output<typeof PatchViewSchema>;

export const PatchDetailSchema = PatchViewSchema.omit({ deviceStatus: true }).extend({
  devices: z
    .array(
      z
        .object({ deviceId: uuid().describe('the device'), hostname: z.string().describe('its hostname'), status: PatchInstallStatusSchema })
        .meta({ title: 'PatchDevice', description: 'A device that reports the patch, and its state there' }),
    )
    .describe('the devices the caller can see that report it, by hostname'),
}).meta({ title: 'PatchDetail', description: 'A patch with the devices that report it' });
export type PatchDetailView = z.output<typeof PatchDetailSchema>;

type Counts = PatchView['counts'];
const NO_COUNTS: Counts = { installed: 0, missing: 0, failed: 0, pendingReboot: 0 };

/** What the approval says now: a deferral whose time has passed is pending again (computed on read, nothing rewrites it). */
export function approvalNow(patch: Pick<Patch, 'approvalStatus' | 'deferUntil'>, now: Date): { approvalStatus: PatchView['approvalStatus']; deferUntil: string | null } {
  if (patch.approvalStatus === 'deferred') {
    return patch.deferUntil && patch.deferUntil > now ? { approvalStatus: 'deferred', deferUntil: patch.deferUntil.toISOString() } : { approvalStatus: 'pending', deferUntil: null };
  }
  return { approvalStatus: patch.approvalStatus as PatchView['approvalStatus'], deferUntil: null };
}

/** A `date` column as `YYYY-MM-DD`, whichever way the driver hands it over. */
const dayOf = (value: string | Date | null) => (value instanceof Date ? value.toISOString().slice(0, 10) : value);

function patchView(patch: Patch, now: Date, counts: Counts = NO_COUNTS): PatchView {
  return {
    id: patch.id,
    orgId: patch.orgId,
    source: patch.source as PatchView['source'],
    externalId: patch.externalId,
    title: patch.title,
    severity: patch.severity as PatchView['severity'],
    kbNumber: patch.kbNumber,
    packageName: patch.packageName,
    version: patch.version,
    vendor: patch.vendor,
    releaseDate: dayOf(patch.releaseDate),
    cveIds: patch.cveIds,
    cvssScore: patch.cvssScore,
    enrichedAt: patch.enrichedAt?.toISOString() ?? null,
    ...approvalNow(patch, now),
    counts,
    createdAt: patch.createdAt.toISOString(),
    updatedAt: patch.updatedAt.toISOString(),
  };
}

interface CountRow {
  patch_id: string;
  installed: number;
  missing: number;
  failed: number;
  pending_reboot: number;
  device_status: string | null;
}

/** The views of a page of patches: their counts (and one device's statuses) in one statement for the page. */
async function patchViews(ctx: RequestContext, patches: Patch[], deviceId?: string): Promise<PatchView[]> {
  if (patches.length === 0) return [];
  // A caller limited to some sites counts their devices only.
  const sites = siteLimitedDevicesSql(ctx, 'device_id');
  const rows = (await ctx.em.execute(
    `select patch_id,
        count(*) filter (where status = 'installed')::int as installed, count(*) filter (where status = 'missing')::int as missing,
        count(*) filter (where status = 'failed')::int as failed, count(*) filter (where status = 'pending_reboot')::int as pending_reboot,
        max(status) filter (where device_id = ?) as device_status
      from patch_device_status where patch_id = any(?::uuid[]) ${sites ? `and ${sites.sql}` : ''} group by patch_id`,
    [deviceId ?? null, uuidArray(patches.map((p) => p.id)), ...(sites?.params ?? [])],
  )) as CountRow[];
  const byPatch = new Map(rows.map((r) => [r.patch_id, r]));
  const now = ctx.runtime.clock.now();
  return patches.map((patch) => {
    const row = byPatch.get(patch.id);
    const view = patchView(patch, now, row ? { installed: row.installed, missing: row.missing, failed: row.failed, pendingReboot: row.pending_reboot } : NO_COUNTS);
    return deviceId ? { ...view, deviceStatus: (row?.device_status ?? undefined) as PatchView['deviceStatus'] } : view;
  });
}

/** One patch's view (the approvals answer it). */
export async function viewOf(ctx: RequestContext, patch: Patch): Promise<PatchView> {
  const [view] = await patchViews(ctx, [patch]);
  return view!;
}

export function requirePatch(ctx: RequestContext, id: string, permission: 'patches:read' | 'patches:write'): Promise<Patch> {
  return loadOwned(ctx, Patch, id, permission, { resource: RESOURCE });
}

// ── lists ───────────────────────────────────────────────────────────────────────────────────────

const filters = {
  orgId: uuid().optional().describe('only patches of this organization'),
  source: PatchSourceSchema.optional().describe('only patches from this source'),
  severity: PatchSeveritySchema.optional().describe('only patches of this severity'),
  approvalStatus: ApprovalStatusSchema.optional().describe('only patches whose approval is now this (an expired deferral counts as pending)'),
  search: z.string().trim().min(1).max(200).optional().describe('text found, in any case, in the title, externalId, kbNumber or packageName'),
  deviceId: uuid().optional().describe('only patches this device reports; each item then carries its `deviceStatus`'),
};
const PatchFilters = z.strictObject(filters);
export const PatchListQuery = z.strictObject({ ...filters, ...cursorListFields });
export type PatchListInput = z.input<typeof PatchListQuery>;

export const PatchPageSchema = cursorPageSchema(PatchViewSchema, 'PatchPage', 'patches, newest first');
export type PatchPage = z.output<typeof PatchPageSchema>;

type PatchFilters = z.output<z.ZodObject<typeof filters>>;

async function patchFilter(ctx: RequestContext, query: PatchFilters): Promise<FilterQuery<Patch>> {
  await authorize(ctx, 'patches:read');
  const where: FilterQuery<Patch>[] = [(await tenantWhere<Patch>(ctx, { org: 'orgId', requestedOrgId: query.orgId })) ?? {}];
  if (query.source) where.push({ source: query.source });
  if (query.severity) where.push({ severity: query.severity });
  if (query.approvalStatus) {
    const now = ctx.runtime.clock.now();
    if (query.approvalStatus === 'pending') where.push({ $or: [{ approvalStatus: 'pending' }, { approvalStatus: 'deferred', $or: [{ deferUntil: null }, { deferUntil: { $lte: now } }] }] });
    else if (query.approvalStatus === 'deferred') where.push({ approvalStatus: 'deferred', deferUntil: { $gt: now } });
    else where.push({ approvalStatus: query.approvalStatus });
  }
  if (query.search) {
    const like = { $ilike: containsPattern(query.search) };
    where.push({ $or: [{ title: like }, { externalId: like }, { kbNumber: like }, { packageName: like }] });
  }
  if (query.deviceId) {
    // The device must be one the caller sees (its organization and, for users limited to some sites, its site).
    const [device] = await findDevices(ctx, { ids: [query.deviceId] }, { fields: ['orgId'] });
    if (!device) throw notFound('Device');
    where.push({ orgId: device.orgId, deviceStatuses: { deviceId: device.id } });
  }
  return { $and: where } as FilterQuery<Patch>;
}

async function patchPage(ctx: RequestContext, filter: FilterQuery<Patch>, cursor: string | undefined, limit: number) {
  const keyset = keysetWhere('createdAt', 'date', 'desc', cursor);
  const rows = await ctx.em.find(Patch, { $and: [filter, keyset.where] } as FilterQuery<Patch>, { orderBy: keyset.orderBy, limit: limit + 1 });
  return finishCursorPage(rows, limit, (p) => p.createdAt.toISOString());
}

/** The patches of the organizations the caller sees, newest first, in keyset pages. */
export async function listPatches(ctx: RequestContext, raw: PatchListInput): Promise<PatchPage> {
  const query = parseInput(PatchListQuery, raw);
  const page = await patchPage(ctx, await patchFilter(ctx, query), query.cursor, query.limit);
  return { data: await patchViews(ctx, page.items, query.deviceId), nextCursor: page.nextCursor };
}

/** How many patches the list's filters select (its connection's `totalCount`). */
export async function countPatches(ctx: RequestContext, raw: z.input<typeof PatchFilters>): Promise<number> {
  return ctx.em.count(Patch, await patchFilter(ctx, parseInput(PatchFilters, raw)));
}

/** One patch, with the devices the caller can see that report it. */
export async function getPatch(ctx: RequestContext, id: string): Promise<PatchDetailView> {
  const patch = await requirePatch(ctx, id, 'patches:read');
  const statuses = await ctx.em.find(PatchDeviceStatus, { patchId: patch.id }, { disableIdentityMap: true });
  const statusOf = new Map(statuses.map((s) => [s.deviceId, s.status as PatchView['deviceStatus'] & string]));
  const devices = statuses.length === 0 ? [] : await findDevices(ctx, { ids: [...statusOf.keys()] }, { fields: ['hostname'] });
  return { ...(await viewOf(ctx, patch)), devices: devices.map((d) => ({ deviceId: d.id, hostname: d.hostname, status: statusOf.get(d.id)! })) };
}

// ── sources ─────────────────────────────────────────────────────────────────────────────────────

export const PatchSourcesQuery = z.strictObject({ orgId: uuid().optional().describe('only this organization’s patches') });
export type PatchSourcesInput = z.input<typeof PatchSourcesQuery>;
export const PatchSourceListSchema = z
  .object({
    data: z
      .array(
        z
          .object({
            source: PatchSourceSchema,
            patchCount: z.number().int().describe('patches from this source'),
            missingCount: z.number().int().describe('of those, the patches at least one device reports missing'),
          })
          .meta({ title: 'PatchSourceSummary', description: 'The patches of one source' }),
      )
      .describe('every source, in a fixed order, also those with no patches'),
  })
  .meta({ title: 'PatchSourceList', description: 'The patches per source, of the organizations the caller sees' });
export type PatchSourceList = z.output<typeof PatchSourceListSchema>;

export async function listPatchSources(ctx: RequestContext, raw: PatchSourcesInput = {}): Promise<PatchSourceList> {
  const query = parseInput(PatchSourcesQuery, raw);
  await authorize(ctx, 'patches:read');
  const tenant = await tenantSql(ctx, { org: 'p.org_id', requestedOrgId: query.orgId });
  // A caller limited to some sites counts their devices' missing patches only.
  const sites = siteLimitedDevicesSql(ctx, 's.device_id');
  const rows = await requestRows<{ source: string; patch_count: number; missing_count: number }>(
    ctx.em,
    statement(`select p.source, count(*)::int as patch_count,
        count(*) filter (where exists (select 1 from patch_device_status s where s.patch_id = p.id and s.status = 'missing'${sites ? ` and ${sites.sql}` : ''}))::int as missing_count
      from patch p ${tenant ? `where ${tenant.sql}` : ''} group by p.source`),
    [...(sites?.params ?? []), ...(tenant?.params ?? [])],
  );
  const bySource = new Map(rows.map((r) => [r.source, r]));
  return { data: PATCH_SOURCES.map((source) => ({ source, patchCount: bySource.get(source)?.patch_count ?? 0, missingCount: bySource.get(source)?.missing_count ?? 0 })) };
}

/** Of `ids`, the patches of the organizations the caller sees (ids that are not uuids find nothing). */
export async function visiblePatches(ctx: RequestContext, ids: readonly string[]): Promise<Patch[]> {
  const wanted = [...new Set(ids.filter(isUuid).map((id) => id.toLowerCase()))];
  if (wanted.length === 0) return [];
  const tenant = (await tenantWhere<Patch>(ctx, { org: 'orgId' })) ?? {};
  return ctx.em.find(Patch, { $and: [tenant, { id: { $in: wanted } }] } as FilterQuery<Patch>);
}

/** As the patch lists show patches: to the organization's patch readers (patches are organization-wide). */
export const patchEventSight = shownWhen((ctx, event) => permits(ctx, 'patches:read', { orgId: event.orgId! }));
