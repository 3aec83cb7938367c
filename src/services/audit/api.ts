/** What other domains may use of the audit domain (the dependency check refuses any other way in). */
export { recordAudit, recordChange } from './record.js';
