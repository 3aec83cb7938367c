import { z, type ZodType } from 'zod';
import { badRequest } from './errors.js';
import { isoDateTime, parseInput, uuid } from './validation.js';

/** Spec: list endpoints default to 100 items. */
export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 500;

export const PageQuery = z.object({
  page: z.coerce.number().int().min(1).default(1).describe('Which page to answer, from 1.'),
  limit: z.coerce.number().int().min(1).max(MAX_LIMIT).default(DEFAULT_LIMIT).describe(`Items per page: 1 to ${MAX_LIMIT}.`),
});
export type PageInput = z.infer<typeof PageQuery>;

/** The `pagination` block of page/limit lists, and a page of `item` (GraphQL derives `<title>` from it). */
export const PaginationSchema = z
  .object({
    page: z.number().int().describe('This page’s number, from 1.'),
    limit: z.number().int().describe('The page size asked for; the last page may hold fewer items.'),
    total: z.number().int().describe('How many items the list holds across all pages.'),
  })
  .meta({ title: 'Pagination', description: 'Where a page sits in a page/limit list.' });
export const pageSchema = <T extends z.ZodType>(item: T, title: string) =>
  z.object({ data: z.array(item).describe('The items of this page.'), pagination: PaginationSchema }).meta({ title, description: 'One page of a page/limit list.' });
/** `{ data: [...] }`, for the few lists that answer every item at once (no page); named like `pageSchema`'s pages. */
export const listSchema = <T extends z.ZodType>(item: T, title: string) => z.object({ data: z.array(item).describe('Every item, in one answer.') }).meta({ title, description: 'A whole list, not paged.' });

export interface Page<T> {
  data: T[];
  pagination: { page: number; limit: number; total: number };
}

export function pageOptions(input: PageInput): { limit: number; offset: number } {
  return { limit: input.limit, offset: (input.page - 1) * input.limit };
}

export function toPage<T>(data: T[], total: number, input: PageInput): Page<T> {
  return { data, pagination: { page: input.page, limit: input.limit, total } };
}

/** Cursors are checked by `decodeCursor` (one message, `Invalid cursor`), not here. */
export const CursorQuery = z.object({
  cursor: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(MAX_LIMIT).default(DEFAULT_LIMIT).describe(`1 to ${MAX_LIMIT}`),
});

/** A cursor list's own query fields, beside its filters (spec, Limits: `cursor` and `limit`, 100 by default). */
export const cursorListFields = {
  cursor: CursorQuery.shape.cursor.describe('`nextCursor` of the previous page; from the start when left out'),
  limit: CursorQuery.shape.limit,
};

/** A page of a cursor list, as every list but the devices' answers (spec: `{data, nextCursor}`). */
export interface CursorPage<T> {
  data: T[];
  nextCursor: string | null;
}

/** The schema of `CursorPage` of a view: `title` names it (`PatchPage`), `what` its items (`patches`). */
export function cursorPageSchema<T extends z.ZodType>(item: T, title: string, what: string) {
  return z
    .object({
      data: z.array(item).describe(`The page’s ${what}, in the list’s order.`),
      nextCursor: z.string().nullable().describe('Pass back as `cursor` for the next page; null on the last.'),
    })
    .meta({ title, description: `A page of ${what}; more follow while \`nextCursor\` is not null.` });
}

/**
 * GraphQL's arguments of a cursor list, a connection (`cursorArgs` in src/graphql/contract.ts,
 * `cursored` in resolvers/shared.ts): `first` is the list's `limit`, `after` its `cursor`.
 */
export const CursorConnectionArgs = z.object({
  first: z.number().int().min(1).max(MAX_LIMIT).default(DEFAULT_LIMIT).describe(`How many items to return: 1 to ${MAX_LIMIT}, ${DEFAULT_LIMIT} by default.`),
  after: z.string().optional().describe("Returns the items after this cursor (the previous page's `pageInfo.endCursor`, or any edge's `cursor`); from the start when left out."),
});
export type CursorConnectionInput = z.input<typeof CursorConnectionArgs>;

/**
 * Opaque keyset cursors: the sort value and id of the last item, base64url-encoded. Stable under
 * inserts, unlike offsets.
 */
export interface CursorPosition {
  /** the sort key's value of the last row (ISO string for dates) */
  value: string | number;
  id: string;
}

/** What a sort key's value is: a cursor decodes only to the shape it was minted with. */
const CURSOR_VALUES = {
  uuid: uuid(),
  date: isoDateTime(),
  string: z.string(),
  number: z.number(),
} satisfies Record<string, ZodType<string | number>>;
export type CursorKind = keyof typeof CURSOR_VALUES;

// Long enough for a 500-character sort value (an application's name) of multi-byte text, encoded.
const MAX_CURSOR_LENGTH = 4096;

export function encodeCursor(position: CursorPosition): string {
  return Buffer.from(JSON.stringify([position.value, position.id])).toString('base64url');
}

/**
 * Anything the server did not mint (bad base64 or JSON, another shape, an object where a value
 * belongs) is `Invalid cursor`: nothing a client writes into a cursor reaches a query as an operator.
 */
export function decodeCursor(cursor: string, kind: CursorKind): CursorPosition {
  const invalid = () => badRequest('Invalid cursor');
  if (cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid();
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  const parsed = z.tuple([CURSOR_VALUES[kind], uuid()]).safeParse(decoded);
  if (!parsed.success) throw invalid();
  const [value, id] = parsed.data;
  return { value, id };
}

/**
 * MikroORM `where` fragment for rows after `cursor` in `(sortField dir, id dir)` order, and the
 * matching `orderBy`; `kind` is the type of `sortField`'s values. Fetch `limit + 1` rows;
 * `finishCursorPage` trims and builds `nextCursor`.
 */
export function keysetWhere(
  sortField: string,
  kind: CursorKind,
  dir: 'asc' | 'desc',
  cursor: string | undefined,
): { where: Record<string, unknown>; orderBy: Record<string, 'asc' | 'desc'> } {
  const orderBy = sortField === 'id' ? { id: dir } : { [sortField]: dir, id: dir };
  if (!cursor) return { where: {}, orderBy };
  const { value, id } = decodeCursor(cursor, kind);
  const op = dir === 'asc' ? '$gt' : '$lt';
  if (sortField === 'id') return { where: { id: { [op]: id } }, orderBy };
  // The redundant bound is what the (…, sortField, id) index can seek to: PostgreSQL reads the OR
  // alone as a filter, scanning every row before the cursor.
  const bound = dir === 'asc' ? '$gte' : '$lte';
  return { where: { [sortField]: { [bound]: value }, $or: [{ [sortField]: { [op]: value } }, { [sortField]: value, id: { [op]: id } }] }, orderBy };
}

export function finishCursorPage<T extends { id: string }>(rows: T[], limit: number, sortValue: (row: T) => string | number): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  const nextCursor = rows.length > limit && last ? encodeCursor({ value: sortValue(last), id: last.id }) : null;
  return { items, nextCursor };
}

/**
 * A Relay connection, what a GraphQL cursor list answers (`connectionOf` in resolvers/shared.ts):
 * each item with the cursor that continues after it. `totalCount` is a number, or a function that
 * counts, called only when the field is selected.
 */
export interface Connection<T> {
  edges: { node: T; cursor: string }[];
  pageInfo: PageInfo;
  totalCount: number | (() => Promise<number>);
}

/**
 * Relay's page info. Lists are read forwards (`first`/`after`): `hasPreviousPage` says whether items
 * come before this page (an `after` was given), `startCursor`/`endCursor` are its first and last edges'.
 */
export interface PageInfo {
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  startCursor: string | null;
  endCursor: string | null;
}

export function pageInfoOf(edges: readonly { cursor: string }[], hasNextPage: boolean, hasPreviousPage: boolean): PageInfo {
  return { hasNextPage, hasPreviousPage, startCursor: edges[0]?.cursor ?? null, endCursor: edges.at(-1)?.cursor ?? null };
}

/**
 * GraphQL's arguments of a page/limit list, a connection like every list there: `first`/`after`, the
 * `after` cursor being the position of an item in the list's order. `page`/`limit` are the older
 * arguments, kept so existing queries still run.
 */
export const ConnectionPageArgs = z.object({
  first: z.number().int().min(1).max(MAX_LIMIT).default(DEFAULT_LIMIT).describe(`How many items to return: 1 to ${MAX_LIMIT}.`),
  after: z.string().optional().describe("Returns the items after this cursor (the previous page's `pageInfo.endCursor`, or any edge's `cursor`); from the start when left out."),
  page: z
    .number()
    .int()
    .min(1)
    .optional()
    .meta({ deprecationReason: 'Use first and after.' })
    .describe('Page number (1-based) of `limit`-sized pages; given with or instead of `limit`, `first` and `after` are ignored.'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(MAX_LIMIT)
    .optional()
    .meta({ deprecationReason: 'Use first and after.' })
    .describe(`Page size for \`page\`: 1 to ${MAX_LIMIT}, ${DEFAULT_LIMIT} by default.`),
});
export type ConnectionPageInput = z.input<typeof ConnectionPageArgs>;

/** A page/limit list answered as a connection; `data` and `pagination` stay for queries written against the page. */
export interface PagedConnection<T> extends Connection<T>, Page<T> {}

const OFFSET_CURSOR = /^offset:(0|[1-9]\d{0,8})$/;
const encodeOffset = (offset: number) => Buffer.from(`offset:${offset}`).toString('base64url');

function decodeOffset(cursor: string): number {
  const decoded = cursor.length <= 40 && /^[A-Za-z0-9_-]+$/.test(cursor) ? OFFSET_CURSOR.exec(Buffer.from(cursor, 'base64url').toString('utf8')) : null;
  if (!decoded) throw badRequest('Invalid cursor');
  return Number(decoded[1]);
}

/**
 * A page/limit list read as a connection: `fetch` answers pages of the service's own list. With
 * `first`/`after`, the page that holds the next item is read (and the one after it when `first` changed
 * mid-list and the items straddle two pages).
 */
export async function pageConnection<T>(raw: ConnectionPageInput, fetch: (page: PageInput) => Promise<Page<T>>): Promise<PagedConnection<T>> {
  const args = parseInput(ConnectionPageArgs, raw);
  if (args.page !== undefined || args.limit !== undefined) {
    const page = await fetch({ page: args.page ?? 1, limit: args.limit ?? DEFAULT_LIMIT });
    const offset = (page.pagination.page - 1) * page.pagination.limit;
    return connectionOfPage(page, offset, page.data, offset > 0);
  }
  const start = args.after === undefined ? 0 : decodeOffset(args.after) + 1;
  const size = args.first;
  const number = Math.floor(start / size) + 1;
  const page = await fetch({ page: number, limit: size });
  let items = page.data.slice(start - (number - 1) * size);
  if (items.length < size && start % size !== 0 && (number - 1) * size + page.data.length < page.pagination.total) {
    items = items.concat((await fetch({ page: number + 1, limit: size })).data).slice(0, size);
  }
  return connectionOfPage(page, start, items, args.after !== undefined);
}

function connectionOfPage<T>(page: Page<T>, offset: number, items: T[], afterGiven: boolean): PagedConnection<T> {
  const edges = items.map((node, i) => ({ node, cursor: encodeOffset(offset + i) }));
  const hasNextPage = offset + items.length < page.pagination.total;
  return { data: items, pagination: page.pagination, edges, pageInfo: pageInfoOf(edges, hasNextPage, afterGiven), totalCount: page.pagination.total };
}
