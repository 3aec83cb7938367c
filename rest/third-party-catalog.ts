import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as catalog from '../src/services/patching/third-party-catalog.js';
import { call, pathId, RestRouter } from './router.js';

/** The third-party application catalog (platform administrators). */
export function thirdPartyCatalogRouter(openapi: OpenApiRegistry): RestRouter {
  const entry = { id: pathId('Third-party catalog entry') };
  return new RestRouter(openapi, 'Third-party catalog')
    .get('/third-party-catalog', { summary: 'The third-party catalog, newest first; platform administrators', query: catalog.CatalogListQuery, response: catalog.CatalogPageSchema }, call(catalog.listCatalogEntries))
    .post('/third-party-catalog', { summary: 'Add an application to the catalog; platform administrators', body: catalog.CreateCatalogEntrySchema, status: 201, response: catalog.CatalogEntryViewSchema }, call(catalog.createCatalogEntry))
    .get('/third-party-catalog/:id', { summary: 'One catalog entry', params: entry, response: catalog.CatalogEntryViewSchema }, call(catalog.getCatalogEntry))
    .patch('/third-party-catalog/:id', { summary: 'Change a catalog entry (new versions make it untested)', params: entry, body: catalog.UpdateCatalogEntrySchema, response: catalog.CatalogEntryViewSchema }, call(catalog.updateCatalogEntry))
    .delete('/third-party-catalog/:id', { summary: 'Remove a catalog entry', params: entry, status: 204 }, call(catalog.deleteCatalogEntry))
    .post(
      '/third-party-catalog/:id/test',
      { summary: 'Install a version on a device (install_software) to test it; its result becomes lastTest', params: entry, body: catalog.TestCatalogEntrySchema, status: 202, response: catalog.CatalogTestQueuedSchema },
      call(catalog.testCatalogEntry),
    );
}
