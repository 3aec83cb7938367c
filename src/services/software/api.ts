/** What other domains may use of the software domain (the dependency check refuses any other way in). */
export { installedSoftware } from './inventory.js';
