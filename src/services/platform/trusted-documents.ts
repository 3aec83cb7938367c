import crypto from 'node:crypto';
import { z } from 'zod';
import type { RequestContext } from '../../auth/context.js';
import { authorize } from '../../auth/policy.js';
import { requestRows, statement } from '../../db/prepared.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest, forbidden } from '../../errors.js';
import { parseInput } from '../../validation.js';
import { recordAudit } from '../audit/api.js';

/**
 * Apollo Server keys its persisted-query cache `apq:<sha256>`; trusted documents share that table
 * and key, so the same lookup answers both and an APQ registration can never shadow a trusted one.
 */
export const persistedQueryKey = (hash: string) => `apq:${hash}`;

export const sha256Hex = (text: string) => crypto.createHash('sha256').update(text).digest('hex');

const MAX_DOCUMENTS = 10_000;
const COUNT_TRUSTED = statement('select count(*)::int as n from persisted_query where key = any(?::text[]) and trusted');
const TRUST = statement(`insert into persisted_query (key, query, trusted, name)
    select key, query, true, name from unnest(?::text[], ?::text[], ?::text[]) as t(key, query, name)
  on conflict (key) do update set trusted = true, name = coalesce(excluded.name, persisted_query.name)`);
const sha256 = z.string().regex(/^[0-9a-f]{64}$/, { message: 'must be a lowercase hex SHA-256' });
const body = z.string().min(1).max(100_000);

/** The manifest `@apollo/generate-persisted-query-manifest` writes (ids are the bodies' SHA-256). */
const ApolloManifestSchema = z
  .object({
    format: z.literal('apollo-persisted-query-manifest'),
    version: z.literal(1),
    operations: z
      .array(
        z.object({
          id: sha256,
          name: z.string().max(255).optional(),
          type: z.enum(['query', 'mutation', 'subscription']).optional(),
          body,
        }),
      )
      .max(MAX_DOCUMENTS),
  })
  .describe("Apollo's persisted-query manifest");

/** The plain `{ "<sha256>": "<query>" }` map other clients' build tools write (graphql-codegen, Relay). */
const HashMapManifestSchema = z
  .record(sha256, body)
  .refine((map) => Object.keys(map).length <= MAX_DOCUMENTS, { message: `at most ${MAX_DOCUMENTS} documents` })
  .describe('a map of SHA-256 to query text');

export const TrustedManifestSchema = z.union([ApolloManifestSchema, HashMapManifestSchema]).meta({ title: 'TrustedDocumentManifest' });
export type TrustedManifestInput = z.input<typeof TrustedManifestSchema>;

export const TrustedDocumentsImportSchema = z
  .object({
    documents: z.number().int().describe('documents in the manifest'),
    added: z.number().int().describe('documents that were not trusted before this import'),
  })
  .meta({ title: 'TrustedDocumentsImport' });
export type TrustedDocumentsImport = z.output<typeof TrustedDocumentsImportSchema>;

/** A manifest's documents, each body's hash checked against its id. */
function documentsOf(manifest: z.output<typeof TrustedManifestSchema>): { hash: string; body: string; name: string | null }[] {
  const listed =
    'format' in manifest && Array.isArray(manifest.operations)
      ? (manifest as z.output<typeof ApolloManifestSchema>).operations.map((op, i) => ({ path: `operations.${i}.id`, hash: op.id, body: op.body, name: op.name ?? null }))
      : Object.entries(manifest as Record<string, string>).map(([hash, text]) => ({ path: hash, hash, body: text, name: null }));
  const mismatched = listed.filter((doc) => sha256Hex(doc.body) !== doc.hash);
  if (mismatched.length > 0) {
    throw badRequest(
      'Every document must be listed under the SHA-256 of its body',
      mismatched.slice(0, 20).map((doc) => ({ path: doc.path, message: 'is not the SHA-256 of its body' })),
    );
  }
  const unique = new Map(listed.map((doc) => [doc.hash, doc]));
  return [...unique.values()];
}

/**
 * Loads a client build's manifest as trusted documents (PERSISTED_QUERIES=trusted answers only
 * these): additive, since the app versions still in use keep sending their own operations. Platform
 * administrators only; `npm run persisted:import` acts as the system.
 */
export async function importTrustedDocuments(ctx: RequestContext, rawManifest: TrustedManifestInput): Promise<TrustedDocumentsImport> {
  const principal = await authorize(ctx, 'organizations:write');
  if (principal.scope !== 'system') throw forbidden('Only platform administrators can load trusted documents');
  const documents = documentsOf(parseInput(TrustedManifestSchema, rawManifest));
  const keys = documents.map((doc) => persistedQueryKey(doc.hash));
  return withTransaction(ctx, async (tx) => {
    const [known] = await requestRows<{ n: number }>(tx.em, COUNT_TRUSTED, [keys]);
    await requestRows(tx.em, TRUST, [keys, documents.map((doc) => doc.body), documents.map((doc) => doc.name)]);
    const added = documents.length - known!.n;
    await recordAudit(tx, { action: 'graphql.trusted_documents.import', resourceType: 'trusted_documents', details: { documents: documents.length, added } });
    return { documents: documents.length, added };
  });
}
