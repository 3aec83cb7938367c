import { parse, specifiedRules, validate, type DocumentNode, type GraphQLError, type GraphQLSchema, type Source, type ValidationRule } from 'graphql';
import { MAX_DOCUMENT_TOKENS } from './limits.js';

// Bounds of the cache: documents, and the query text they hold in total.
const MAX_DOCUMENTS = 1000;
const MAX_TOTAL_CHARS = 4 * 1024 * 1024;

/**
 * Parsed and validated documents of graphql-ws subscribe messages, a bounded LRU keyed by the query
 * text (Apollo Server keeps its own for HTTP, its default document store). `parse` answers the same
 * DocumentNode for the same text; `validate` runs the rules (the standard ones and the query limits)
 * once per document it has not seen pass. Only documents that passed validation stay cached, so a
 * stream of distinct invalid queries cannot fill it.
 */
export class DocumentCache {
  private readonly documents = new Map<string, DocumentNode>();
  private readonly valid = new WeakSet<DocumentNode>();
  /** parsed, not validated yet: the text each came from */
  private readonly pending = new WeakMap<DocumentNode, string>();
  private totalChars = 0;

  constructor(private readonly rules: readonly ValidationRule[]) {}

  parse = (source: string | Source): DocumentNode => {
    const query = typeof source === 'string' ? source : source.body;
    const known = this.documents.get(query);
    if (known) {
      // Most recently used last.
      this.documents.delete(query);
      this.documents.set(query, known);
      return known;
    }
    const document = parse(source, { maxTokens: MAX_DOCUMENT_TOKENS });
    this.pending.set(document, query);
    return document;
  };

  validate = (schema: GraphQLSchema, document: DocumentNode): readonly GraphQLError[] => {
    if (this.valid.has(document)) return [];
    const errors = validate(schema, document, [...specifiedRules, ...this.rules]);
    const query = this.pending.get(document);
    this.pending.delete(document);
    if (errors.length === 0 && query !== undefined) this.remember(query, document);
    return errors;
  };

  private remember(query: string, document: DocumentNode): void {
    if (query.length > MAX_TOTAL_CHARS / 16) return;
    this.valid.add(document);
    this.documents.set(query, document);
    this.totalChars += query.length;
    for (const [oldest] of this.documents) {
      if (this.documents.size <= MAX_DOCUMENTS && this.totalChars <= MAX_TOTAL_CHARS) break;
      this.documents.delete(oldest);
      this.totalChars -= oldest.length;
    }
  }
}
