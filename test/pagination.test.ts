import { decodeCursor, encodeCursor, finishCursorPage, keysetWhere } from '../src/pagination.js';

test('cursors are opaque and round-trip the sort value and id', () => {
  const cursor = encodeCursor({ value: '2026-01-01T00:00:00.000Z', id: 'abc' });
  expect(cursor).not.toContain('abc');
  expect(decodeCursor(cursor)).toEqual({ value: '2026-01-01T00:00:00.000Z', id: 'abc' });
});

test('a corrupted cursor is a 400 VALIDATION_ERROR', () => {
  expect(() => decodeCursor('not-a-cursor')).toThrow(expect.objectContaining({ status: 400, code: 'VALIDATION_ERROR' }));
});

test('keyset conditions continue after the last row, tie-broken by id', () => {
  const cursor = encodeCursor({ value: 5, id: 'm' });
  expect(keysetWhere('rank', 'desc', cursor)).toEqual({
    where: { $or: [{ rank: { $lt: 5 } }, { rank: 5, id: { $lt: 'm' } }] },
    orderBy: { rank: 'desc', id: 'desc' },
  });
  expect(keysetWhere('rank', 'asc', undefined)).toEqual({ where: {}, orderBy: { rank: 'asc', id: 'asc' } });
});

test('a page of limit+1 rows yields limit items and a cursor at the last one; a short page has no cursor', () => {
  const rows = [1, 2, 3].map((n) => ({ id: `id${n}`, n }));
  const full = finishCursorPage(rows, 2, (r) => r.n);
  expect(full.items.map((r) => r.id)).toEqual(['id1', 'id2']);
  expect(decodeCursor(full.nextCursor!)).toEqual({ value: 2, id: 'id2' });
  expect(finishCursorPage(rows, 3, (r) => r.n).nextCursor).toBeNull();
});
