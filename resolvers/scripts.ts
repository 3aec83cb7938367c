import { ID } from 'type-graphql';
import { arg, args, input, mutation, operations, pageArgs, query, subscription } from '../src/graphql/contract.js';
import * as scriptLibrary from '../src/services/scripts/script-library.js';
import * as scriptExecutions from '../src/services/scripts/script-executions.js';
import * as scripts from '../src/services/scripts/scripts.js';
import { connectionOf, pageConnectionOf, paged } from './shared.js';

const scriptId = arg('scriptId', ID, { description: 'the script' });
const script = arg('id', ID, { description: 'the script' });
const execution = arg('id', ID, { description: 'the execution' });
const category = arg('id', ID, { description: 'the category' });
const tag = arg('id', ID, { description: 'the tag' });

export const ScriptResolver = operations({
  scripts: query(pageConnectionOf(scripts.ScriptPageSchema), [pageArgs('ScriptListArgs', scripts.ScriptListQuery)], paged(scripts.listScripts), { description: 'Scripts of the organizations the caller can see, by name' }),
  script: query(scripts.ScriptViewSchema, [script], scripts.getScript, { description: 'One script, with its current content' }),
  systemScripts: query(scripts.SystemScriptListSchema, [], scripts.listSystemScripts, { description: 'The built-in scripts shipped with the service, to import into an organization' }),
  scriptExecutions: query(connectionOf(scriptExecutions.ExecutionViewSchema), [args('ScriptExecutionConnectionArgs', scriptExecutions.ExecutionConnectionArgs)], scriptExecutions.executionsConnection, {
    description: 'A script’s executions with their output, newest first (users limited to some sites: those on their devices)',
  }),
  scriptExecution: query(scriptExecutions.ExecutionViewSchema, [execution], scriptExecutions.getExecution, { description: 'One execution with its output; secret parameters read as ********' }),
  scriptCategories: query(pageConnectionOf(scriptLibrary.CategoryPageSchema), [pageArgs('ScriptCategoryListArgs', scriptLibrary.LibraryListQuery)], paged(scriptLibrary.listCategories), { description: 'Script library categories, by name' }),
  scriptCategory: query(scriptLibrary.CategoryViewSchema, [category], scriptLibrary.getCategory, { description: 'One script library category' }),
  scriptTags: query(pageConnectionOf(scriptLibrary.TagPageSchema), [pageArgs('ScriptTagListArgs', scriptLibrary.LibraryListQuery)], paged(scriptLibrary.listScriptTags), { description: 'Script library tags, by name' }),
  scriptVersions: query(pageConnectionOf(scriptLibrary.ScriptVersionPageSchema), [scriptId, pageArgs('ScriptVersionListArgs', scriptLibrary.VersionListQuery)], paged(scriptLibrary.listVersions), { description: 'A script’s versions, newest first' }),
  scriptTemplates: query(scriptLibrary.ScriptTemplateListSchema, [], scriptLibrary.listTemplates, { description: 'Templates new scripts start from' }),
  scriptUsageStats: query(scriptLibrary.UsageStatsSchema, [scriptId], scriptLibrary.usageStats, { description: 'How often the script ran, how often it succeeded and how long it took' }),

  createScript: mutation(scripts.ScriptViewSchema, [input('CreateScriptInput', scripts.CreateScriptSchema, { description: 'the script' })], scripts.createScript, { description: 'Creates a script (version 1)' }),
  updateScript: mutation(scripts.ScriptViewSchema, [script, input('UpdateScriptInput', scripts.UpdateScriptSchema, { description: 'its fields, all replaced' })], scripts.updateScript, {
    description: 'Replaces the script’s editable fields (those left out take their defaults); changed content becomes a new version',
  }),
  deleteScript: mutation(Boolean, [script], scripts.deleteScript, { description: 'Deletes the script with its versions and executions' }),
  importSystemScript: mutation(
    scripts.ScriptViewSchema,
    [arg('systemScriptId', String, { description: 'a built-in script’s id, e.g. disk-cleanup-windows' }), input('ImportScriptInput', scripts.ImportScriptSchema, { nullable: true, description: 'the organization and name of the copy' })],
    (ctx, systemScriptId, body) => scripts.importSystemScript(ctx, systemScriptId, body ?? {}),
    { description: 'Copies a built-in script into the organization' },
  ),
  executeScript: mutation(scriptExecutions.ExecuteResultSchema, [script, input('ExecuteScriptInput', scriptExecutions.ExecuteScriptSchema, { description: 'the devices and parameter values' })], scriptExecutions.executeScript, {
    description: 'Runs the script on devices and/or a group’s members: one execution per device; devices whose OS it does not support are skipped',
  }),
  cancelScriptExecution: mutation(scriptExecutions.ExecutionViewSchema, [execution], scriptExecutions.cancelExecution, { description: 'Cancels a pending, queued or running execution (the agent is told to stop a handed-out one)' }),
  createScriptCategory: mutation(scriptLibrary.CategoryViewSchema, [input('CreateScriptCategoryInput', scriptLibrary.CreateCategorySchema, { description: 'the category' })], scriptLibrary.createCategory, { description: 'Creates a category (names unique per organization)' }),
  updateScriptCategory: mutation(scriptLibrary.CategoryViewSchema, [category, input('UpdateScriptCategoryInput', scriptLibrary.UpdateCategorySchema, { description: 'the changes' })], scriptLibrary.updateCategory, {
    description: 'Renames a category (its scripts follow) or changes its description',
  }),
  deleteScriptCategory: mutation(Boolean, [category], scriptLibrary.deleteCategory, { description: 'Deletes a category; its scripts stay, uncategorized' }),
  createScriptTag: mutation(scriptLibrary.TagViewSchema, [input('CreateScriptTagInput', scriptLibrary.CreateTagSchema, { description: 'the tag' })], scriptLibrary.createScriptTag, { description: 'Creates a tag (names unique per organization)' }),
  deleteScriptTag: mutation(Boolean, [tag], scriptLibrary.deleteScriptTag, { description: 'Deletes a tag; it comes off the scripts' }),
  createScriptVersion: mutation(scriptLibrary.ScriptVersionViewSchema, [scriptId, input('CreateScriptVersionInput', scriptLibrary.CreateVersionSchema, { description: 'the new content' })], scriptLibrary.createVersion, {
    description: 'A new content for the script: the next version, current from now on',
  }),
  rollbackScriptVersion: mutation(scriptLibrary.ScriptVersionViewSchema, [scriptId, arg('versionId', ID, { description: 'the version whose content to restore' })], scriptLibrary.rollbackVersion, {
    description: 'Copies an earlier version’s content into a new version',
  }),
  createScriptFromTemplate: mutation(
    scripts.ScriptViewSchema,
    [arg('templateId', String, { description: 'a template’s id, e.g. bash-basic' }), input('ScriptFromTemplateInput', scriptLibrary.FromTemplateSchema, { nullable: true, description: 'the organization and name of the new script' })],
    (ctx, templateId, body) => scriptLibrary.createFromTemplate(ctx, templateId, body ?? {}),
    { description: 'Creates a script from a template' },
  ),

  scriptExecutionUpdated: subscription(scriptExecutions.ExecutionViewSchema, [arg('executionId', ID, { description: 'the execution to follow' })], scriptExecutions.subscribeExecutionUpdates, {
    description: 'The execution each time its status changes (queued, running, finished, cancelled), from any server instance, while the caller may read it',
  }),
});
