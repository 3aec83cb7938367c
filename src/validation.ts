import { z, type ZodType } from 'zod';
import { fromZodError } from './errors.js';

/** Parses input with a zod schema; failures become a 400 VALIDATION_ERROR naming the field. Unknown keys are rejected by `.strict()` schemas. */
export function parseInput<S extends ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw fromZodError(result.error);
  return result.data;
}

export const uuid = () => z.uuid({ message: 'must be a UUID' });

/** Query-string booleans arrive as text. */
export const queryBoolean = z.enum(['true', 'false']).transform((v) => v === 'true');
