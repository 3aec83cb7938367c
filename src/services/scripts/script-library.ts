import { raw, type QBFilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { Script, ScriptCategory, ScriptExecution, ScriptTag, ScriptVersion } from '../../../entities/script.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, isUuid, loadOwned, targetOrgId, tenantWhere } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { notFound } from '../../errors.js';
import { PageQuery, listSchema, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { parseInput, timestamp, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { applyChanges } from '../shared/changes.js';
import { SystemScriptSchema, accessibleScript, addVersion, insertScript, lockScript, scriptView, systemScriptView, type ScriptView, type SystemScriptView } from './scripts.js';
import { executionFilter } from './script-executions.js';
import { SCRIPT_TEMPLATES } from './system-scripts.js';
import { uniqueNameGuard } from '../shared/unique-name.js';

/*
 * The script library: an organization's categories and tags (names unique per organization; a
 * script names them in its `category` and `tags`, and renames and deletions follow through to its
 * scripts), a script's versions and rollbacks, templates to start from, and usage figures.
 */

// ── categories ──────────────────────────────────────────────────────────────────────────────────

const categoryName = z.string().trim().min(1).max(100);
const categoryDescription = z.string().trim().max(2000).nullable().optional();

export const CategoryViewSchema = z
  .object({
    id: uuid().describe('the category'),
    orgId: uuid().describe('its organization'),
    name: z.string().describe('unique in the organization; scripts name it in their category'),
    description: z.string().nullable().describe('what belongs in it'),
    scriptCount: z.number().int().describe("the organization's scripts in this category"),
    createdAt: timestamp().describe('when it was created'),
    updatedAt: timestamp().describe('when it last changed'),
  })
  .meta({ title: 'ScriptCategory', description: "A category of an organization's script library" });
export type CategoryView = z.output<typeof CategoryViewSchema>;
export const CategoryPageSchema = pageSchema(CategoryViewSchema, 'ScriptCategoryPage').meta({ title: 'ScriptCategoryPage', description: 'A page of script library categories, by name' });

export const CreateCategorySchema = z
  .strictObject({
    orgId: uuid().optional().describe('organization users: their own organization by default; others: required'),
    name: categoryName.describe('unique in the organization'),
    description: categoryDescription.describe('what belongs in it'),
  })
  .meta({ description: 'A new script library category' });
export type CreateCategoryInput = z.input<typeof CreateCategorySchema>;
export const UpdateCategorySchema = z
  .strictObject({ name: categoryName.optional().describe("renamed in the organization's scripts too"), description: categoryDescription.describe('what belongs in it') })
  .meta({ description: 'Changes to a script library category' });
export type UpdateCategoryInput = z.input<typeof UpdateCategorySchema>;

export const LibraryListQuery = PageQuery.extend({ orgId: uuid().optional().describe('only those of this organization') }).strict();
export type LibraryListInput = z.input<typeof LibraryListQuery>;

/** How many of the organization's scripts carry each name, as category or tag. */
async function usageCounts(ctx: RequestContext, kind: 'category' | 'tag', rows: { orgId: string; name: string }[]): Promise<Map<string, number>> {
  if (rows.length === 0) return new Map();
  const orgIds = [...new Set(rows.map((r) => r.orgId))];
  const sql =
    kind === 'category'
      ? `select org_id, category as name, count(*)::int as n from script where org_id in (?) and category is not null group by org_id, category`
      : `select s.org_id, t.name, count(*)::int as n from script s cross join lateral jsonb_array_elements_text(s.tags) as t(name) where s.org_id in (?) group by s.org_id, t.name`;
  const counted = (await ctx.em.execute(sql, [orgIds])) as { org_id: string; name: string; n: number }[];
  return new Map(counted.map((c) => [`${c.org_id}:${c.name}`, c.n]));
}

function categoryView(category: ScriptCategory, counts: Map<string, number>): CategoryView {
  return {
    id: category.id,
    orgId: category.orgId,
    name: category.name,
    description: category.description,
    scriptCount: counts.get(`${category.orgId}:${category.name}`) ?? 0,
    createdAt: category.createdAt.toISOString(),
    updatedAt: category.updatedAt.toISOString(),
  };
}

async function categoryViewOf(ctx: RequestContext, category: ScriptCategory): Promise<CategoryView> {
  return categoryView(category, await usageCounts(ctx, 'category', [category]));
}

const uniqueCategoryName = uniqueNameGuard('script_category_org_id_name_unique', 'A category');
const uniqueTagName = uniqueNameGuard('script_tag_org_id_name_unique', 'A tag');
const uniqueScriptName = uniqueNameGuard('script_org_id_name_unique', 'A script');

export async function listCategories(ctx: RequestContext, rawQuery: LibraryListInput): Promise<Page<CategoryView>> {
  const query = parseInput(LibraryListQuery, rawQuery);
  await authorize(ctx, 'scripts:read');
  const where = (await tenantWhere<ScriptCategory>(ctx, { org: 'orgId', requestedOrgId: query.orgId })) ?? {};
  const [rows, total] = await ctx.em.findAndCount(ScriptCategory, where, { orderBy: { name: 'asc', id: 'asc' }, ...pageOptions(query) });
  const counts = await usageCounts(ctx, 'category', rows);
  return toPage(
    rows.map((c) => categoryView(c, counts)),
    total,
    query,
  );
}

function accessibleCategory(ctx: RequestContext, id: string, permission: 'scripts:read' | 'scripts:write'): Promise<ScriptCategory> {
  return loadOwned(ctx, ScriptCategory, id, permission, { resource: 'Category' });
}

export async function getCategory(ctx: RequestContext, id: string): Promise<CategoryView> {
  return categoryViewOf(ctx, await accessibleCategory(ctx, id, 'scripts:read'));
}

export async function createCategory(ctx: RequestContext, rawInput: CreateCategoryInput): Promise<CategoryView> {
  const input = parseInput(CreateCategorySchema, rawInput);
  const orgId = await targetOrgId(ctx, input.orgId);
  await authorize(ctx, 'scripts:write', { orgId, resource: 'Organization' });
  return uniqueCategoryName(
    withTransaction(ctx, async (tx) => {
      const category = tx.em.create(ScriptCategory, { orgId, name: input.name, description: input.description ?? null });
      await tx.em.flush();
      await recordAudit(tx, { action: 'script_category.create', resourceType: 'script_category', resourceId: category.id, orgId, details: { name: category.name } });
      return categoryViewOf(tx, category);
    }),
  );
}

/** A rename carries over to the organization's scripts in the category. */
export async function updateCategory(ctx: RequestContext, id: string, rawInput: UpdateCategoryInput): Promise<CategoryView> {
  const input = parseInput(UpdateCategorySchema, rawInput);
  const category = await accessibleCategory(ctx, id, 'scripts:write');
  return uniqueCategoryName(
    withTransaction(ctx, async (tx) => {
      const previousName = category.name;
      const changes = applyChanges(category, { name: input.name, description: input.description });
      if (changes.length === 0) return categoryViewOf(tx, category);
      await tx.em.flush();
      if (changes.includes('name')) await tx.em.nativeUpdate(Script, { orgId: category.orgId, category: previousName }, { category: category.name });
      await recordAudit(tx, { action: 'script_category.update', resourceType: 'script_category', resourceId: id, orgId: category.orgId, changes, details: { name: category.name, previousName } });
      return categoryViewOf(tx, category);
    }),
  );
}

/** The category goes; its scripts stay, with no category. */
export async function deleteCategory(ctx: RequestContext, id: string): Promise<void> {
  const category = await accessibleCategory(ctx, id, 'scripts:write');
  await withTransaction(ctx, async (tx) => {
    await tx.em.nativeDelete(ScriptCategory, { id });
    await tx.em.nativeUpdate(Script, { orgId: category.orgId, category: category.name }, { category: null });
    await recordAudit(tx, { action: 'script_category.delete', resourceType: 'script_category', resourceId: id, orgId: category.orgId, details: { name: category.name } });
  });
}

// ── tags ────────────────────────────────────────────────────────────────────────────────────────

export const TagViewSchema = z
  .object({
    id: uuid().describe('the tag'),
    orgId: uuid().describe('its organization'),
    name: z.string().describe('unique in the organization; scripts name it in their tags'),
    scriptCount: z.number().int().describe("the organization's scripts with this tag"),
    createdAt: timestamp().describe('when it was created'),
  })
  .meta({ title: 'ScriptTag', description: "A tag of an organization's script library" });
export type TagView = z.output<typeof TagViewSchema>;
export const TagPageSchema = pageSchema(TagViewSchema, 'ScriptTagPage').meta({ title: 'ScriptTagPage', description: 'A page of script library tags, by name' });

export const CreateTagSchema = z
  .strictObject({
    orgId: uuid().optional().describe('organization users: their own organization by default; others: required'),
    name: z.string().trim().min(1).max(50).describe('unique in the organization'),
  })
  .meta({ description: 'A new script library tag' });
export type CreateTagInput = z.input<typeof CreateTagSchema>;

function tagView(tag: ScriptTag, counts: Map<string, number>): TagView {
  return { id: tag.id, orgId: tag.orgId, name: tag.name, scriptCount: counts.get(`${tag.orgId}:${tag.name}`) ?? 0, createdAt: tag.createdAt.toISOString() };
}

export async function listScriptTags(ctx: RequestContext, rawQuery: LibraryListInput): Promise<Page<TagView>> {
  const query = parseInput(LibraryListQuery, rawQuery);
  await authorize(ctx, 'scripts:read');
  const where = (await tenantWhere<ScriptTag>(ctx, { org: 'orgId', requestedOrgId: query.orgId })) ?? {};
  const [rows, total] = await ctx.em.findAndCount(ScriptTag, where, { orderBy: { name: 'asc', id: 'asc' }, ...pageOptions(query) });
  const counts = await usageCounts(ctx, 'tag', rows);
  return toPage(
    rows.map((t) => tagView(t, counts)),
    total,
    query,
  );
}

export async function createScriptTag(ctx: RequestContext, rawInput: CreateTagInput): Promise<TagView> {
  const input = parseInput(CreateTagSchema, rawInput);
  const orgId = await targetOrgId(ctx, input.orgId);
  await authorize(ctx, 'scripts:write', { orgId, resource: 'Organization' });
  return uniqueTagName(
    withTransaction(ctx, async (tx) => {
      const tag = tx.em.create(ScriptTag, { orgId, name: input.name });
      await tx.em.flush();
      await recordAudit(tx, { action: 'script_tag.create', resourceType: 'script_tag', resourceId: tag.id, orgId, details: { name: tag.name } });
      return tagView(tag, await usageCounts(tx, 'tag', [tag]));
    }),
  );
}

/** The tag goes, and comes off the organization's scripts. */
export async function deleteScriptTag(ctx: RequestContext, id: string): Promise<void> {
  const tag = await loadOwned(ctx, ScriptTag, id, 'scripts:write', { resource: 'Tag' });
  await withTransaction(ctx, async (tx) => {
    await tx.em.nativeDelete(ScriptTag, { id });
    await tx.em.execute(`update script set tags = tags - ?::text, updated_at = now() where org_id = ? and tags @> jsonb_build_array(?::text)`, [tag.name, tag.orgId, tag.name]);
    await recordAudit(tx, { action: 'script_tag.delete', resourceType: 'script_tag', resourceId: id, orgId: tag.orgId, details: { name: tag.name } });
  });
}

// ── versions ────────────────────────────────────────────────────────────────────────────────────

export const ScriptVersionViewSchema = z
  .object({
    id: uuid().describe('the version (what a rollback names)'),
    scriptId: uuid().describe('its script'),
    version: z.number().int().describe('1 for the first content, then one more per change'),
    content: z.string().describe('the script text of this version'),
    note: z.string().nullable().describe('what changed'),
    current: z.boolean().describe("the script's content now"),
    createdBy: uuid().nullable().describe('the user who made it'),
    createdAt: timestamp().describe('when it was made'),
  })
  .meta({ title: 'ScriptVersion', description: "One content of a script (versions are never rewritten)" });
export type ScriptVersionView = z.output<typeof ScriptVersionViewSchema>;
export const ScriptVersionPageSchema = pageSchema(ScriptVersionViewSchema, 'ScriptVersionPage').meta({ title: 'ScriptVersionPage', description: "A page of a script's versions, newest first" });

function versionView(version: ScriptVersion, currentVersion: number): ScriptVersionView {
  return {
    id: version.id,
    scriptId: version.scriptId,
    version: version.version,
    content: version.content,
    note: version.note,
    current: version.version === currentVersion,
    createdBy: version.createdBy,
    createdAt: version.createdAt.toISOString(),
  };
}

export const VersionListQuery = PageQuery.strict();
export type VersionListInput = z.input<typeof VersionListQuery>;

/** The script's versions, newest first. */
export async function listVersions(ctx: RequestContext, scriptId: string, rawQuery: VersionListInput): Promise<Page<ScriptVersionView>> {
  const query = parseInput(VersionListQuery, rawQuery);
  const script = await accessibleScript(ctx, scriptId, 'scripts:read');
  const [rows, total] = await ctx.em.findAndCount(ScriptVersion, { scriptId: script.id }, { orderBy: { version: 'desc' }, ...pageOptions(query) });
  return toPage(
    rows.map((v) => versionView(v, script.version)),
    total,
    query,
  );
}

export const CreateVersionSchema = z
  .strictObject({
    content: z.string().min(1).max(1024 * 1024).describe('the new content, at most 1 MiB'),
    note: z.string().trim().max(1000).optional().describe('what changed'),
  })
  .meta({ description: "A script's next version" });
export type CreateVersionInput = z.input<typeof CreateVersionSchema>;

/** A new content for the script: the next version, current from now on. */
export async function createVersion(ctx: RequestContext, scriptId: string, rawInput: CreateVersionInput): Promise<ScriptVersionView> {
  const input = parseInput(CreateVersionSchema, rawInput);
  await accessibleScript(ctx, scriptId, 'scripts:write');
  return withTransaction(ctx, async (tx) => {
    const script = await lockScript(tx, scriptId);
    const version = await addVersion(tx, script, input.content, input.note ?? null);
    await recordAudit(tx, { action: 'script.version.create', resourceType: 'script', resourceId: script.id, orgId: script.orgId, details: { name: script.name, version: version.version } });
    return versionView(version, script.version);
  });
}

/** Copies an earlier version's content into a new version (history is never rewritten). */
export async function rollbackVersion(ctx: RequestContext, scriptId: string, versionId: string): Promise<ScriptVersionView> {
  await accessibleScript(ctx, scriptId, 'scripts:write');
  return withTransaction(ctx, async (tx) => {
    const script = await lockScript(tx, scriptId);
    const source = isUuid(versionId) ? await tx.em.findOne(ScriptVersion, { id: versionId, scriptId: script.id }) : null;
    if (!source) throw notFound('Script version');
    const version = await addVersion(tx, script, source.content, `rollback to version ${source.version}`);
    await recordAudit(tx, {
      action: 'script.version.rollback',
      resourceType: 'script',
      resourceId: script.id,
      orgId: script.orgId,
      details: { name: script.name, version: version.version, from: source.version },
    });
    return versionView(version, script.version);
  });
}

// ── templates ───────────────────────────────────────────────────────────────────────────────────

export const ScriptTemplateListSchema = listSchema(SystemScriptSchema, 'ScriptTemplateList').meta({ title: 'ScriptTemplateList', description: 'The templates new scripts start from' });

/** The templates new scripts start from. */
export async function listTemplates(ctx: RequestContext): Promise<{ data: SystemScriptView[] }> {
  await authorize(ctx, 'scripts:read');
  return { data: SCRIPT_TEMPLATES.map(systemScriptView) };
}

export const FromTemplateSchema = z
  .strictObject({
    orgId: uuid().optional().describe('organization users: their own organization by default; others: required'),
    name: z.string().trim().min(1).max(255).optional().describe("the new script's name; the template's by default"),
    description: z.string().trim().max(5000).nullable().optional().describe("the new script's description; the template's by default"),
  })
  .meta({ description: 'Where to create a script from a template, and under which name' });
export type FromTemplateInput = z.input<typeof FromTemplateSchema>;

/** A new script of the organization, from a template. */
export async function createFromTemplate(ctx: RequestContext, templateId: string, rawInput: FromTemplateInput = {}): Promise<ScriptView> {
  const input = parseInput(FromTemplateSchema, rawInput ?? {});
  const orgId = await targetOrgId(ctx, input.orgId);
  await authorize(ctx, 'scripts:write', { orgId, resource: 'Organization' });
  const template = SCRIPT_TEMPLATES.find((t) => t.id === templateId);
  if (!template) throw notFound('Template');
  return uniqueScriptName(
    withTransaction(ctx, async (tx) => {
      const script = await insertScript(tx, orgId, { ...template, name: input.name ?? template.name, description: input.description === undefined ? template.description : input.description });
      await recordAudit(tx, { action: 'script.create', resourceType: 'script', resourceId: script.id, orgId, details: { name: script.name, templateId } });
      return scriptView(script);
    }),
  );
}

// ── usage ───────────────────────────────────────────────────────────────────────────────────────

export const UsageStatsSchema = z
  .object({
    executions: z.number().int().describe('every execution of the script'),
    successRate: z.number().nullable().describe('completed ÷ finished (completed, failed, timeout), 0 to 1; null before any finished'),
    averageDurationSeconds: z.number().nullable().describe('mean time from start to end of the finished executions that started'),
    lastRunAt: timestamp().nullable().describe('when the latest execution was requested'),
  })
  .meta({ title: 'ScriptUsageStats', description: 'How often a script ran, how often it succeeded and how long it took' });
export type UsageStats = z.output<typeof UsageStatsSchema>;

/** Figures over the executions the caller can see (site-limited callers: those on their sites' devices). */
export async function usageStats(ctx: RequestContext, scriptId: string): Promise<UsageStats> {
  const script = await accessibleScript(ctx, scriptId, 'scripts:read');
  const row = await ctx.em
    .createQueryBuilder(ScriptExecution, 'e')
    .select([
      raw('count(*)::int as executions'),
      raw(`count(*) filter (where e.status = 'completed')::int as completed`),
      raw(`count(*) filter (where e.status in ('completed', 'failed', 'timeout'))::int as finished`),
      raw(`avg(extract(epoch from e.completed_at - e.started_at)) filter (where e.status in ('completed', 'failed', 'timeout') and e.started_at is not null) as average`),
      raw('max(e.created_at) as last_run_at'),
    ])
    .where(executionFilter(ctx, script, {}) as QBFilterQuery<ScriptExecution>)
    .execute<{ executions: number; completed: number; finished: number; average: string | number | null; last_run_at: Date | string | null }>('get', false);
  return {
    executions: row!.executions,
    successRate: row!.finished === 0 ? null : Math.round((row!.completed / row!.finished) * 10_000) / 10_000,
    averageDurationSeconds: row!.average === null ? null : Math.round(Number(row!.average) * 1000) / 1000,
    lastRunAt: row!.last_run_at === null ? null : new Date(row!.last_run_at).toISOString(),
  };
}
