/** What other domains may use of the alerts domain (the dependency check refuses any other way in). */
export { queueChannelMessages, requireOrgChannels } from './alert-channels.js';
export { raiseAlert, resolveAlert, type RaiseOutcome } from './alert-raise.js';
