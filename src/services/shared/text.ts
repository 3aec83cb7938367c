import { z } from 'zod';

/** Text an agent or a caller must give: trimmed, not empty, at most `max` characters. */
export const requiredText = (max: number) => z.string().trim().min(1).max(max);

/** Text that may be left out: trimmed, at most `max` characters; absent, null or empty is null. */
export const optionalText = (max: number) => z.string().trim().max(max).nullish().transform((value) => value || null);
