import { randomUUID } from 'node:crypto';
import type { EntityClass } from '@mikro-orm/core';
import { z } from 'zod';
import type { RequestContext } from '../../auth/context.js';

// Helpers of the inventory parts stored as rows per device (the inventory domain's network part, the software domain's software part).

/** Rows written per statement (PostgreSQL takes at most 65,535 parameters). */
const INSERT_BATCH = 1000;

/** A calendar date as agents send it (`2024-01-31`, `20240131` from the Windows registry, or a full ISO time), kept as `YYYY-MM-DD`. */
export const reportedDate = z
  .string()
  .trim()
  .transform((value, ctx) => {
    const match = /^(\d{4})-?(\d{2})-?(\d{2})(?:$|T)/.exec(value);
    const date = match ? `${match[1]}-${match[2]}-${match[3]}` : '';
    if (date && new Date(`${date}T00:00:00Z`).toISOString().startsWith(date)) return date;
    ctx.addIssue({ code: 'custom', message: 'must be a date (YYYY-MM-DD, YYYYMMDD or an ISO date-time)' });
    return z.NEVER;
  })
  .nullish()
  .transform((value) => value ?? null);

/** Replaces the device's rows of one part with the reported ones, in the report's transaction. */
export async function replaceDeviceRows<T extends object>(tx: RequestContext, entity: EntityClass<T>, deviceId: string, rows: Omit<T, 'id'>[]): Promise<void> {
  await tx.em.nativeDelete(entity, { deviceId } as never);
  // insertMany writes the rows as given (no entity initializers): the ids are made here.
  for (let i = 0; i < rows.length; i += INSERT_BATCH) await tx.em.insertMany(entity, rows.slice(i, i + INSERT_BATCH).map((row) => ({ id: randomUUID(), ...row })) as never[]);
}

/** A `date` column as `YYYY-MM-DD`, whichever way the driver hands it over. */
export const dayOf = (value: string | Date | null) => (value instanceof Date ? value.toISOString().slice(0, 10) : value);
