import { z } from 'zod';

/** How deep free-form JSON (command payloads and results, agent reports) may nest. */
const MAX_JSON_DEPTH = 64;

function nestsWithin(value: unknown, maxDepth: number): boolean {
  const pending: [unknown, number][] = [[value, 1]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [node, depth] = next;
    if (node === null || typeof node !== 'object') continue;
    if (depth > maxDepth) return false;
    for (const child of Object.values(node)) pending.push([child, depth + 1]);
  }
  return true;
}

/**
 * Free-form JSON from users and agents, nested at most 64 levels: deeper values are a 400 here
 * rather than a stack overflow in whatever serializes them later.
 */
export const boundedJson = <T extends z.ZodType>(schema: T): T =>
  schema.refine((value) => nestsWithin(value, MAX_JSON_DEPTH), { message: `must not nest deeper than ${MAX_JSON_DEPTH} levels`, abort: true });
export const JsonObjectSchema = boundedJson(z.record(z.string(), z.unknown()));
