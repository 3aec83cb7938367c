import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as catalog from '../src/services/software/catalog.js';
import * as inventory from '../src/services/software/inventory.js';
import { call, pathId, RestRouter } from './router.js';

/** The software catalog (packages, versions, search) and the software devices report installed. */
export function softwareRouter(openapi: OpenApiRegistry): RestRouter {
  const entry = { id: pathId('Software package') };
  const device = { deviceId: pathId('Device') };
  return (
    new RestRouter(openapi, 'Software')
      .get('/software/catalog', { summary: 'Catalog packages of the organizations you see, newest first', query: catalog.SoftwareCatalogListQuery, response: catalog.SoftwareCatalogPageSchema }, call(catalog.listSoftwareCatalog))
      .post('/software/catalog', { summary: 'Add a package to an organization’s catalog', body: catalog.CreateSoftwareCatalogSchema, status: 201, response: catalog.SoftwareCatalogViewSchema }, call(catalog.createSoftwareCatalogEntry))
      // Before `/software/catalog/:id`.
      .get('/software/catalog/search', { summary: 'Packages by name or vendor: exact matches, then prefixes, then the rest', query: catalog.SoftwareSearchQuery, response: catalog.SoftwareSearchResultSchema }, call(catalog.searchSoftwareCatalog))
      .get('/software/catalog/:id', { summary: 'One catalog package', params: entry, response: catalog.SoftwareCatalogViewSchema }, call(catalog.getSoftwareCatalogEntry))
      .patch('/software/catalog/:id', { summary: 'Change a catalog package', params: entry, body: catalog.UpdateSoftwareCatalogSchema, response: catalog.SoftwareCatalogViewSchema }, call(catalog.updateSoftwareCatalogEntry))
      .delete('/software/catalog/:id', { summary: 'Delete a catalog package with its versions', params: entry, status: 204 }, call(catalog.deleteSoftwareCatalogEntry))
      .get('/software/catalog/:id/versions', { summary: 'A package’s versions, newest first', params: entry, query: catalog.SoftwareVersionListQuery, response: catalog.SoftwareVersionPageSchema }, call(catalog.listSoftwareVersions))
      .post('/software/catalog/:id/versions', { summary: 'Add a version with its installers', params: entry, body: catalog.CreateSoftwareVersionSchema, status: 201, response: catalog.SoftwareVersionViewSchema }, call(catalog.createSoftwareVersion))
      .get('/software/inventory', { summary: 'Applications and versions installed on the devices you see, with how many report each', query: inventory.SoftwareInventoryListQuery, response: inventory.SoftwareInventoryPageSchema }, call(inventory.listSoftwareInventory))
      .get('/software/inventory/:deviceId', { summary: 'The applications a device’s agent last reported', params: device, query: inventory.DeviceSoftwareListQuery, response: inventory.DeviceSoftwarePageSchema }, call(inventory.listDeviceSoftware))
      .post(
        '/software/inventory/:deviceId/:softwareId/uninstall',
        { summary: 'Uninstall an application through the device’s agent', params: { ...device, softwareId: pathId('Software') }, status: 202, response: inventory.UninstallQueuedSchema },
        call(inventory.uninstallDeviceSoftware),
      )
  );
}
