import { cursorArgs, id, input, mutation, operations, query } from '../src/graphql/contract.js';
import * as catalog from '../src/services/patching/third-party-catalog.js';
import { connectionOf, cursored } from './shared.js';

export const ThirdPartyCatalogResolver = operations({
  thirdPartyCatalog: query(
    connectionOf(catalog.CatalogEntryViewSchema),
    // `serviceTested` takes "true"/"false" in a REST query string; GraphQL has real booleans.
    [cursorArgs('ThirdPartyCatalogListArgs', catalog.CatalogListQuery, { fields: { serviceTested: { type: () => Boolean } } })],
    cursored(catalog.listCatalogEntries, (e) => e.createdAt, catalog.countCatalogEntries),
    { description: 'The third-party catalog, newest first (as GET /third-party-catalog); platform administrators' },
  ),
  thirdPartyCatalogEntry: query(catalog.CatalogEntryViewSchema, [id], catalog.getCatalogEntry, { description: 'One third-party catalog entry' }),
  createThirdPartyCatalogEntry: mutation(catalog.CatalogEntryViewSchema, [input('CreateThirdPartyCatalogEntryInput', catalog.CreateCatalogEntrySchema)], catalog.createCatalogEntry, {
    description: 'Adds an application to the third-party catalog; platform administrators',
  }),
  updateThirdPartyCatalogEntry: mutation(catalog.CatalogEntryViewSchema, [id, input('UpdateThirdPartyCatalogEntryInput', catalog.UpdateCatalogEntrySchema)], catalog.updateCatalogEntry, {
    description: 'Changes a third-party catalog entry (new versions make it untested)',
  }),
  deleteThirdPartyCatalogEntry: mutation(Boolean, [id], catalog.deleteCatalogEntry, { description: 'Removes a third-party catalog entry' }),
  testThirdPartyCatalogEntry: mutation(catalog.CatalogTestQueuedSchema, [id, input('TestThirdPartyCatalogEntryInput', catalog.TestCatalogEntrySchema)], catalog.testCatalogEntry, {
    description: 'Installs a version on a device (install_software) to test it; its result becomes lastTest',
  }),
});
