import { z } from 'zod';
import type { OpenApiRegistry } from '../src/http/openapi.js';
import {
  ExecuteResultSchema,
  ExecuteScriptSchema,
  ExecutionListQuery,
  ExecutionPageSchema,
  ExecutionViewSchema,
  cancelExecution,
  executeScript,
  getExecution,
  listExecutions,
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
import { notFound } from '../src/errors.js';
import { RestRouter, pathId } from './router.js';

/** A built-in script's id (`disk-cleanup-windows`): anything else names none. */
export const libraryId = (resource: string) => z.string().regex(/^[a-z0-9][a-z0-9-]{0,99}$/, { message: notFound(resource).message });

/** Scripts of an organization, the built-in library, and their executions on devices. */
export function scriptsRouter(openapi: OpenApiRegistry): RestRouter {
  const script = { id: pathId('Script') };
  const execution = { id: pathId('Script execution') };
  return new RestRouter(openapi, 'Scripts')
    .get('/scripts', { summary: 'Scripts you can see', query: ScriptListQuery, response: ScriptPageSchema }, (ctx, { query }) => listScripts(ctx, query))
    .post('/scripts', { summary: 'Create a script (version 1)', body: CreateScriptSchema, status: 201, response: ScriptViewSchema }, (ctx, { body }) => createScript(ctx, body))
    .get('/scripts/system-library', { summary: 'The built-in scripts shipped with the service', response: SystemScriptListSchema }, (ctx) => listSystemScripts(ctx))
    .post('/scripts/import/:id', { summary: 'Copy a built-in script into the organization', params: { id: libraryId('System script') }, body: ImportScriptSchema, status: 201, response: ScriptViewSchema }, (ctx, { params, body }) =>
      importSystemScript(ctx, params.id, body),
    )
    .get('/scripts/executions/:id', { summary: 'One execution, with its output (secret parameters masked)', params: execution, response: ExecutionViewSchema }, (ctx, { params }) => getExecution(ctx, params.id))
    .post('/scripts/executions/:id/cancel', { summary: 'Cancel a pending, queued or running execution (the agent is told to stop it)', params: execution, response: ExecutionViewSchema }, (ctx, { params }) =>
      cancelExecution(ctx, params.id),
    )
    .get('/scripts/:id', { summary: 'One script', params: script, response: ScriptViewSchema }, (ctx, { params }) => getScript(ctx, params.id))
    .put('/scripts/:id', { summary: 'Replace a script’s editable fields; changed content becomes a new version', params: script, body: UpdateScriptSchema, response: ScriptViewSchema }, (ctx, { params, body }) =>
      updateScript(ctx, params.id, body),
    )
    .delete('/scripts/:id', { summary: 'Delete a script with its versions and executions', params: script, status: 204 }, (ctx, { params }) => deleteScript(ctx, params.id))
    .post('/scripts/:id/execute', { summary: 'Run the script on devices and/or a group’s members: one execution per device (unsupported OS skipped)', params: script, body: ExecuteScriptSchema, status: 202, response: ExecuteResultSchema }, (ctx, { params, body }) =>
      executeScript(ctx, params.id, body),
    )
    .get('/scripts/:id/executions', { summary: 'The script’s executions, newest first', params: script, query: ExecutionListQuery, response: ExecutionPageSchema }, (ctx, { params, query }) =>
      listExecutions(ctx, params.id, query),
    );
}
