import { ID } from 'type-graphql';
import { z } from 'zod';
import { arg, args, cursorArgs, id, input, mutation, operations, query } from '../src/graphql/contract.js';
import * as catalog from '../src/services/software/catalog.js';
import * as inventory from '../src/services/software/inventory.js';
import { uuid } from '../src/validation.js';
import { connectionOf, cursored } from './shared.js';

// The lists under one record take its id beside the page (`catalogId`, `deviceId`).
const VersionListArgs = catalog.SoftwareVersionListQuery.extend({ catalogId: uuid().describe('the package') });
const DeviceSoftwareArgs = inventory.DeviceSoftwareListQuery.extend({ deviceId: uuid().describe('the device') });

export const SoftwareResolver = operations({
  softwareCatalog: query(connectionOf(catalog.SoftwareCatalogViewSchema), [cursorArgs('SoftwareCatalogListArgs', catalog.SoftwareCatalogListQuery)], cursored(catalog.listSoftwareCatalog, (c) => c.createdAt, catalog.countSoftwareCatalog), {
    description: 'Catalog packages of the organizations the caller sees, newest first (as GET /software/catalog)',
  }),
  softwareCatalogEntry: query(catalog.SoftwareCatalogViewSchema, [id], catalog.getSoftwareCatalogEntry, { description: 'One catalog package' }),
  softwareCatalogSearch: query(catalog.SoftwareSearchResultSchema, [args('SoftwareCatalogSearchArgs', catalog.SoftwareSearchQuery)], catalog.searchSoftwareCatalog, {
    description: 'Packages by name or vendor: exact matches, then prefixes, then the rest (as GET /software/catalog/search)',
  }),
  softwareVersions: query(
    connectionOf(catalog.SoftwareVersionViewSchema),
    [cursorArgs('SoftwareVersionListArgs', VersionListArgs)],
    cursored((ctx, { catalogId, ...page }: z.input<typeof VersionListArgs>) => catalog.listSoftwareVersions(ctx, catalogId, page), (v) => v.createdAt, (ctx, { catalogId }) => catalog.countSoftwareVersions(ctx, catalogId)),
    { description: 'A package’s versions, newest first (as GET /software/catalog/:id/versions)' },
  ),
  softwareInventory: query(connectionOf(inventory.SoftwareInventoryItemSchema), [cursorArgs('SoftwareInventoryListArgs', inventory.SoftwareInventoryListQuery)], inventory.softwareInventoryConnection, {
    description: 'Applications and versions installed on the devices the caller sees, by name (as GET /software/inventory)',
  }),
  deviceSoftware: query(
    connectionOf(inventory.DeviceSoftwareViewSchema),
    [cursorArgs('DeviceSoftwareListArgs', DeviceSoftwareArgs)],
    cursored((ctx, { deviceId, ...page }: z.input<typeof DeviceSoftwareArgs>) => inventory.listDeviceSoftware(ctx, deviceId, page), (s) => s.name, (ctx, { deviceId }) => inventory.countDeviceSoftware(ctx, deviceId)),
    { description: 'The applications a device’s agent last reported, by name (as GET /software/inventory/:deviceId)' },
  ),
  createSoftwareCatalogEntry: mutation(catalog.SoftwareCatalogViewSchema, [input('CreateSoftwareCatalogEntryInput', catalog.CreateSoftwareCatalogSchema)], catalog.createSoftwareCatalogEntry, {
    description: 'Adds a package to an organization’s catalog',
  }),
  updateSoftwareCatalogEntry: mutation(catalog.SoftwareCatalogViewSchema, [id, input('UpdateSoftwareCatalogEntryInput', catalog.UpdateSoftwareCatalogSchema)], catalog.updateSoftwareCatalogEntry, {
    description: 'Changes a catalog package',
  }),
  deleteSoftwareCatalogEntry: mutation(Boolean, [id], catalog.deleteSoftwareCatalogEntry, { description: 'Deletes a catalog package with its versions' }),
  createSoftwareVersion: mutation(catalog.SoftwareVersionViewSchema, [arg('catalogId', ID, { description: 'The package.' }), input('CreateSoftwareVersionInput', catalog.CreateSoftwareVersionSchema)], catalog.createSoftwareVersion, {
    description: 'Adds a version with its installers to a package',
  }),
  uninstallDeviceSoftware: mutation(
    inventory.UninstallQueuedSchema,
    [arg('deviceId', ID, { description: 'The device.' }), arg('softwareId', ID, { description: 'The item of its software list.' })],
    inventory.uninstallDeviceSoftware,
    { description: 'Uninstalls an application through the device’s agent (as POST /software/inventory/:deviceId/:softwareId/uninstall)' },
  ),
});
