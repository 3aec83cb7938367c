/** What other domains may use of the maintenance domain (the dependency check refuses any other way in). */
export { suppressedDeviceIds, updatesDeferredDeviceIds } from './maintenance-occurrences.js';
