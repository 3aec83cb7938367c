import { LockMode, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { SCRIPT_LANGUAGES, SCRIPT_PARAMETER_TYPES, SCRIPT_RUN_AS, Script, ScriptVersion, type StoredScriptParameter } from '../../../entities/script.js';
import type { RequestContext } from '../../auth/context.js';
import type { Permission } from '../../auth/permissions.js';
import { authorize, loadOwned, requirePrincipal, targetOrgId, tenantWhere } from '../../auth/policy.js';
import { containsPattern } from '../../db/like.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest, notFound } from '../../errors.js';
import { PageQuery, listSchema, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import type { Runtime } from '../../runtime.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { OsTypeSchema } from '../devices/api.js';
import { applyChanges, providedFields } from '../shared/changes.js';
import { SYSTEM_SCRIPTS, type SystemScript } from './system-scripts.js';
import { uniqueNameGuard } from '../shared/unique-name.js';

/*
 * Scripts of an organization: content in one of four languages, declared parameters (secret ones
 * sealed at rest), where and how they run. Each content is a version (script_version); executions
 * are in script-executions.ts, categories, tags, versions and templates in script-library.ts.
 */

const RESOURCE = 'Script';
/** What a secret value reads as wherever it is shown. */
export const SECRET_MASK = '********';

export const ScriptLanguageSchema = z
  .enum(SCRIPT_LANGUAGES)
  .meta({ title: 'ScriptLanguage', description: 'The interpreter the agent runs the script with' })
  .register(enumValues, {
    powershell: 'Windows PowerShell (Windows).',
    bash: 'The Bash shell (Linux and macOS).',
    python: 'Python (Windows, macOS and Linux).',
    cmd: 'The Windows command prompt, cmd.exe (Windows).',
  });
export const ScriptRunAsSchema = z
  .enum(SCRIPT_RUN_AS)
  .meta({ title: 'ScriptRunAs', description: 'The account the agent runs the script as: the system account, the signed-in user, or elevated' })
  .register(enumValues, {
    system: 'The device’s system account (such as SYSTEM on Windows, root on Linux and macOS).',
    user: 'The user signed in on the device, with that user’s rights.',
    elevated: 'The signed-in user with administrator rights (elevated).',
  });
const ScriptParameterTypeSchema = z
  .enum(SCRIPT_PARAMETER_TYPES)
  .meta({ title: 'ScriptParameterType', description: 'The JSON type of a parameter value; select: one of the given options' })
  .register(enumValues, {
    string: 'A JSON string.',
    number: 'A JSON number.',
    boolean: 'true or false.',
    select: 'A string that is one of the parameter’s options.',
  });

const parameterValue = z.union([z.string().max(10_000), z.number(), z.boolean()]);
const parameterName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'must be a name such as ServiceName or max_age_days (letters, digits, _)');

const parameterShape = {
  name: parameterName.describe('the name executions give the value by'),
  type: ScriptParameterTypeSchema.describe('the type its value must have'),
  required: z.boolean().optional().describe('a value must be given at execution (or come from the default); false by default'),
  default: parameterValue.optional().describe('used when an execution gives none; secret defaults are stored sealed and read as ********'),
  options: z.array(z.string().min(1).max(255)).min(1).max(100).optional().describe('select parameters: the allowed values'),
  secret: z.boolean().optional().describe('the value is encrypted at rest, masked when shown and handed to the agent only; false by default'),
  description: z.string().max(1000).optional().describe('what the parameter is for'),
};

const ScriptParameterInputSchema = z
  .strictObject(parameterShape)
  .superRefine((p, ctx) => {
    if (p.type === 'select' && !p.options) ctx.addIssue({ code: 'custom', message: 'select parameters need options', path: ['options'] });
    if (p.type !== 'select' && p.options) ctx.addIssue({ code: 'custom', message: 'only select parameters have options', path: ['options'] });
    if (p.default !== undefined && !(p.secret && p.default === SECRET_MASK)) {
      const problem = valueProblem(p, p.default);
      if (problem) ctx.addIssue({ code: 'custom', message: problem, path: ['default'] });
    }
  })
  .meta({ title: 'ScriptParameterInput', description: 'A parameter the script declares' });
type ScriptParameterInput = z.output<typeof ScriptParameterInputSchema>;

export const ScriptParameterSchema = z
  .object({ ...parameterShape, required: z.boolean().describe('a value must be given (or come from the default)'), secret: z.boolean().describe('the value is encrypted at rest and shown as ********') })
  .meta({ title: 'ScriptParameter', description: 'A parameter the script declares; executions may give only these' });

/** Why `value` does not fit the declared parameter, or null. */
function valueProblem(param: Pick<StoredScriptParameter, 'type' | 'options'>, value: unknown): string | null {
  switch (param.type) {
    case 'string':
      return typeof value === 'string' ? null : 'must be a string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? null : 'must be a number';
    case 'boolean':
      return typeof value === 'boolean' ? null : 'must be a boolean';
    case 'select':
      return typeof value === 'string' && param.options?.includes(value) ? null : `must be one of: ${param.options?.join(', ')}`;
  }
}

const parametersField = z
  .array(ScriptParameterInputSchema)
  .max(50)
  .refine((params) => new Set(params.map((p) => p.name)).size === params.length, { message: 'parameter names must be unique' });

const scriptFields = {
  name: z.string().trim().min(1).max(255).describe("unique in the script's organization"),
  description: z.string().trim().max(5000).nullable().optional().describe('what the script does'),
  language: ScriptLanguageSchema.describe('the interpreter it runs with'),
  content: z.string().min(1).max(1024 * 1024).describe('the script text, at most 1 MiB'),
  parameters: parametersField.optional().describe('declared parameters; none by default'),
  runAs: ScriptRunAsSchema.optional().describe('system by default'),
  timeoutSeconds: z.number().int().min(5).max(86_400).optional().describe('5 to 86400; 300 by default'),
  osTypes: z.array(OsTypeSchema).min(1).max(OsTypeSchema.options.length).optional().describe('the operating systems it runs on; by default those of its language'),
  category: z.string().trim().min(1).max(100).nullable().optional().describe('a library category name'),
  tags: z.array(z.string().trim().min(1).max(50)).max(50).optional().describe('library tag names'),
};

export const CreateScriptSchema = z
  .strictObject({
    orgId: uuid().optional().describe('organization users: their own organization by default; others: required'),
    ...scriptFields,
  })
  .meta({ description: 'A new script; its content is version 1' });
export type CreateScriptInput = z.input<typeof CreateScriptSchema>;

/** PUT replaces the editable fields: those left out take their defaults. */
export const UpdateScriptSchema = z
  .strictObject({
    ...scriptFields,
    name: scriptFields.name.optional(),
    language: scriptFields.language.optional(),
    content: scriptFields.content.optional(),
    note: z.string().trim().max(1000).optional().describe('recorded with the new version when the content changes'),
  })
  .meta({ description: "A script's editable fields: those given replace the current ones (null clears description and category), those left out stay" });
export type UpdateScriptInput = z.input<typeof UpdateScriptSchema>;

export const ScriptViewSchema = z
  .object({
    id: uuid().describe('the script'),
    orgId: uuid().describe('its organization'),
    name: z.string().describe("unique in the organization"),
    description: z.string().nullable().describe('what it does'),
    language: ScriptLanguageSchema.describe('the interpreter it runs with'),
    content: z.string().describe("the current version's text"),
    parameters: z.array(ScriptParameterSchema).describe('the parameters executions may give'),
    runAs: ScriptRunAsSchema.describe('the account it runs as'),
    timeoutSeconds: z.number().int().describe('an execution not finished by then (plus a grace minute) turns timeout'),
    osTypes: z.array(OsTypeSchema).describe('the operating systems it runs on; executions skip other devices'),
    category: z.string().nullable().describe('a library category name'),
    tags: z.array(z.string()).describe('library tag names'),
    version: z.number().int().describe('the current version (1 for the first content)'),
    importedFrom: z.string().nullable().describe('the system-library script it was imported from'),
    createdBy: uuid().nullable().describe('the user who created it'),
    createdAt: timestamp().describe('when it was created'),
    updatedAt: timestamp().describe('when it last changed'),
  })
  .meta({ title: 'Script', description: 'A script of an organization, run on its devices by executions' });
export type ScriptView = z.output<typeof ScriptViewSchema>;
export const ScriptPageSchema = pageSchema(ScriptViewSchema, 'ScriptPage').meta({ title: 'ScriptPage', description: 'A page of scripts, by name' });

export function scriptView(script: Script): ScriptView {
  return {
    id: script.id,
    orgId: script.orgId,
    name: script.name,
    description: script.description,
    language: script.language,
    content: script.content,
    parameters: script.parameters.map(parameterView),
    runAs: script.runAs,
    timeoutSeconds: script.timeoutSeconds,
    osTypes: script.osTypes,
    category: script.category,
    tags: script.tags,
    version: script.version,
    importedFrom: script.importedFrom,
    createdBy: script.createdBy,
    createdAt: script.createdAt.toISOString(),
    updatedAt: script.updatedAt.toISOString(),
  };
}

function parameterView(p: StoredScriptParameter): z.output<typeof ScriptParameterSchema> {
  const hasDefault = p.defaultSealed !== undefined || p.default !== undefined;
  return {
    name: p.name,
    type: p.type,
    required: p.required,
    ...(hasDefault ? { default: p.secret ? SECRET_MASK : p.default } : {}),
    ...(p.options ? { options: p.options } : {}),
    secret: p.secret,
    ...(p.description ? { description: p.description } : {}),
  };
}

/** The operating systems a language runs on when a script names none. */
const LANGUAGE_OS: Record<Script['language'], Script['osTypes']> = {
  powershell: ['windows'],
  cmd: ['windows'],
  bash: ['linux', 'macos'],
  python: ['windows', 'macos', 'linux'],
};

/**
 * Declared parameters as stored: secret defaults sealed. A secret default given as the mask keeps the
 * one already stored for that parameter (PUT round-trips a script as it was read).
 */
function storedParameters(runtime: Runtime, params: ScriptParameterInput[], previous: StoredScriptParameter[] = []): StoredScriptParameter[] {
  return params.map((p) => {
    const stored: StoredScriptParameter = { name: p.name, type: p.type, required: p.required ?? false, secret: p.secret ?? false };
    if (p.options) stored.options = p.options;
    if (p.description) stored.description = p.description;
    if (p.default === undefined) return stored;
    if (!stored.secret) return { ...stored, default: p.default };
    if (p.default === SECRET_MASK) {
      const kept = previous.find((q) => q.name === p.name && q.secret)?.defaultSealed;
      if (!kept) throw badRequest(`parameters: ${p.name}: give the secret default's value`, [{ path: 'parameters', message: `${p.name}: no stored default to keep` }]);
      return { ...stored, defaultSealed: kept };
    }
    return { ...stored, defaultSealed: runtime.secrets.encrypt(JSON.stringify(p.default)) };
  });
}

/** A sealed parameter value as stored in executions and command payloads. */
export interface SealedValue {
  sealed: string;
}
const isSealed = (value: unknown): value is SealedValue => typeof value === 'object' && value !== null && typeof (value as SealedValue).sealed === 'string';

/**
 * An execution's parameter values, checked against the script's declarations (undeclared names, a
 * wrong type or a missing required value are a 400), defaults filled in, secret values sealed.
 */
export function resolveParameters(runtime: Runtime, script: Script, given: Record<string, unknown>): Record<string, unknown> {
  const declared = new Map(script.parameters.map((p) => [p.name, p]));
  const issues: { path: string; message: string }[] = [];
  for (const name of Object.keys(given)) if (!declared.has(name)) issues.push({ path: `parameters.${name}`, message: 'is not a parameter of this script' });
  const values: Record<string, unknown> = {};
  for (const p of script.parameters) {
    const value = given[p.name];
    if (value === undefined || value === null) {
      if (p.defaultSealed !== undefined) values[p.name] = { sealed: p.defaultSealed } satisfies SealedValue;
      else if (p.default !== undefined) values[p.name] = p.default;
      else if (p.required) issues.push({ path: `parameters.${p.name}`, message: 'is required' });
      continue;
    }
    const problem = valueProblem(p, value);
    if (problem) issues.push({ path: `parameters.${p.name}`, message: problem });
    else values[p.name] = p.secret ? ({ sealed: runtime.secrets.encrypt(JSON.stringify(value)) } satisfies SealedValue) : value;
  }
  if (issues.length > 0) throw badRequest(issues.map((i) => `${i.path}: ${i.message}`).join('; '), issues);
  return values;
}

/** Stored values with the secret ones unsealed: for the agent only. */
export function unsealParameters(runtime: Runtime, values: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).map(([name, value]) => [name, isSealed(value) ? JSON.parse(runtime.secrets.decrypt(value.sealed)) : value]));
}

/** Stored values with the secret ones masked: for every view. */
export function maskParameters(values: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).map(([name, value]) => [name, isSealed(value) ? SECRET_MASK : value]));
}

/** A script the caller may act on with `permission`; another tenant's is 404. */
export function accessibleScript(ctx: RequestContext, id: string, permission: Permission): Promise<Script> {
  return loadOwned(ctx, Script, id, permission, { resource: RESOURCE });
}

const uniqueName = uniqueNameGuard('script_org_id_name_unique', 'A script');

export const ScriptListQuery = PageQuery.extend({
  orgId: uuid().optional().describe('only scripts of this organization'),
  language: ScriptLanguageSchema.optional().describe('only scripts in this language'),
  category: z.string().trim().min(1).max(100).optional().describe('only scripts of this category'),
  tag: z.string().trim().min(1).max(50).optional().describe('only scripts with this tag'),
  search: z.string().trim().min(1).max(255).optional().describe('part of the name'),
}).strict();
export type ScriptListInput = z.input<typeof ScriptListQuery>;

/**
 * Other domains naming scripts (an automation's steps): the names of each script's secret parameters;
 * all must be the organization's, else 404 as another tenant's.
 */
export async function secretParameterNames(tx: RequestContext, orgId: string, ids: readonly string[]): Promise<Map<string, Set<string>>> {
  const scripts = ids.length > 0 ? await tx.em.find(Script, { id: { $in: [...ids] }, orgId }, { fields: ['id', 'parameters'] }) : [];
  if (scripts.length !== ids.length) throw notFound(RESOURCE);
  return new Map(scripts.map((script) => [script.id, new Set(script.parameters.filter((p) => p.secret).map((p) => p.name))]));
}

export async function listScripts(ctx: RequestContext, rawQuery: ScriptListInput): Promise<Page<ScriptView>> {
  const query = parseInput(ScriptListQuery, rawQuery);
  await authorize(ctx, 'scripts:read');
  const where: FilterQuery<Script>[] = [(await tenantWhere<Script>(ctx, { org: 'orgId', requestedOrgId: query.orgId })) ?? {}];
  if (query.language) where.push({ language: query.language });
  if (query.category) where.push({ category: query.category });
  if (query.tag) where.push({ tags: { $contains: [query.tag] } } as FilterQuery<Script>);
  if (query.search) where.push({ name: { $ilike: containsPattern(query.search) } });
  const [rows, total] = await ctx.em.findAndCount(Script, { $and: where }, { orderBy: { name: 'asc', id: 'asc' }, ...pageOptions(query) });
  return toPage(rows.map(scriptView), total, query);
}

export async function getScript(ctx: RequestContext, id: string): Promise<ScriptView> {
  return scriptView(await accessibleScript(ctx, id, 'scripts:read'));
}

type ScriptFields = z.output<z.ZodObject<typeof scriptFields>>;

/** Creates a script and its version 1 in the caller's transaction (shared by create, import and templates). */
export async function insertScript(tx: RequestContext, orgId: string, input: ScriptFields, extra: { importedFrom?: string } = {}): Promise<Script> {
  const principal = requirePrincipal(tx);
  const script = tx.em.create(Script, {
    orgId,
    name: input.name,
    description: input.description ?? null,
    language: input.language,
    content: input.content,
    parameters: storedParameters(tx.runtime, input.parameters ?? []),
    runAs: input.runAs ?? 'system',
    timeoutSeconds: input.timeoutSeconds ?? 300,
    osTypes: input.osTypes ? [...new Set(input.osTypes)] : LANGUAGE_OS[input.language],
    category: input.category ?? null,
    tags: [...new Set(input.tags ?? [])],
    version: 1,
    createdBy: principal.userId,
    importedFrom: extra.importedFrom ?? null,
  });
  tx.em.create(ScriptVersion, { scriptId: script.id, version: 1, content: input.content, note: extra.importedFrom ? `imported from ${extra.importedFrom}` : null, createdBy: principal.userId });
  await tx.em.flush();
  return script;
}

export async function createScript(ctx: RequestContext, rawInput: CreateScriptInput): Promise<ScriptView> {
  const input = parseInput(CreateScriptSchema, rawInput);
  const orgId = await targetOrgId(ctx, input.orgId);
  await authorize(ctx, 'scripts:write', { orgId, resource: 'Organization' });
  return uniqueName(
    withTransaction(ctx, async (tx) => {
      const script = await insertScript(tx, orgId, input);
      await recordAudit(tx, { action: 'script.create', resourceType: 'script', resourceId: script.id, orgId, changes: providedFields({ ...input, orgId }), details: { name: script.name } });
      return scriptView(script);
    }),
  );
}

/**
 * Appends a version with `content` and makes it current, in the caller's transaction on a locked
 * script (versions are numbered one after another).
 */
export async function addVersion(tx: RequestContext, script: Script, content: string, note: string | null): Promise<ScriptVersion> {
  const version = tx.em.create(ScriptVersion, { scriptId: script.id, version: script.version + 1, content, note, createdBy: requirePrincipal(tx).userId });
  script.version = version.version;
  script.content = content;
  await tx.em.flush();
  return version;
}

/** The script locked for update, so versions are numbered in turn. */
export async function lockScript(tx: RequestContext, id: string): Promise<Script> {
  const script = await tx.em.findOne(Script, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
  if (!script) throw notFound(RESOURCE);
  return script;
}

/** Replaces the editable fields given; changed content becomes a new version. */
export async function updateScript(ctx: RequestContext, id: string, rawInput: UpdateScriptInput): Promise<ScriptView> {
  const input = parseInput(UpdateScriptSchema, rawInput);
  await accessibleScript(ctx, id, 'scripts:write');
  return uniqueName(
    withTransaction(ctx, async (tx) => {
      const script = await lockScript(tx, id);
      const contentChanged = input.content !== undefined && script.content !== input.content;
      const changes = applyChanges(script, {
        name: input.name,
        description: input.description,
        language: input.language,
        parameters: input.parameters && storedParameters(tx.runtime, input.parameters, script.parameters),
        runAs: input.runAs,
        timeoutSeconds: input.timeoutSeconds,
        osTypes: input.osTypes && [...new Set(input.osTypes)],
        category: input.category,
        tags: input.tags && [...new Set(input.tags)],
      });
      if (contentChanged) {
        await addVersion(tx, script, input.content!, input.note ?? null);
        changes.push('content');
      }
      if (changes.length === 0) return scriptView(script);
      await tx.em.flush();
      await recordAudit(tx, { action: 'script.update', resourceType: 'script', resourceId: id, orgId: script.orgId, changes, details: { name: script.name, version: script.version } });
      return scriptView(script);
    }),
  );
}

/** The script, its versions and executions go. */
export async function deleteScript(ctx: RequestContext, id: string): Promise<void> {
  const script = await accessibleScript(ctx, id, 'scripts:write');
  await withTransaction(ctx, async (tx) => {
    await tx.em.nativeDelete(Script, { id });
    await recordAudit(tx, { action: 'script.delete', resourceType: 'script', resourceId: id, orgId: script.orgId, details: { name: script.name } });
  });
}

// ── the system library ──────────────────────────────────────────────────────────────────────────

export const SystemScriptSchema = z
  .object({
    id: z.string().describe('stable id, e.g. disk-cleanup-windows'),
    name: z.string().describe('the name an imported copy takes by default'),
    description: z.string().describe('what it does'),
    language: ScriptLanguageSchema.describe('the interpreter it runs with'),
    content: z.string().describe('the script text'),
    parameters: z.array(ScriptParameterSchema).describe('the parameters executions may give'),
    runAs: ScriptRunAsSchema.describe('the account it runs as'),
    timeoutSeconds: z.number().int().describe('seconds an execution may take'),
    osTypes: z.array(OsTypeSchema).describe('the operating systems it runs on'),
    category: z.string().describe('its library category'),
    tags: z.array(z.string()).describe('its library tags'),
  })
  .meta({ title: 'SystemScript', description: 'A built-in script shipped with the service, to import into an organization' });
export type SystemScriptView = z.output<typeof SystemScriptSchema>;
export const SystemScriptListSchema = listSchema(SystemScriptSchema, 'SystemScriptList').meta({ title: 'SystemScriptList', description: 'The built-in scripts' });

export function systemScriptView(s: SystemScript): SystemScriptView {
  return { ...s, parameters: s.parameters.map((p) => parameterView({ ...p, required: p.required ?? false, secret: p.secret ?? false })) };
}

/** The built-in scripts (any caller who may read scripts). */
export async function listSystemScripts(ctx: RequestContext): Promise<{ data: SystemScriptView[] }> {
  await authorize(ctx, 'scripts:read');
  return { data: SYSTEM_SCRIPTS.map(systemScriptView) };
}

export const ImportScriptSchema = z
  .strictObject({
    orgId: uuid().optional().describe('organization users: their own organization by default; others: required'),
    name: z.string().trim().min(1).max(255).optional().describe("the copy's name; the built-in's by default"),
  })
  .meta({ description: 'Where to import a built-in script, and under which name' });
export type ImportScriptInput = z.input<typeof ImportScriptSchema>;

/** Copies a built-in script into the organization (a script of its own, version 1). */
export async function importSystemScript(ctx: RequestContext, systemId: string, rawInput: ImportScriptInput = {}): Promise<ScriptView> {
  const input = parseInput(ImportScriptSchema, rawInput ?? {});
  const source = SYSTEM_SCRIPTS.find((s) => s.id === systemId);
  const orgId = await targetOrgId(ctx, input.orgId);
  await authorize(ctx, 'scripts:write', { orgId, resource: 'Organization' });
  if (!source) throw notFound('System script');
  return uniqueName(
    withTransaction(ctx, async (tx) => {
      const script = await insertScript(tx, orgId, { ...source, name: input.name ?? source.name }, { importedFrom: source.id });
      await recordAudit(tx, { action: 'script.import', resourceType: 'script', resourceId: script.id, orgId, details: { name: script.name, systemScriptId: source.id } });
      return scriptView(script);
    }),
  );
}
