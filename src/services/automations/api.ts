/** What other domains may use of the automations domain (the dependency check refuses any other way in). */
export { runEventInSight } from './automation-runs.js';
