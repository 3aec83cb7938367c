import type { OpenApiRegistry } from '../src/http/openapi.js';
import {
  ActiveQuery,
  CreateWindowSchema,
  MaintenanceWindowViewSchema,
  OccurrenceListQuery,
  OccurrenceListSchema,
  OccurrencePageSchema,
  OccurrenceViewSchema,
  UpdateWindowSchema,
  WindowListQuery,
  WindowOccurrencesQuery,
  WindowPageSchema,
  cancelWindow,
  createWindow,
  deleteWindow,
  endOccurrence,
  getOccurrence,
  getWindow,
  listActive,
  listOccurrences,
  listWindowOccurrences,
  listWindows,
  startOccurrence,
  updateWindow,
} from '../src/services/maintenance/maintenance.js';
import { RestRouter, pathId } from './router.js';

/** Maintenance windows and their occurrences: devices under maintenance, alerts suppressed, updates and patching deferred. */
export function maintenanceRouter(openapi: OpenApiRegistry): RestRouter {
  const window = { id: pathId('Maintenance window') };
  const occurrence = { id: pathId('Maintenance occurrence') };
  return new RestRouter(openapi, 'Maintenance')
    .get('/maintenance/windows', { summary: 'Maintenance windows you can see, oldest first', query: WindowListQuery, response: WindowPageSchema }, (ctx, { query }) => listWindows(ctx, query))
    .post('/maintenance/windows', { summary: 'Create a maintenance window (its occurrences are scheduled)', body: CreateWindowSchema, status: 201, response: MaintenanceWindowViewSchema }, (ctx, { body }) =>
      createWindow(ctx, body),
    )
    .get('/maintenance/windows/:id', { summary: 'One maintenance window', params: window, response: MaintenanceWindowViewSchema }, (ctx, { params }) => getWindow(ctx, params.id))
    .patch('/maintenance/windows/:id', { summary: 'Change a window: a new schedule replaces the occurrences not begun; targets and flags apply at once', params: window, body: UpdateWindowSchema, response: MaintenanceWindowViewSchema }, (ctx, { params, body }) =>
      updateWindow(ctx, params.id, body),
    )
    .delete('/maintenance/windows/:id', { summary: 'Delete a window and its occurrences (its devices leave maintenance)', params: window, status: 204 }, (ctx, { params }) => deleteWindow(ctx, params.id))
    .post('/maintenance/windows/:id/cancel', { summary: 'Cancel the window’s future occurrences (one under way runs to its end)', params: window, response: MaintenanceWindowViewSchema }, (ctx, { params }) =>
      cancelWindow(ctx, params.id),
    )
    .get('/maintenance/windows/:id/occurrences', { summary: 'The window’s occurrences in a range (UTC instants, each with its id), by start', params: window, query: WindowOccurrencesQuery, response: OccurrenceListSchema }, (ctx, { params, query }) =>
      listWindowOccurrences(ctx, params.id, query),
    )
    .get('/maintenance/occurrences', { summary: 'Occurrences you can see, by start', query: OccurrenceListQuery, response: OccurrencePageSchema }, (ctx, { query }) => listOccurrences(ctx, query))
    .get('/maintenance/occurrences/:id', { summary: 'One occurrence', params: occurrence, response: OccurrenceViewSchema }, (ctx, { params }) => getOccurrence(ctx, params.id))
    .post('/maintenance/occurrences/:id/start', { summary: 'Begin a scheduled occurrence now (it still ends at its scheduled end)', params: occurrence, response: OccurrenceViewSchema }, (ctx, { params }) =>
      startOccurrence(ctx, params.id),
    )
    .post('/maintenance/occurrences/:id/end', { summary: 'End an active occurrence now', params: occurrence, response: OccurrenceViewSchema }, (ctx, { params }) => endOccurrence(ctx, params.id))
    .get('/maintenance/active', { summary: 'The occurrences under way now', query: ActiveQuery, response: OccurrenceListSchema }, (ctx, { query }) => listActive(ctx, query));
}
