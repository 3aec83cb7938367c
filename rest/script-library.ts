import type { OpenApiRegistry } from '../src/http/openapi.js';
import {
  CategoryPageSchema,
  CategoryViewSchema,
  CreateCategorySchema,
  CreateTagSchema,
  CreateVersionSchema,
  FromTemplateSchema,
  LibraryListQuery,
  ScriptTemplateListSchema,
  ScriptVersionPageSchema,
  ScriptVersionViewSchema,
  TagPageSchema,
  TagViewSchema,
  UpdateCategorySchema,
  UsageStatsSchema,
  VersionListQuery,
  createCategory,
  createFromTemplate,
  createScriptTag,
  createVersion,
  deleteCategory,
  deleteScriptTag,
  getCategory,
  listCategories,
  listScriptTags,
  listTemplates,
  listVersions,
  rollbackVersion,
  updateCategory,
  usageStats,
} from '../src/services/scripts/script-library.js';
import { ScriptViewSchema } from '../src/services/scripts/scripts.js';
import { RestRouter, pathId } from './router.js';
import { libraryId } from './scripts.js';

/** The script library: categories and tags of an organization, versions and rollbacks, templates, usage. */
export function scriptLibraryRouter(openapi: OpenApiRegistry): RestRouter {
  const category = { id: pathId('Category') };
  const script = { id: pathId('Script') };
  return new RestRouter(openapi, 'Script library')
    .get('/script-library/categories', { summary: 'Script categories you can see', query: LibraryListQuery, response: CategoryPageSchema }, (ctx, { query }) => listCategories(ctx, query))
    .post('/script-library/categories', { summary: 'Create a category (names unique per organization)', body: CreateCategorySchema, status: 201, response: CategoryViewSchema }, (ctx, { body }) => createCategory(ctx, body))
    .get('/script-library/categories/:id', { summary: 'One category', params: category, response: CategoryViewSchema }, (ctx, { params }) => getCategory(ctx, params.id))
    .patch('/script-library/categories/:id', { summary: 'Rename a category (its scripts follow) or change its description', params: category, body: UpdateCategorySchema, response: CategoryViewSchema }, (ctx, { params, body }) =>
      updateCategory(ctx, params.id, body),
    )
    .delete('/script-library/categories/:id', { summary: 'Delete a category (its scripts stay, uncategorized)', params: category, status: 204 }, (ctx, { params }) => deleteCategory(ctx, params.id))
    .get('/script-library/tags', { summary: 'Script tags you can see', query: LibraryListQuery, response: TagPageSchema }, (ctx, { query }) => listScriptTags(ctx, query))
    .post('/script-library/tags', { summary: 'Create a tag (names unique per organization)', body: CreateTagSchema, status: 201, response: TagViewSchema }, (ctx, { body }) => createScriptTag(ctx, body))
    .delete('/script-library/tags/:id', { summary: 'Delete a tag (it comes off the scripts)', params: { id: pathId('Tag') }, status: 204 }, (ctx, { params }) => deleteScriptTag(ctx, params.id))
    .get('/script-library/scripts/:id/versions', { summary: 'A script’s versions, newest first', params: script, query: VersionListQuery, response: ScriptVersionPageSchema }, (ctx, { params, query }) =>
      listVersions(ctx, params.id, query),
    )
    .post('/script-library/scripts/:id/versions', { summary: 'A new content for the script (the next version)', params: script, body: CreateVersionSchema, status: 201, response: ScriptVersionViewSchema }, (ctx, { params, body }) =>
      createVersion(ctx, params.id, body),
    )
    .post(
      '/script-library/scripts/:id/rollback/:versionId',
      { summary: 'Copy an earlier version’s content into a new version', params: { ...script, versionId: pathId('Script version') }, status: 201, response: ScriptVersionViewSchema },
      (ctx, { params }) => rollbackVersion(ctx, params.id, params.versionId),
    )
    .get('/script-library/templates', { summary: 'Templates new scripts start from', response: ScriptTemplateListSchema }, (ctx) => listTemplates(ctx))
    .post('/script-library/from-template/:templateId', { summary: 'Create a script from a template', params: { templateId: libraryId('Template') }, body: FromTemplateSchema, status: 201, response: ScriptViewSchema }, (ctx, { params, body }) =>
      createFromTemplate(ctx, params.templateId, body),
    )
    .get('/script-library/scripts/:id/usage-stats', { summary: 'How often the script ran, how often it succeeded, how long it took', params: script, response: UsageStatsSchema }, (ctx, { params }) => usageStats(ctx, params.id));
}
