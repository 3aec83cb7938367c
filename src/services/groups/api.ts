/** What other domains may use of the groups domain (the dependency check refuses any other way in). */
export { groupMembership } from './device-groups.js';
