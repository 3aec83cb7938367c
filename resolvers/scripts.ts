import { ID } from 'type-graphql';
import { arg, args, input, mutation, operations, pageArgs, query, subscription } from '../src/graphql/contract.js';
import {
  CategoryPageSchema,
  CategoryViewSchema,
  CreateCategorySchema,
  CreateTagSchema,
  CreateVersionSchema,
  FromTemplateSchema,
  LibraryListQuery,
  ScriptTemplateListSchema,
  ScriptVersionPageSchema,
  ScriptVersionViewSchema,
  TagPageSchema,
  TagViewSchema,
  UpdateCategorySchema,
  UsageStatsSchema,
  VersionListQuery,
  createCategory,
  createFromTemplate,
  createScriptTag,
  createVersion,
  deleteCategory,
  deleteScriptTag,
  getCategory,
  listCategories,
  listScriptTags,
  listTemplates,
  listVersions,
  rollbackVersion,
  updateCategory,
  usageStats,
} from '../src/services/scripts/script-library.js';
import {
  ExecuteResultSchema,
  ExecuteScriptSchema,
  ExecutionConnectionArgs,
  ExecutionViewSchema,
  cancelExecution,
  executeScript,
  executionsConnection,
  getExecution,
  subscribeExecutionUpdates,
} from '../src/services/scripts/script-executions.js';
import {
  CreateScriptSchema,
  ImportScriptSchema,
  ScriptListQuery,
  ScriptPageSchema,
  ScriptViewSchema,
  SystemScriptListSchema,
  UpdateScriptSchema,
  createScript,
  deleteScript,
  getScript,
  importSystemScript,
  listScripts,
  listSystemScripts,
  updateScript,
} from '../src/services/scripts/scripts.js';
import { connectionOf, pageConnectionOf, paged } from './shared.js';

const scriptId = arg('scriptId', ID, { description: 'the script' });
const script = arg('id', ID, { description: 'the script' });
const execution = arg('id', ID, { description: 'the execution' });
const category = arg('id', ID, { description: 'the category' });
const tag = arg('id', ID, { description: 'the tag' });

export const ScriptResolver = operations({
  scripts: query(pageConnectionOf(ScriptPageSchema), [pageArgs('ScriptListArgs', ScriptListQuery)], paged(listScripts), { description: 'Scripts of the organizations the caller can see, by name' }),
  script: query(ScriptViewSchema, [script], getScript, { description: 'One script, with its current content' }),
  systemScripts: query(SystemScriptListSchema, [], listSystemScripts, { description: 'The built-in scripts shipped with the service, to import into an organization' }),
  scriptExecutions: query(connectionOf(ExecutionViewSchema), [args('ScriptExecutionConnectionArgs', ExecutionConnectionArgs)], executionsConnection, {
    description: 'A script’s executions with their output, newest first (users limited to some sites: those on their devices)',
  }),
  scriptExecution: query(ExecutionViewSchema, [execution], getExecution, { description: 'One execution with its output; secret parameters read as ********' }),
  scriptCategories: query(pageConnectionOf(CategoryPageSchema), [pageArgs('ScriptCategoryListArgs', LibraryListQuery)], paged(listCategories), { description: 'Script library categories, by name' }),
  scriptCategory: query(CategoryViewSchema, [category], getCategory, { description: 'One script library category' }),
  scriptTags: query(pageConnectionOf(TagPageSchema), [pageArgs('ScriptTagListArgs', LibraryListQuery)], paged(listScriptTags), { description: 'Script library tags, by name' }),
  scriptVersions: query(pageConnectionOf(ScriptVersionPageSchema), [scriptId, pageArgs('ScriptVersionListArgs', VersionListQuery)], paged(listVersions), { description: 'A script’s versions, newest first' }),
  scriptTemplates: query(ScriptTemplateListSchema, [], listTemplates, { description: 'Templates new scripts start from' }),
  scriptUsageStats: query(UsageStatsSchema, [scriptId], usageStats, { description: 'How often the script ran, how often it succeeded and how long it took' }),

  createScript: mutation(ScriptViewSchema, [input('CreateScriptInput', CreateScriptSchema, { description: 'the script' })], createScript, { description: 'Creates a script (version 1)' }),
  updateScript: mutation(ScriptViewSchema, [script, input('UpdateScriptInput', UpdateScriptSchema, { description: 'its fields, all replaced' })], updateScript, {
    description: 'Replaces the script’s editable fields (those left out take their defaults); changed content becomes a new version',
  }),
  deleteScript: mutation(Boolean, [script], deleteScript, { description: 'Deletes the script with its versions and executions' }),
  importSystemScript: mutation(
    ScriptViewSchema,
    [arg('systemScriptId', String, { description: 'a built-in script’s id, e.g. disk-cleanup-windows' }), input('ImportScriptInput', ImportScriptSchema, { nullable: true, description: 'the organization and name of the copy' })],
    (ctx, systemScriptId, body) => importSystemScript(ctx, systemScriptId, body ?? {}),
    { description: 'Copies a built-in script into the organization' },
  ),
  executeScript: mutation(ExecuteResultSchema, [script, input('ExecuteScriptInput', ExecuteScriptSchema, { description: 'the devices and parameter values' })], executeScript, {
    description: 'Runs the script on devices and/or a group’s members: one execution per device; devices whose OS it does not support are skipped',
  }),
  cancelScriptExecution: mutation(ExecutionViewSchema, [execution], cancelExecution, { description: 'Cancels a pending, queued or running execution (the agent is told to stop a handed-out one)' }),
  createScriptCategory: mutation(CategoryViewSchema, [input('CreateScriptCategoryInput', CreateCategorySchema, { description: 'the category' })], createCategory, { description: 'Creates a category (names unique per organization)' }),
  updateScriptCategory: mutation(CategoryViewSchema, [category, input('UpdateScriptCategoryInput', UpdateCategorySchema, { description: 'the changes' })], updateCategory, {
    description: 'Renames a category (its scripts follow) or changes its description',
  }),
  deleteScriptCategory: mutation(Boolean, [category], deleteCategory, { description: 'Deletes a category; its scripts stay, uncategorized' }),
  createScriptTag: mutation(TagViewSchema, [input('CreateScriptTagInput', CreateTagSchema, { description: 'the tag' })], createScriptTag, { description: 'Creates a tag (names unique per organization)' }),
  deleteScriptTag: mutation(Boolean, [tag], deleteScriptTag, { description: 'Deletes a tag; it comes off the scripts' }),
  createScriptVersion: mutation(ScriptVersionViewSchema, [scriptId, input('CreateScriptVersionInput', CreateVersionSchema, { description: 'the new content' })], createVersion, {
    description: 'A new content for the script: the next version, current from now on',
  }),
  rollbackScriptVersion: mutation(ScriptVersionViewSchema, [scriptId, arg('versionId', ID, { description: 'the version whose content to restore' })], rollbackVersion, {
    description: 'Copies an earlier version’s content into a new version',
  }),
  createScriptFromTemplate: mutation(
    ScriptViewSchema,
    [arg('templateId', String, { description: 'a template’s id, e.g. bash-basic' }), input('ScriptFromTemplateInput', FromTemplateSchema, { nullable: true, description: 'the organization and name of the new script' })],
    (ctx, templateId, body) => createFromTemplate(ctx, templateId, body ?? {}),
    { description: 'Creates a script from a template' },
  ),

  scriptExecutionUpdated: subscription(ExecutionViewSchema, [arg('executionId', ID, { description: 'the execution to follow' })], subscribeExecutionUpdates, {
    description: 'The execution each time its status changes (queued, running, finished, cancelled), from any server instance, while the caller may read it',
  }),
});
