import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as maintenance from '../src/services/maintenance/maintenance.js';
import { call, pathId, RestRouter } from './router.js';

/** Maintenance windows and their occurrences: devices under maintenance, alerts suppressed, updates and patching deferred. */
export function maintenanceRouter(openapi: OpenApiRegistry): RestRouter {
  const window = { id: pathId('Maintenance window') };
  const occurrence = { id: pathId('Maintenance occurrence') };
  return new RestRouter(openapi, 'Maintenance')
    .get('/maintenance/windows', { summary: 'Maintenance windows you can see, oldest first', query: maintenance.WindowListQuery, response: maintenance.WindowPageSchema }, call(maintenance.listWindows))
    .post('/maintenance/windows', { summary: 'Create a maintenance window (its occurrences are scheduled)', body: maintenance.CreateWindowSchema, status: 201, response: maintenance.MaintenanceWindowViewSchema }, call(maintenance.createWindow))
    .get('/maintenance/windows/:id', { summary: 'One maintenance window', params: window, response: maintenance.MaintenanceWindowViewSchema }, call(maintenance.getWindow))
    .patch('/maintenance/windows/:id', { summary: 'Change a window: a new schedule replaces the occurrences not begun; targets and flags apply at once', params: window, body: maintenance.UpdateWindowSchema, response: maintenance.MaintenanceWindowViewSchema }, call(maintenance.updateWindow))
    .delete('/maintenance/windows/:id', { summary: 'Delete a window and its occurrences (its devices leave maintenance)', params: window, status: 204 }, call(maintenance.deleteWindow))
    .post('/maintenance/windows/:id/cancel', { summary: 'Cancel the window’s future occurrences (one under way runs to its end)', params: window, response: maintenance.MaintenanceWindowViewSchema }, call(maintenance.cancelWindow))
    .get('/maintenance/windows/:id/occurrences', { summary: 'The window’s occurrences in a range (UTC instants, each with its id), by start', params: window, query: maintenance.WindowOccurrencesQuery, response: maintenance.OccurrenceListSchema }, call(maintenance.listWindowOccurrences))
    .get('/maintenance/occurrences', { summary: 'Occurrences you can see, by start', query: maintenance.OccurrenceListQuery, response: maintenance.OccurrencePageSchema }, call(maintenance.listOccurrences))
    .get('/maintenance/occurrences/:id', { summary: 'One occurrence', params: occurrence, response: maintenance.OccurrenceViewSchema }, call(maintenance.getOccurrence))
    .post('/maintenance/occurrences/:id/start', { summary: 'Begin a scheduled occurrence now (it still ends at its scheduled end)', params: occurrence, response: maintenance.OccurrenceViewSchema }, call(maintenance.startOccurrence))
    .post('/maintenance/occurrences/:id/end', { summary: 'End an active occurrence now', params: occurrence, response: maintenance.OccurrenceViewSchema }, call(maintenance.endOccurrence))
    .get('/maintenance/active', { summary: 'The occurrences under way now', query: maintenance.ActiveQuery, response: maintenance.OccurrenceListSchema }, call(maintenance.listActive));
}
