import { z, type ZodType } from 'zod';
import { badRequest, fromZodError } from './errors.js';

/** Parses input with a zod schema; failures become a 400 VALIDATION_ERROR naming the field. Unknown keys are rejected by `.strict()` schemas. */
export function parseInput<S extends ZodType>(schema: S, input: unknown): z.output<S> {
  refuseNullCharacters(input);
  const result = schema.safeParse(input);
  if (!result.success) throw fromZodError(result.error);
  return result.data;
}

/**
 * PostgreSQL text and jsonb cannot hold U+0000: any string (or key) with one is refused here, naming
 * the field, rather than failing in the database. Walks without recursion or path copies: bodies may
 * nest deeply.
 */
function refuseNullCharacters(input: unknown): void {
  interface Node {
    value: unknown;
    key?: string;
    parent?: Node;
  }
  const pathOf = (node: Node | undefined): string => {
    const keys: string[] = [];
    for (let n = node; n?.key !== undefined; n = n.parent) keys.unshift(n.key);
    return keys.join('.');
  };
  const pending: Node[] = [{ value: input }];
  for (let node = pending.pop(); node; node = pending.pop()) {
    if (typeof node.value === 'string') {
      if (node.value.includes('\u0000')) throw nullCharacterError(pathOf(node));
    } else if (node.value !== null && typeof node.value === 'object') {
      for (const [key, value] of Object.entries(node.value)) {
        if (key.includes('\u0000')) throw nullCharacterError(pathOf(node));
        pending.push({ value, key, parent: node });
      }
    }
  }
}

function nullCharacterError(path: string) {
  const message = 'must not contain null characters';
  return badRequest(path ? `${path}: ${message}` : message, [{ path, message }]);
}

export const uuid = () => z.uuid({ message: 'must be a UUID' });

/**
 * What each value of an enum means (`z.enum([...]).meta({ title }).register(enumValues, { value: '…' })`):
 * GraphQL describes its enum values with them. A registry of its own, not `.meta()`, since JSON Schema
 * (the OpenAPI document) has no keyword for them.
 */
export const enumValues = z.registry<Record<string, string>>();

/** Query-string booleans arrive as text. */
export const queryBoolean = z.enum(['true', 'false']).transform((v) => v === 'true');

/** `YYYY-MM-DD`, or a date-time with an optional offset (none means UTC). */
const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * The one date-time input of the API: ISO 8601, a date alone meaning its UTC midnight and a time
 * without an offset meaning UTC, for an instant in years 0001–9999 (JavaScript dates reach ±275760,
 * PostgreSQL and most clients do not). The output is the instant as UTC ISO text: parsing twice
 * (adapter, then service) is harmless; services convert with `new Date()`.
 */
/**
 * Whether a schema is one of the API's date-times (GraphQL shows them as the `DateTime` scalar). The
 * mark is metadata, which zod carries over to refined and wrapped copies.
 */
export function isDateTimeSchema(schema: ZodType): boolean {
  return (z.globalRegistry.get(schema) as { format?: string } | undefined)?.format === 'date-time' || (schema as { format?: string | null }).format === 'datetime';
}

/** A date-time the service hands out: ISO 8601 text in UTC, as `Date.toISOString()` writes it. */
export const timestamp = () => z.iso.datetime();

export const isoDateTime = () =>
  z
    .string()
    // abort: a text that is no date-time at all gets that one message, not the range's too
    .regex(ISO_8601, { message: 'must be an ISO 8601 date-time', abort: true })
    .transform((text, ctx) => {
      const [, offset] = ISO_8601.exec(text)!;
      const date = new Date(text.includes('T') || text.includes('t') ? (offset ? text : `${text}Z`) : `${text}T00:00:00Z`);
      const year = date.getUTCFullYear();
      if (Number.isNaN(date.getTime())) ctx.addIssue({ code: 'custom', message: 'must be an ISO 8601 date-time' });
      else if (year < 1 || year > 9999) ctx.addIssue({ code: 'custom', message: 'must be between years 0001 and 9999' });
      else return date.toISOString();
      return z.NEVER;
    })
    .meta({ format: 'date-time' });
