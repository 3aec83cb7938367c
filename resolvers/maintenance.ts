import { args, id, input, mutation, operations, query } from '../src/graphql/contract.js';
import * as maintenance from '../src/services/maintenance/maintenance.js';
import { connectionOf } from './shared.js';

export const MaintenanceResolver = operations({
  maintenanceWindows: query(connectionOf(maintenance.MaintenanceWindowViewSchema), [args('MaintenanceWindowConnectionArgs', maintenance.WindowConnectionArgs)], maintenance.windowsConnection, {
    description: 'Maintenance windows the caller can see (users limited to some sites: their sites’), oldest first',
  }),
  maintenanceWindow: query(maintenance.MaintenanceWindowViewSchema, [id], maintenance.getWindow, { description: 'One maintenance window' }),
  maintenanceWindowOccurrences: query(maintenance.OccurrenceListSchema, [id, args('MaintenanceWindowOccurrencesArgs', maintenance.WindowOccurrencesQuery)], maintenance.listWindowOccurrences, {
    description: 'The window’s occurrences in a range (30 days from now by default, at most 366 days), each with its id, by start',
  }),
  maintenanceOccurrences: query(connectionOf(maintenance.OccurrenceViewSchema), [args('MaintenanceOccurrenceConnectionArgs', maintenance.OccurrenceConnectionArgs)], maintenance.occurrencesConnection, {
    description: 'Maintenance occurrences the caller can see, by start',
  }),
  maintenanceOccurrence: query(maintenance.OccurrenceViewSchema, [id], maintenance.getOccurrence, { description: 'One maintenance occurrence' }),
  activeMaintenance: query(maintenance.OccurrenceListSchema, [args('ActiveMaintenanceArgs', maintenance.ActiveQuery)], maintenance.listActive, { description: 'The maintenance occurrences under way now' }),
  createMaintenanceWindow: mutation(maintenance.MaintenanceWindowViewSchema, [input('CreateMaintenanceWindowInput', maintenance.CreateWindowSchema)], maintenance.createWindow, {
    description: 'Creates a maintenance window; its occurrences are scheduled',
  }),
  updateMaintenanceWindow: mutation(maintenance.MaintenanceWindowViewSchema, [id, input('UpdateMaintenanceWindowInput', maintenance.UpdateWindowSchema)], maintenance.updateWindow, {
    description: 'Changes a window: a new schedule replaces the occurrences not begun; targets and flags apply at once',
  }),
  deleteMaintenanceWindow: mutation(Boolean, [id], maintenance.deleteWindow, { description: 'Deletes a window and its occurrences; its devices leave maintenance' }),
  cancelMaintenanceWindow: mutation(maintenance.MaintenanceWindowViewSchema, [id], maintenance.cancelWindow, { description: 'Cancels the window’s future occurrences; one under way runs to its end' }),
  startMaintenanceOccurrence: mutation(maintenance.OccurrenceViewSchema, [id], maintenance.startOccurrence, { description: 'Begins a scheduled occurrence now; it still ends at its scheduled end' }),
  endMaintenanceOccurrence: mutation(maintenance.OccurrenceViewSchema, [id], maintenance.endOccurrence, { description: 'Ends an active occurrence now; its devices return to online or offline' }),
});
