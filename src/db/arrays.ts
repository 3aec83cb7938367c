/** A list of uuids as one PostgreSQL array literal, for `= any(?::uuid[])` (the query builder would spread a JS array into a list of parameters). */
export const uuidArray = (ids: readonly string[]): string => `{${ids.join(',')}}`;
