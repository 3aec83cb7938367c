/** What other domains may use of the security domain (the dependency check refuses any other way in). */
export { diskEncryption } from './security-reports.js';
