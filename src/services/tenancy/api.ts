/** What other domains may use of the tenancy domain (the dependency check refuses any other way in). */
export { siteNames } from './sites.js';
