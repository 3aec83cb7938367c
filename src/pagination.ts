import { z, type ZodType } from 'zod';
import { badRequest } from './errors.js';
import { isoDateTime, uuid } from './validation.js';

/** Spec: list endpoints default to 100 items. */
export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 500;

export const PageQuery = z.object({
  page: z.coerce.number().int().min(1).default(1),
  limit: z.coerce.number().int().min(1).max(MAX_LIMIT).default(DEFAULT_LIMIT).describe(`1 to ${MAX_LIMIT}`),
});
export type PageInput = z.infer<typeof PageQuery>;

/** The `pagination` block of page/limit lists, and a page of `item` (GraphQL derives `<title>` from it). */
export const PaginationSchema = z.object({ page: z.number().int(), limit: z.number().int(), total: z.number().int() }).meta({ title: 'Pagination' });
export const pageSchema = <T extends z.ZodType>(item: T, title: string) => z.object({ data: z.array(item), pagination: PaginationSchema }).meta({ title });
/** `{ data: [...] }`, for the few lists that answer every item at once (no page); named like `pageSchema`'s pages. */
export const listSchema = <T extends z.ZodType>(item: T, title: string) => z.object({ data: z.array(item) }).meta({ title });

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

const MAX_CURSOR_LENGTH = 500;

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
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
  totalCount: number | (() => Promise<number>);
}
