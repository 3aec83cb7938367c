import { isDeepStrictEqual } from 'node:util';

/**
 * Applies the given fields to an entity and returns the names of those whose value changed (audit
 * `changes`). `settings` is merged key by key and reported as `settings.<key>`.
 */
export function applyChanges<T extends object>(entity: T, patch: Record<string, unknown>): string[] {
  const target = entity as Record<string, unknown>;
  const changes: string[] = [];
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    if (key === 'settings') {
      const current = target.settings as Record<string, unknown>;
      const next = { ...current };
      for (const [sub, subValue] of Object.entries(value as Record<string, unknown>)) {
        if (subValue === undefined || isDeepStrictEqual(current[sub] ?? null, subValue)) continue;
        next[sub] = subValue;
        changes.push(`settings.${sub}`);
      }
      target.settings = next;
    } else if (!isDeepStrictEqual(target[key], value)) {
      target[key] = value;
      changes.push(key);
    }
  }
  return changes;
}

/** Names of the fields a create sets (audit `changes`). */
export function providedFields(input: Record<string, unknown>): string[] {
  return Object.keys(input).filter((key) => input[key] !== undefined);
}
