import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as scriptLibrary from '../src/services/scripts/script-library.js';
import * as scripts from '../src/services/scripts/scripts.js';
import { call, pathId, RestRouter } from './router.js';
import { libraryId } from './scripts.js';

/** The script library: categories and tags of an organization, versions and rollbacks, templates, usage. */
export function scriptLibraryRouter(openapi: OpenApiRegistry): RestRouter {
  const category = { id: pathId('Category') };
  const script = { id: pathId('Script') };
  return new RestRouter(openapi, 'Script library')
    .get('/script-library/categories', { summary: 'Script categories you can see', query: scriptLibrary.LibraryListQuery, response: scriptLibrary.CategoryPageSchema }, call(scriptLibrary.listCategories))
    .post('/script-library/categories', { summary: 'Create a category (names unique per organization)', body: scriptLibrary.CreateCategorySchema, status: 201, response: scriptLibrary.CategoryViewSchema }, call(scriptLibrary.createCategory))
    .get('/script-library/categories/:id', { summary: 'One category', params: category, response: scriptLibrary.CategoryViewSchema }, call(scriptLibrary.getCategory))
    .patch('/script-library/categories/:id', { summary: 'Rename a category (its scripts follow) or change its description', params: category, body: scriptLibrary.UpdateCategorySchema, response: scriptLibrary.CategoryViewSchema }, call(scriptLibrary.updateCategory))
    .delete('/script-library/categories/:id', { summary: 'Delete a category (its scripts stay, uncategorized)', params: category, status: 204 }, call(scriptLibrary.deleteCategory))
    .get('/script-library/tags', { summary: 'Script tags you can see', query: scriptLibrary.LibraryListQuery, response: scriptLibrary.TagPageSchema }, call(scriptLibrary.listScriptTags))
    .post('/script-library/tags', { summary: 'Create a tag (names unique per organization)', body: scriptLibrary.CreateTagSchema, status: 201, response: scriptLibrary.TagViewSchema }, call(scriptLibrary.createScriptTag))
    .delete('/script-library/tags/:id', { summary: 'Delete a tag (it comes off the scripts)', params: { id: pathId('Tag') }, status: 204 }, call(scriptLibrary.deleteScriptTag))
    .get('/script-library/scripts/:id/versions', { summary: 'A script’s versions, newest first', params: script, query: scriptLibrary.VersionListQuery, response: scriptLibrary.ScriptVersionPageSchema }, call(scriptLibrary.listVersions))
    .post('/script-library/scripts/:id/versions', { summary: 'A new content for the script (the next version)', params: script, body: scriptLibrary.CreateVersionSchema, status: 201, response: scriptLibrary.ScriptVersionViewSchema }, call(scriptLibrary.createVersion))
    .post(
      '/script-library/scripts/:id/rollback/:versionId',
      { summary: 'Copy an earlier version’s content into a new version', params: { ...script, versionId: pathId('Script version') }, status: 201, response: scriptLibrary.ScriptVersionViewSchema },
      call(scriptLibrary.rollbackVersion))
    .get('/script-library/templates', { summary: 'Templates new scripts start from', response: scriptLibrary.ScriptTemplateListSchema }, call(scriptLibrary.listTemplates))
    .post('/script-library/from-template/:templateId', { summary: 'Create a script from a template', params: { templateId: libraryId('Template') }, body: scriptLibrary.FromTemplateSchema, status: 201, response: scripts.ScriptViewSchema }, call(scriptLibrary.createFromTemplate))
    .get('/script-library/scripts/:id/usage-stats', { summary: 'How often the script ran, how often it succeeded, how long it took', params: script, response: scriptLibrary.UsageStatsSchema }, call(scriptLibrary.usageStats));
}
