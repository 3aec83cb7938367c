/** What other domains may use of the maintenance domain (the dependency check refuses any other way in). */
export { patchingDeferredDeviceIds, suppressedDeviceIds, updatesDeferredDeviceIds } from './maintenance-occurrences.js';
