import { randomUUID } from 'node:crypto';
import type { FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { ThirdPartyCatalogEntry, type CatalogDetection, type CatalogVersion } from '../../../entities/third-party-catalog.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, requirePrincipal } from '../../auth/policy.js';
import { containsPattern, escapeLike } from '../../db/like.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest, forbidden, notFound } from '../../errors.js';
import { cursorListFields, cursorPageSchema, finishCursorPage, keysetWhere } from '../../pagination.js';
import { enumValues, parseInput, queryBoolean, timestamp, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { findDevices, queueCommand, type CommandTypeHooks } from '../devices/api.js';
import { INSTALL_SOFTWARE } from '../software/api.js';
import { applyChanges, providedFields } from '../shared/changes.js';
import { requiredText } from '../shared/text.js';

/*
 * The third-party application catalog: applications the service knows how to install silently, each
 * version with its installer, checksum and how an installed copy is detected. The platform's, not an
 * organization's: system-scope callers (platform administrators) read and write it; a test installs a
 * version on a device (`install_software`) and its result marks the entry tested.
 */

const RESOURCE = 'Third-party catalog entry';

export const DETECTION_TYPES = ['registry', 'file', 'package'] as const;
export const DetectionTypeSchema = z
  .enum(DETECTION_TYPES)
  .meta({ title: 'CatalogDetectionType', description: 'How an installed version is recognized on a device' })
  .register(enumValues, {
    registry: 'A Windows registry key (`key`), optionally a value (`valueName`) and what it must hold (`expectedValue`).',
    file: 'A file (`path`), optionally its version (`version`).',
    package: 'An installed package of the operating system’s package manager (`name`).',
  });

/** Each detection type's fields: required, then optional; any other field is refused. */
const DETECTION_FIELDS: Record<(typeof DETECTION_TYPES)[number], { required: string[]; optional: string[] }> = {
  registry: { required: ['key'], optional: ['valueName', 'expectedValue'] },
  file: { required: ['path'], optional: ['version'] },
  package: { required: ['name'], optional: [] },
};

const detectionFields = {
  key: requiredText(500).optional().describe('registry: the key, e.g. HKLM\\SOFTWARE\\Vendor\\App'),
  valueName: requiredText(200).optional().describe('registry: the value read under the key'),
  expectedValue: requiredText(500).optional().describe('registry: what the value holds once installed'),
  path: requiredText(1000).optional().describe('file: its full path'),
  version: requiredText(100).optional().describe('file: its version once installed'),
  name: requiredText(300).optional().describe('package: the package’s name'),
};

const DetectionInput = z
  .strictObject({ type: DetectionTypeSchema, ...detectionFields })
  .superRefine((detection, ctx) => {
    const { required, optional } = DETECTION_FIELDS[detection.type];
    for (const field of required) if ((detection as Record<string, unknown>)[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: `required for ${detection.type} detection` });
    for (const [field, value] of Object.entries(detection)) {
      if (field !== 'type' && value !== undefined && !required.includes(field) && !optional.includes(field)) ctx.addIssue({ code: 'custom', path: [field], message: `not a field of ${detection.type} detection` });
    }
  })
  .meta({ title: 'CatalogDetectionInput', description: 'registry: key (valueName, expectedValue); file: path (version); package: name' });

const httpsUrl = z
  .string()
  .trim()
  .max(2000)
  .refine((value) => URL.canParse(value) && new URL(value).protocol === 'https:', { message: 'must be an https URL' });

const VersionInput = z
  .strictObject({
    version: requiredText(100).describe('the version, unique in the entry'),
    installerUrl: httpsUrl.describe('where the installer is downloaded (https)'),
    sha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, { message: 'must be 64 hexadecimal digits' })
      .transform((value) => value.toLowerCase())
      .describe('the installer’s SHA-256, checked before it runs'),
    silentArgs: requiredText(1000).optional().describe('the installer’s arguments for an unattended install'),
    detection: DetectionInput,
  })
  .meta({ title: 'CatalogVersionInput', description: 'One installable version of an application' });

const Versions = z
  .array(VersionInput)
  .min(1)
  .max(100)
  .refine((versions) => new Set(versions.map((v) => v.version)).size === versions.length, { message: 'versions must be unique' });

export const CreateCatalogEntrySchema = z
  .strictObject({ name: requiredText(200).describe('the application'), vendor: requiredText(200).describe('who publishes it'), versions: Versions.describe('its installable versions (1 to 100)') })
  .meta({ title: 'CreateThirdPartyCatalogEntryInput', description: 'A new third-party catalog entry' });
export type CreateCatalogEntryInput = z.input<typeof CreateCatalogEntrySchema>;

export const UpdateCatalogEntrySchema = z
  .strictObject({
    name: requiredText(200).optional().describe('a new name'),
    vendor: requiredText(200).optional().describe('a new vendor'),
    versions: Versions.optional().describe('replaces the versions (the entry is untested again)'),
  })
  .meta({ title: 'UpdateThirdPartyCatalogEntryInput', description: 'The fields to change; at least one' })
  .refine((input) => Object.values(input).some((v) => v !== undefined), 'Provide at least one field to change');
export type UpdateCatalogEntryInput = z.input<typeof UpdateCatalogEntrySchema>;

export const TEST_STATUSES = ['passed', 'failed'] as const;
const TestStatusSchema = z
  .enum(TEST_STATUSES)
  .meta({ title: 'CatalogTestStatus', description: 'How a test install ended' })
  .register(enumValues, { passed: 'The agent completed the install.', failed: 'The install failed (or timed out).' });

export const CatalogEntryViewSchema = z
  .object({
    id: uuid().describe('the entry'),
    name: z.string().describe('the application'),
    vendor: z.string().describe('who publishes it'),
    versions: z
      .array(
        z
          .object({
            version: z.string().describe('the version'),
            installerUrl: z.string().describe('where the installer is downloaded'),
            sha256: z.string().describe('the installer’s SHA-256 (lower-case hex)'),
            silentArgs: z.string().nullable().describe('arguments for an unattended install; null: none'),
            detection: z
              .object({ type: DetectionTypeSchema, ...Object.fromEntries(Object.entries(detectionFields).map(([k, v]) => [k, z.string().optional().describe(v.description!)])) })
              .meta({ title: 'CatalogDetection', description: 'How an installed version is recognized (the fields of its type)' }),
          })
          .meta({ title: 'CatalogVersion', description: 'One installable version of an application' }),
      )
      .describe('its installable versions'),
    serviceTested: z.boolean().describe('a test install passed (since the versions last changed)'),
    lastTest: z
      .object({ version: z.string().describe('the version installed'), deviceId: uuid().describe('the device it ran on'), status: TestStatusSchema, testedAt: timestamp().describe('when the result came') })
      .meta({ title: 'CatalogTestResult', description: 'The latest test install’s result' })
      .nullable()
      .describe('the latest test’s result; null before any'),
    createdAt: timestamp().describe('when it was created'),
    updatedAt: timestamp().describe('when it last changed'),
  })
  .meta({ title: 'ThirdPartyCatalogEntry', description: 'A third-party application the service can install, with its versions' });
export type CatalogEntryView = z.output<typeof CatalogEntryViewSchema>;

function entryView(entry: ThirdPartyCatalogEntry): CatalogEntryView {
  return {
    id: entry.id,
    name: entry.name,
    vendor: entry.vendor,
    versions: entry.versions.map((v) => ({ ...v, silentArgs: v.silentArgs ?? null })),
    serviceTested: entry.serviceTested,
    lastTest: entry.lastTest,
    createdAt: entry.createdAt.toISOString(),
    updatedAt: entry.updatedAt.toISOString(),
  };
}

/** Versions as stored: fields left out are not kept. */
const storedVersions = (versions: z.output<typeof Versions>): CatalogVersion[] =>
  versions.map(({ silentArgs, detection, ...version }) => ({
    ...version,
    ...(silentArgs !== undefined && { silentArgs }),
    detection: Object.fromEntries(Object.entries(detection).filter(([, v]) => v !== undefined)) as CatalogDetection,
  }));

/** The catalog is the platform's: callers of system scope with the permission, everyone else 403 (reads too: a test names a device of some organization). */
async function authorizeCatalog(ctx: RequestContext, permission: 'patches:read' | 'patches:write'): Promise<void> {
  const principal = await authorize(ctx, permission);
  if (principal.scope !== 'system') throw forbidden('Only platform administrators can manage the third-party catalog');
}

async function requireEntry(ctx: RequestContext, id: string, permission: 'patches:read' | 'patches:write'): Promise<ThirdPartyCatalogEntry> {
  await authorizeCatalog(ctx, permission);
  const entry = await ctx.em.findOne(ThirdPartyCatalogEntry, { id });
  if (!entry) throw notFound(RESOURCE);
  return entry;
}

// ── lists ───────────────────────────────────────────────────────────────────────────────────────

const filters = {
  vendor: z.string().trim().min(1).max(200).optional().describe('only this vendor’s entries (any case)'),
  serviceTested: z.boolean().or(queryBoolean).optional().describe('only tested (true) or untested (false) entries'),
  search: z.string().trim().min(1).max(200).optional().describe('part of the name or the vendor, any case'),
};
const CatalogFilters = z.strictObject(filters);
export const CatalogListQuery = z.strictObject({ ...filters, ...cursorListFields });
export type CatalogListInput = z.input<typeof CatalogListQuery>;
export const CatalogPageSchema = cursorPageSchema(CatalogEntryViewSchema, 'ThirdPartyCatalogPage', 'catalog entries, newest first');
export type CatalogPage = z.output<typeof CatalogPageSchema>;

async function catalogFilter(ctx: RequestContext, query: z.output<typeof CatalogFilters>): Promise<FilterQuery<ThirdPartyCatalogEntry>> {
  await authorizeCatalog(ctx, 'patches:read');
  const where: FilterQuery<ThirdPartyCatalogEntry>[] = [];
  if (query.vendor) where.push({ vendor: { $ilike: escapeLike(query.vendor) } });
  if (query.serviceTested !== undefined) where.push({ serviceTested: query.serviceTested });
  if (query.search) {
    const like = { $ilike: containsPattern(query.search) };
    where.push({ $or: [{ name: like }, { vendor: like }] });
  }
  return { $and: where } as FilterQuery<ThirdPartyCatalogEntry>;
}

/** The catalog, newest first, in keyset pages. */
export async function listCatalogEntries(ctx: RequestContext, raw: CatalogListInput): Promise<CatalogPage> {
  const query = parseInput(CatalogListQuery, raw);
  const filter = await catalogFilter(ctx, query);
  const keyset = keysetWhere('createdAt', 'date', 'desc', query.cursor);
  const rows = await ctx.em.find(ThirdPartyCatalogEntry, { $and: [filter, keyset.where] } as FilterQuery<ThirdPartyCatalogEntry>, { orderBy: keyset.orderBy, limit: query.limit + 1, disableIdentityMap: true });
  const page = finishCursorPage(rows, query.limit, (e) => e.createdAt.toISOString());
  return { data: page.items.map(entryView), nextCursor: page.nextCursor };
}

/** How many entries the list's filters select (its connection's `totalCount`). */
export async function countCatalogEntries(ctx: RequestContext, raw: z.input<typeof CatalogFilters>): Promise<number> {
  return ctx.em.count(ThirdPartyCatalogEntry, await catalogFilter(ctx, parseInput(CatalogFilters, raw)));
}

export async function getCatalogEntry(ctx: RequestContext, id: string): Promise<CatalogEntryView> {
  return entryView(await requireEntry(ctx, id, 'patches:read'));
}

// ── writes ──────────────────────────────────────────────────────────────────────────────────────

export async function createCatalogEntry(ctx: RequestContext, raw: CreateCatalogEntryInput): Promise<CatalogEntryView> {
  const input = parseInput(CreateCatalogEntrySchema, raw);
  await authorizeCatalog(ctx, 'patches:write');
  return withTransaction(ctx, async (tx) => {
    const entry = tx.em.create(ThirdPartyCatalogEntry, { name: input.name, vendor: input.vendor, versions: storedVersions(input.versions) });
    await tx.em.flush();
    await recordAudit(tx, {
      action: 'third_party_catalog.create',
      resourceType: 'third_party_catalog_entry',
      resourceId: entry.id,
      changes: providedFields(input),
      details: { name: entry.name, vendor: entry.vendor, versions: entry.versions.map((v) => v.version) },
    });
    return entryView(entry);
  });
}

/** Changes an entry; new versions make it untested until a test passes again. */
export async function updateCatalogEntry(ctx: RequestContext, id: string, raw: UpdateCatalogEntryInput): Promise<CatalogEntryView> {
  const input = parseInput(UpdateCatalogEntrySchema, raw);
  const entry = await requireEntry(ctx, id, 'patches:write');
  return withTransaction(ctx, async (tx) => {
    const changes = applyChanges(entry, { name: input.name, vendor: input.vendor, versions: input.versions && storedVersions(input.versions) });
    if (changes.length === 0) return entryView(entry);
    if (changes.includes('versions')) entry.serviceTested = false;
    await tx.em.persistAndFlush(entry);
    await recordAudit(tx, { action: 'third_party_catalog.update', resourceType: 'third_party_catalog_entry', resourceId: entry.id, changes, details: { name: entry.name, vendor: entry.vendor } });
    return entryView(entry);
  });
}

/** The entry goes; tests under way still finish on their devices (their results find no entry). */
export async function deleteCatalogEntry(ctx: RequestContext, id: string): Promise<void> {
  const entry = await requireEntry(ctx, id, 'patches:write');
  await withTransaction(ctx, async (tx) => {
    await tx.em.nativeDelete(ThirdPartyCatalogEntry, { id: entry.id });
    await recordAudit(tx, { action: 'third_party_catalog.delete', resourceType: 'third_party_catalog_entry', resourceId: entry.id, details: { name: entry.name, vendor: entry.vendor } });
  });
}

// ── tests ───────────────────────────────────────────────────────────────────────────────────────

export const TestCatalogEntrySchema = z
  .strictObject({
    version: requiredText(100).describe('the version to install, one of the entry’s'),
    deviceId: uuid().optional().describe('the device to install it on; THIRD_PARTY_TEST_DEVICE_ID by default'),
  })
  .meta({ title: 'TestThirdPartyCatalogEntryInput', description: 'Which version to test, and where' });
export type TestCatalogEntryInput = z.input<typeof TestCatalogEntrySchema>;

export const CatalogTestQueuedSchema = z
  .object({ testId: uuid().describe('the test, named in the device’s install_software command'), status: z.literal('queued').describe('the command waits for the device’s agent') })
  .meta({ title: 'ThirdPartyCatalogTest', description: 'A test install handed to a device' });
export type CatalogTestQueued = z.output<typeof CatalogTestQueuedSchema>;

/** What an `install_software` command of a test carries besides the version's fields. */
interface TestPayload {
  testId: string;
  catalogEntryId: string;
  version: string;
  installerUrl: string;
  sha256: string;
}

/**
 * Installs a version of the entry on a device (`install_software`, with the version's fields); the
 * agent's result becomes the entry's `lastTest`, and a pass makes it `serviceTested`.
 */
export async function testCatalogEntry(ctx: RequestContext, id: string, raw: TestCatalogEntryInput): Promise<CatalogTestQueued> {
  const input = parseInput(TestCatalogEntrySchema, raw);
  const entry = await requireEntry(ctx, id, 'patches:write');
  const version = entry.versions.find((v) => v.version === input.version);
  if (!version) throw badRequest(`${input.version} is not a version of this entry`);
  const deviceId = input.deviceId ?? ctx.runtime.config.patching.thirdPartyTestDeviceId;
  if (!deviceId) throw badRequest('Name a deviceId: no test device is configured (THIRD_PARTY_TEST_DEVICE_ID)');
  const [device] = await findDevices(ctx, { ids: [deviceId], active: true });
  if (!device) throw notFound('Device');
  const testId = randomUUID();
  const { userId } = requirePrincipal(ctx);
  return withTransaction(ctx, async (tx) => {
    const payload = { testId, catalogEntryId: entry.id, ...version, silentArgs: version.silentArgs ?? null } satisfies TestPayload & Record<string, unknown>;
    const command = await queueCommand(tx, device, { type: INSTALL_SOFTWARE, payload }, userId);
    await recordAudit(tx, {
      action: 'third_party_catalog.test',
      resourceType: 'third_party_catalog_entry',
      resourceId: entry.id,
      details: { name: entry.name, version: version.version, deviceId: device.id, testId, commandId: command.id },
    });
    return { testId, status: 'queued' as const };
  });
}

/** `install_software`: queued by catalog tests only; the agent's answer is the test's result. */
export const catalogCommandTypes: Record<string, CommandTypeHooks> = {
  [INSTALL_SOFTWARE]: {
    // The software domain owns the type (its deployments); a test's commands carry its testId.
    owns: (payload) => typeof payload.testId === 'string',
    serviceOnly: 'install_software commands are queued by testing a third-party catalog entry (POST /third-party-catalog/:id/test)',
    async answered(tx, command, result) {
      const { catalogEntryId, version, sha256, installerUrl } = command.payload as unknown as TestPayload;
      const entry = await tx.em.findOne(ThirdPartyCatalogEntry, { id: catalogEntryId });
      if (!entry) return false;
      const passed = result.status === 'completed' && (result.exitCode ?? 0) === 0;
      entry.lastTest = { version, deviceId: command.deviceId, status: passed ? 'passed' : 'failed', testedAt: tx.runtime.clock.now().toISOString() };
      // A pass vouches for the entry only while the tested installer is still one of its versions (they may have been replaced meanwhile).
      const stillListed = entry.versions.some((v) => v.version === version && v.sha256 === sha256 && v.installerUrl === installerUrl);
      if (passed && stillListed) entry.serviceTested = true;
      await tx.em.flush();
      return false;
    },
  },
};
