import { args, id, input, mutation, operations, query } from '../src/graphql/contract.js';
import {
  ActiveQuery,
  CreateWindowSchema,
  MaintenanceWindowViewSchema,
  OccurrenceConnectionArgs,
  OccurrenceListSchema,
  OccurrenceViewSchema,
  UpdateWindowSchema,
  WindowConnectionArgs,
  WindowOccurrencesQuery,
  cancelWindow,
  createWindow,
  deleteWindow,
  endOccurrence,
  getOccurrence,
  getWindow,
  listActive,
  listWindowOccurrences,
  occurrencesConnection,
  startOccurrence,
  updateWindow,
  windowsConnection,
} from '../src/services/maintenance/maintenance.js';
import { connectionOf } from './shared.js';

export const MaintenanceResolver = operations({
  maintenanceWindows: query(connectionOf(MaintenanceWindowViewSchema), [args('MaintenanceWindowConnectionArgs', WindowConnectionArgs)], windowsConnection, {
    description: 'Maintenance windows the caller can see (users limited to some sites: their sites’), oldest first',
  }),
  maintenanceWindow: query(MaintenanceWindowViewSchema, [id], getWindow, { description: 'One maintenance window' }),
  maintenanceWindowOccurrences: query(OccurrenceListSchema, [id, args('MaintenanceWindowOccurrencesArgs', WindowOccurrencesQuery)], listWindowOccurrences, {
    description: 'The window’s occurrences in a range (30 days from now by default, at most 366 days), each with its id, by start',
  }),
  maintenanceOccurrences: query(connectionOf(OccurrenceViewSchema), [args('MaintenanceOccurrenceConnectionArgs', OccurrenceConnectionArgs)], occurrencesConnection, {
    description: 'Maintenance occurrences the caller can see, by start',
  }),
  maintenanceOccurrence: query(OccurrenceViewSchema, [id], getOccurrence, { description: 'One maintenance occurrence' }),
  activeMaintenance: query(OccurrenceListSchema, [args('ActiveMaintenanceArgs', ActiveQuery)], listActive, { description: 'The maintenance occurrences under way now' }),
  createMaintenanceWindow: mutation(MaintenanceWindowViewSchema, [input('CreateMaintenanceWindowInput', CreateWindowSchema)], createWindow, {
    description: 'Creates a maintenance window; its occurrences are scheduled',
  }),
  updateMaintenanceWindow: mutation(MaintenanceWindowViewSchema, [id, input('UpdateMaintenanceWindowInput', UpdateWindowSchema)], updateWindow, {
    description: 'Changes a window: a new schedule replaces the occurrences not begun; targets and flags apply at once',
  }),
  deleteMaintenanceWindow: mutation(Boolean, [id], deleteWindow, { description: 'Deletes a window and its occurrences; its devices leave maintenance' }),
  cancelMaintenanceWindow: mutation(MaintenanceWindowViewSchema, [id], cancelWindow, { description: 'Cancels the window’s future occurrences; one under way runs to its end' }),
  startMaintenanceOccurrence: mutation(OccurrenceViewSchema, [id], startOccurrence, { description: 'Begins a scheduled occurrence now; it still ends at its scheduled end' }),
  endMaintenanceOccurrence: mutation(OccurrenceViewSchema, [id], endOccurrence, { description: 'Ends an active occurrence now; its devices return to online or offline' }),
});
