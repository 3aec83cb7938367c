import { LockMode, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { SoftwareCatalog, SoftwareVersion, type SoftwareInstaller } from '../../../entities/software.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, loadOwned, targetOrgId, tenantSql, tenantWhere } from '../../auth/policy.js';
import { escapeLike } from '../../db/like.js';
import { requestRows, statement } from '../../db/prepared.js';
import { withTransaction } from '../../db/transaction.js';
import { conflict } from '../../errors.js';
import { cursorListFields, cursorPageSchema, finishCursorPage, keysetWhere, listSchema } from '../../pagination.js';
import { parseInput, timestamp, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { OsTypeSchema } from '../devices/api.js';
import { applyChanges, providedFields } from '../shared/changes.js';
import { JsonObjectSchema } from '../shared/json.js';
import { optionalText, requiredText } from '../shared/text.js';
import { uniqueNameGuard } from '../shared/unique-name.js';
import { compareVersions } from '../shared/versions.js';

/*
 * An organization's software catalog: packages (unique by name in the organization), their versions
 * with one installer per operating system, and the search over them. Agents fetch the installers; the
 * server never does.
 */

const RESOURCE = 'Software package';

// ── views ───────────────────────────────────────────────────────────────────────────────────────

export const SoftwareCatalogViewSchema = z
  .object({
    id: uuid().describe('the package'),
    orgId: uuid().describe('the organization whose catalog holds it'),
    name: z.string().describe('unique in the organization'),
    vendor: z.string().describe('who publishes it'),
    category: z.string().describe('a free-form category (browser, utility…)'),
    description: z.string().nullable().describe('what it is; null when not given'),
    latestVersion: z.string().nullable().describe('its newest version by dotted-number comparison; null before any'),
    createdAt: timestamp().describe('when it was added'),
    updatedAt: timestamp().describe('when it last changed'),
  })
  .meta({ title: 'SoftwareCatalogEntry', description: 'A package of an organization’s software catalog' });
export type SoftwareCatalogView = z.output<typeof SoftwareCatalogViewSchema>;

const InstallerViewSchema = z
  .object({
    osType: OsTypeSchema,
    url: z.string().describe('where agents download it (https)'),
    sha256: z.string().describe('its SHA-256 digest, lower-case hex'),
    silentArgs: z.string().nullable().describe('arguments of an unattended install'),
    uninstallArgs: z.string().nullable().describe('arguments of an unattended uninstall'),
    detection: z.record(z.string(), z.unknown()).nullable().describe('how agents tell it is installed (a JSON object, as the agent understands it)'),
  })
  .meta({ title: 'SoftwareInstaller', description: 'A version’s installer for one operating system' });

export const SoftwareVersionViewSchema = z
  .object({
    id: uuid().describe('the version'),
    catalogId: uuid().describe('its package'),
    version: z.string().describe('unique in its package'),
    installers: z.array(InstallerViewSchema).describe('at most one per operating system'),
    releaseNotes: z.string().nullable().describe('what changed; null when not given'),
    createdAt: timestamp().describe('when it was added'),
  })
  .meta({ title: 'SoftwareVersion', description: 'A version of a catalog package, with its installers' });
export type SoftwareVersionView = z.output<typeof SoftwareVersionViewSchema>;

function catalogView(entry: SoftwareCatalog): SoftwareCatalogView {
  return {
    id: entry.id,
    orgId: entry.orgId,
    name: entry.name,
    vendor: entry.vendor,
    category: entry.category,
    description: entry.description,
    latestVersion: entry.latestVersion,
    createdAt: entry.createdAt.toISOString(),
    updatedAt: entry.updatedAt.toISOString(),
  };
}

const versionView = (v: SoftwareVersion): SoftwareVersionView => ({
  id: v.id,
  catalogId: v.catalogId,
  version: v.version,
  installers: v.installers,
  releaseNotes: v.releaseNotes,
  createdAt: v.createdAt.toISOString(),
});

// ── inputs ──────────────────────────────────────────────────────────────────────────────────────

const Name = requiredText(255);
const Vendor = requiredText(255);
const Category = requiredText(100);
const Description = optionalText(4000);

export const CreateSoftwareCatalogSchema = z
  .strictObject({
    orgId: uuid().optional().describe('required for partner and system callers'),
    name: Name.describe('unique in the organization'),
    vendor: Vendor.describe('who publishes it'),
    category: Category.describe('a free-form category'),
    description: Description.describe('what it is'),
  })
  .meta({ title: 'CreateSoftwareCatalogEntryInput', description: 'A new package of an organization’s software catalog' });
export type CreateSoftwareCatalogInput = z.input<typeof CreateSoftwareCatalogSchema>;

export const UpdateSoftwareCatalogSchema = z
  .strictObject({
    name: Name.optional().describe('a new name, unique in the organization'),
    vendor: Vendor.optional().describe('a new vendor'),
    category: Category.optional().describe('a new category'),
    description: z.string().trim().max(4000).nullable().optional().describe('a new description; null or empty clears it'),
  })
  .meta({ title: 'UpdateSoftwareCatalogEntryInput', description: 'The fields to change; at least one' })
  .refine((input) => Object.values(input).some((v) => v !== undefined), 'Provide at least one field to change');
export type UpdateSoftwareCatalogInput = z.input<typeof UpdateSoftwareCatalogSchema>;

const InstallerInput = z
  .strictObject({
    osType: OsTypeSchema,
    url: z
      .url({ protocol: /^https$/, message: 'must be an https URL' })
      .max(2000)
      .describe('where agents download it: https only'),
    sha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, { message: 'must be 64 hexadecimal characters' })
      .transform((value) => value.toLowerCase())
      .describe('its SHA-256 digest (64 hex characters)'),
    silentArgs: optionalText(1000).describe('arguments of an unattended install'),
    uninstallArgs: optionalText(1000).describe('arguments of an unattended uninstall'),
    detection: JsonObjectSchema.nullish()
      .transform((value) => value ?? null)
      .describe('how agents tell it is installed: a JSON object'),
  })
  .meta({ title: 'SoftwareInstallerInput', description: 'A version’s installer for one operating system' });

export const CreateSoftwareVersionSchema = z
  .strictObject({
    version: requiredText(100).describe('unique in the package'),
    installers: z
      .array(InstallerInput)
      .min(1)
      .max(3)
      .refine((list) => new Set(list.map((i) => i.osType)).size === list.length, 'at most one installer per osType')
      .describe('one per operating system, at least one'),
    releaseNotes: optionalText(20_000).describe('what changed'),
  })
  .meta({ title: 'CreateSoftwareVersionInput', description: 'A new version of a catalog package' });
export type CreateSoftwareVersionInput = z.input<typeof CreateSoftwareVersionSchema>;

// ── reads ───────────────────────────────────────────────────────────────────────────────────────

function requireEntry(ctx: RequestContext, id: string, access: 'read' | 'write'): Promise<SoftwareCatalog> {
  return loadOwned(ctx, SoftwareCatalog, id, access === 'read' ? 'software:read' : 'software:write', { resource: RESOURCE });
}

const filters = {
  orgId: uuid().optional().describe('only packages of this organization (partner and system callers)'),
  category: z.string().trim().min(1).max(100).optional().describe('only packages of this category (any case)'),
  vendor: z.string().trim().min(1).max(255).optional().describe('only packages of this vendor (any case)'),
};
const CatalogFilters = z.strictObject(filters);
export const SoftwareCatalogListQuery = z.strictObject({ ...filters, ...cursorListFields });
export type SoftwareCatalogListInput = z.input<typeof SoftwareCatalogListQuery>;
export const SoftwareCatalogPageSchema = cursorPageSchema(SoftwareCatalogViewSchema, 'SoftwareCatalogPage', 'catalog packages, newest first');
export type SoftwareCatalogPage = z.output<typeof SoftwareCatalogPageSchema>;

async function catalogFilter(ctx: RequestContext, query: z.output<typeof CatalogFilters>): Promise<FilterQuery<SoftwareCatalog>> {
  await authorize(ctx, 'software:read');
  const where: FilterQuery<SoftwareCatalog>[] = [(await tenantWhere<SoftwareCatalog>(ctx, { org: 'orgId', requestedOrgId: query.orgId })) ?? {}];
  if (query.category) where.push({ category: { $ilike: escapeLike(query.category) } });
  if (query.vendor) where.push({ vendor: { $ilike: escapeLike(query.vendor) } });
  return { $and: where } as FilterQuery<SoftwareCatalog>;
}

/** The catalog packages of the organizations the caller sees, newest first, in keyset pages. */
export async function listSoftwareCatalog(ctx: RequestContext, raw: SoftwareCatalogListInput): Promise<SoftwareCatalogPage> {
  const query = parseInput(SoftwareCatalogListQuery, raw);
  const filter = await catalogFilter(ctx, query);
  const keyset = keysetWhere('createdAt', 'date', 'desc', query.cursor);
  const rows = await ctx.em.find(SoftwareCatalog, { $and: [filter, keyset.where] } as FilterQuery<SoftwareCatalog>, { orderBy: keyset.orderBy, limit: query.limit + 1, disableIdentityMap: true });
  const page = finishCursorPage(rows, query.limit, (c) => c.createdAt.toISOString());
  return { data: page.items.map(catalogView), nextCursor: page.nextCursor };
}

export async function countSoftwareCatalog(ctx: RequestContext, raw: z.input<typeof CatalogFilters>): Promise<number> {
  return ctx.em.count(SoftwareCatalog, await catalogFilter(ctx, parseInput(CatalogFilters, raw)));
}

export async function getSoftwareCatalogEntry(ctx: RequestContext, id: string): Promise<SoftwareCatalogView> {
  return catalogView(await requireEntry(ctx, id, 'read'));
}

export const SoftwareSearchQuery = z.strictObject({
  q: z.string().trim().min(1).max(255).describe('text found in the name or vendor, in any case'),
  osType: OsTypeSchema.optional().describe('only packages with an installer for this operating system (in any version)'),
  orgId: uuid().optional().describe('only packages of this organization (partner and system callers)'),
  limit: z.coerce.number().int().min(1).max(100).default(20).describe('1 to 100, 20 by default'),
});
export type SoftwareSearchInput = z.input<typeof SoftwareSearchQuery>;
export const SoftwareSearchResultSchema = listSchema(SoftwareCatalogViewSchema, 'SoftwareCatalogSearchResult');
export type SoftwareSearchResult = z.output<typeof SoftwareSearchResultSchema>;

/**
 * Packages whose name or vendor contains `q` in any case: exact matches first, then prefixes, then the
 * rest, each by name; one statement.
 */
export async function searchSoftwareCatalog(ctx: RequestContext, raw: SoftwareSearchInput): Promise<SoftwareSearchResult> {
  const query = parseInput(SoftwareSearchQuery, raw);
  await authorize(ctx, 'software:read');
  const tenant = await tenantSql(ctx, { org: 'c.org_id', requestedOrgId: query.orgId });
  const text = escapeLike(query.q);
  const conditions = ['(c.name ilike ? or c.vendor ilike ?)'];
  const params: unknown[] = [`%${text}%`, `%${text}%`];
  if (tenant) {
    conditions.push(tenant.sql);
    params.push(...tenant.params);
  }
  if (query.osType) {
    conditions.push('exists (select 1 from software_version v where v.catalog_id = c.id and v.installers @> ?::jsonb)');
    params.push(JSON.stringify([{ osType: query.osType }]));
  }
  const ranked = await requestRows<Record<string, unknown>>(
    ctx.em,
    statement(`select c.* from software_catalog c where ${conditions.join(' and ')}
      order by case when c.name ilike ? or c.vendor ilike ? then 0 when c.name ilike ? or c.vendor ilike ? then 1 else 2 end, c.name, c.id
      limit ?`),
    [...params, text, text, `${text}%`, `${text}%`, query.limit],
  );
  return { data: ranked.map((row) => catalogView(ctx.em.map(SoftwareCatalog, row))) };
}

export const SoftwareVersionListQuery = z.strictObject({ ...cursorListFields });
export type SoftwareVersionListInput = z.input<typeof SoftwareVersionListQuery>;
export const SoftwareVersionPageSchema = cursorPageSchema(SoftwareVersionViewSchema, 'SoftwareVersionPage', 'versions, newest first');
export type SoftwareVersionPage = z.output<typeof SoftwareVersionPageSchema>;

/** The package's versions, newest first (by when they were added). */
export async function listSoftwareVersions(ctx: RequestContext, catalogId: string, raw: SoftwareVersionListInput): Promise<SoftwareVersionPage> {
  const query = parseInput(SoftwareVersionListQuery, raw);
  const entry = await requireEntry(ctx, catalogId, 'read');
  const keyset = keysetWhere('createdAt', 'date', 'desc', query.cursor);
  const rows = await ctx.em.find(SoftwareVersion, { $and: [{ catalogId: entry.id }, keyset.where] } as FilterQuery<SoftwareVersion>, { orderBy: keyset.orderBy, limit: query.limit + 1, disableIdentityMap: true });
  const page = finishCursorPage(rows, query.limit, (v) => v.createdAt.toISOString());
  return { data: page.items.map(versionView), nextCursor: page.nextCursor };
}

export async function countSoftwareVersions(ctx: RequestContext, catalogId: string): Promise<number> {
  const entry = await requireEntry(ctx, catalogId, 'read');
  return ctx.em.count(SoftwareVersion, { catalogId: entry.id });
}

// ── writes ──────────────────────────────────────────────────────────────────────────────────────

const uniqueName = uniqueNameGuard('software_catalog_org_id_name_unique', 'A software package');

export async function createSoftwareCatalogEntry(ctx: RequestContext, raw: CreateSoftwareCatalogInput): Promise<SoftwareCatalogView> {
  const input = parseInput(CreateSoftwareCatalogSchema, raw);
  const orgId = await targetOrgId(ctx, input.orgId, RESOURCE);
  await authorize(ctx, 'software:write', { orgId, resource: RESOURCE });
  return uniqueName(
    withTransaction(ctx, async (tx) => {
      const entry = tx.em.create(SoftwareCatalog, { orgId, name: input.name, vendor: input.vendor, category: input.category, description: input.description });
      await tx.em.flush();
      await recordAudit(tx, { action: 'software_catalog.create', resourceType: 'software_catalog', resourceId: entry.id, orgId, changes: providedFields(input), details: { name: entry.name } });
      return catalogView(entry);
    }),
  );
}

export async function updateSoftwareCatalogEntry(ctx: RequestContext, id: string, raw: UpdateSoftwareCatalogInput): Promise<SoftwareCatalogView> {
  const input = parseInput(UpdateSoftwareCatalogSchema, raw);
  const entry = await requireEntry(ctx, id, 'write');
  return uniqueName(
    withTransaction(ctx, async (tx) => {
      const description = input.description === undefined ? undefined : input.description || null;
      const changes = applyChanges(entry, { name: input.name, vendor: input.vendor, category: input.category, description });
      if (changes.length === 0) return catalogView(entry);
      await tx.em.persistAndFlush(entry);
      await recordAudit(tx, { action: 'software_catalog.update', resourceType: 'software_catalog', resourceId: entry.id, orgId: entry.orgId, changes, details: { name: entry.name } });
      return catalogView(entry);
    }),
  );
}

/** The package goes with its versions. */
export async function deleteSoftwareCatalogEntry(ctx: RequestContext, id: string): Promise<void> {
  const entry = await requireEntry(ctx, id, 'write');
  await withTransaction(ctx, async (tx) => {
    await tx.em.nativeDelete(SoftwareCatalog, { id: entry.id });
    await recordAudit(tx, { action: 'software_catalog.delete', resourceType: 'software_catalog', resourceId: entry.id, orgId: entry.orgId, details: { name: entry.name } });
  });
}

/**
 * Adds a version (409 when the package has it already) and moves the package's `latestVersion` when
 * it is newer by its dotted numbers; the package row is locked so concurrent additions decide in turn.
 */
export async function createSoftwareVersion(ctx: RequestContext, catalogId: string, raw: CreateSoftwareVersionInput): Promise<SoftwareVersionView> {
  const input = parseInput(CreateSoftwareVersionSchema, raw);
  const found = await requireEntry(ctx, catalogId, 'write');
  return withTransaction(ctx, async (tx) => {
    const entry = await tx.em.findOneOrFail(SoftwareCatalog, { id: found.id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    if ((await tx.em.count(SoftwareVersion, { catalogId: entry.id, version: input.version })) > 0) throw conflict(`Version ${input.version} of this package already exists`);
    const installers: SoftwareInstaller[] = input.installers;
    const version = tx.em.create(SoftwareVersion, { catalogId: entry.id, version: input.version, installers, releaseNotes: input.releaseNotes, createdAt: tx.runtime.clock.now() });
    if (entry.latestVersion === null || compareVersions(input.version, entry.latestVersion) > 0) entry.latestVersion = input.version;
    await tx.em.flush();
    await recordAudit(tx, {
      action: 'software_version.create',
      resourceType: 'software_catalog',
      resourceId: entry.id,
      orgId: entry.orgId,
      details: { name: entry.name, versionId: version.id, version: version.version, osTypes: installers.map((i) => i.osType) },
    });
    return versionView(version);
  });
}
