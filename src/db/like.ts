/** Escapes LIKE wildcards so user text matches literally. */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** `%text%` for a case-insensitive "contains" search with `$ilike`. */
export function containsPattern(text: string): string {
  return `%${escapeLike(text)}%`;
}
