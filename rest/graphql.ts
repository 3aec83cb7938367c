import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as trustedDocuments from '../src/services/platform/trusted-documents.js';
import { call, RestRouter } from './router.js';

/** The GraphQL endpoint's administration: the trusted documents PERSISTED_QUERIES=trusted answers. */
export function graphqlRouter(openapi: OpenApiRegistry): RestRouter {
  return new RestRouter(openapi, 'GraphQL').post(
    '/graphql/persisted-queries',
    {
      summary: "Load a client build's persisted-query manifest (Apollo's format, or a map of SHA-256 to query) as trusted documents; platform administrators",
      body: trustedDocuments.TrustedManifestSchema,
      response: trustedDocuments.TrustedDocumentsImportSchema,
    },
    call(trustedDocuments.importTrustedDocuments));
}
