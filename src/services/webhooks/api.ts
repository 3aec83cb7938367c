/** What other domains may use of the webhooks domain (the dependency check refuses any other way in). */
export { WEBHOOK_PERMISSION, guardOptions } from './webhooks.js';
