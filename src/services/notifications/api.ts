/** What other domains may use of the notifications domain (the dependency check refuses any other way in). */
export { createNotifications } from './notifications.js';
