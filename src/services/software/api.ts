/** What other domains may use of the software domain (the dependency check refuses any other way in). */
export { installedSoftware, installedSoftwareOf } from './inventory.js';
export { INSTALL_SOFTWARE, UNINSTALL_SOFTWARE, softwareCommandFor, softwarePackage, type SoftwareCommand, type SoftwarePackage } from './software-commands.js';
