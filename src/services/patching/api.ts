/** What other domains may use of the patching domain (the dependency check refuses any other way in). */
export { PatchSourceSchema, PatchSeveritySchema, type PatchView } from './patches.js';
export { type PatchApprovedEventData, type PatchAvailableEventData } from './events.js';
export { deviceCompliance, type CompliancePatchFilter, type DeviceCompliance } from './device-compliance.js';
