import { z } from 'zod';
import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as scriptExecutions from '../src/services/scripts/script-executions.js';
import * as scripts from '../src/services/scripts/scripts.js';
import { notFound } from '../src/errors.js';
import { call, pathId, RestRouter } from './router.js';

/** A built-in script's id (`disk-cleanup-windows`): anything else names none. */
export const libraryId = (resource: string) => z.string().regex(/^[a-z0-9][a-z0-9-]{0,99}$/, { message: notFound(resource).message });

/** Scripts of an organization, the built-in library, and their executions on devices. */
export function scriptsRouter(openapi: OpenApiRegistry): RestRouter {
  const script = { id: pathId('Script') };
  const execution = { id: pathId('Script execution') };
  return new RestRouter(openapi, 'Scripts')
    .get('/scripts', { summary: 'Scripts you can see', query: scripts.ScriptListQuery, response: scripts.ScriptPageSchema }, call(scripts.listScripts))
    .post('/scripts', { summary: 'Create a script (version 1)', body: scripts.CreateScriptSchema, status: 201, response: scripts.ScriptViewSchema }, call(scripts.createScript))
    .get('/scripts/system-library', { summary: 'The built-in scripts shipped with the service', response: scripts.SystemScriptListSchema }, call(scripts.listSystemScripts))
    .post('/scripts/import/:id', { summary: 'Copy a built-in script into the organization', params: { id: libraryId('System script') }, body: scripts.ImportScriptSchema, status: 201, response: scripts.ScriptViewSchema }, call(scripts.importSystemScript))
    .get('/scripts/executions/:id', { summary: 'One execution, with its output (secret parameters masked)', params: execution, response: scriptExecutions.ExecutionViewSchema }, call(scriptExecutions.getExecution))
    .post('/scripts/executions/:id/cancel', { summary: 'Cancel a pending, queued or running execution (the agent is told to stop it)', params: execution, response: scriptExecutions.ExecutionViewSchema }, call(scriptExecutions.cancelExecution))
    .get('/scripts/:id', { summary: 'One script', params: script, response: scripts.ScriptViewSchema }, call(scripts.getScript))
    .put('/scripts/:id', { summary: 'Replace a script’s editable fields; changed content becomes a new version', params: script, body: scripts.UpdateScriptSchema, response: scripts.ScriptViewSchema }, call(scripts.updateScript))
    .delete('/scripts/:id', { summary: 'Delete a script with its versions and executions', params: script, status: 204 }, call(scripts.deleteScript))
    .post('/scripts/:id/execute', { summary: 'Run the script on devices and/or a group’s members: one execution per device (unsupported OS skipped)', params: script, body: scriptExecutions.ExecuteScriptSchema, status: 202, response: scriptExecutions.ExecuteResultSchema }, call(scriptExecutions.executeScript))
    .get('/scripts/:id/executions', { summary: 'The script’s executions, newest first', params: script, query: scriptExecutions.ExecutionListQuery, response: scriptExecutions.ExecutionPageSchema }, call(scriptExecutions.listExecutions));
}
