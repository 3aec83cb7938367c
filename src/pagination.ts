import { z } from 'zod';
import { badRequest } from './errors.js';

/** Spec: list endpoints default to 100 items. */
export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 500;

export const PageQuery = z.object({
  page: z.coerce.number().int().min(1).default(1),
  limit: z.coerce.number().int().min(1).max(MAX_LIMIT).default(DEFAULT_LIMIT),
});
export type PageInput = z.infer<typeof PageQuery>;

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

export const CursorQuery = z.object({
  cursor: z.string().max(500).optional(),
  limit: z.coerce.number().int().min(1).max(MAX_LIMIT).default(DEFAULT_LIMIT),
});

/**
 * Opaque keyset cursors: the sort value and id of the last item, base64url-encoded. Stable under
 * inserts, unlike offsets.
 */
export interface CursorPosition {
  /** the sort key's value of the last row (ISO string for dates) */
  value: string | number | null;
  id: string;
}

export function encodeCursor(position: CursorPosition): string {
  return Buffer.from(JSON.stringify([position.value, position.id])).toString('base64url');
}

export function decodeCursor(cursor: string): CursorPosition {
  try {
    const [value, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string | number | null, string];
    if (typeof id !== 'string') throw new Error('bad cursor');
    return { value, id };
  } catch {
    throw badRequest('cursor: invalid cursor');
  }
}

/**
 * MikroORM `where` fragment for rows after `cursor` in `(sortField dir, id dir)` order, and the
 * matching `orderBy`. Fetch `limit + 1` rows; `finishCursorPage` trims and builds `nextCursor`.
 */
export function keysetWhere(sortField: string, dir: 'asc' | 'desc', cursor: string | undefined): { where: Record<string, unknown>; orderBy: Record<string, 'asc' | 'desc'> } {
  const orderBy = sortField === 'id' ? { id: dir } : { [sortField]: dir, id: dir };
  if (!cursor) return { where: {}, orderBy };
  const { value, id } = decodeCursor(cursor);
  const op = dir === 'asc' ? '$gt' : '$lt';
  if (sortField === 'id') return { where: { id: { [op]: id } }, orderBy };
  return { where: { $or: [{ [sortField]: { [op]: value } }, { [sortField]: value, id: { [op]: id } }] }, orderBy };
}

export function finishCursorPage<T extends { id: string }>(rows: T[], limit: number, sortValue: (row: T) => string | number | null): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  const nextCursor = rows.length > limit && last ? encodeCursor({ value: sortValue(last), id: last.id }) : null;
  return { items, nextCursor };
}
