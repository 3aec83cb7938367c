import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { conflict } from '../../errors.js';

/**
 * Names are unique per organization and the database constraint decides, so racing writes get one answer:
 * the guard answers 409 "<thing> with this name already exists in the organization" when a write breaks `constraint`.
 */
export function uniqueNameGuard(constraint: string, thing: string): <T>(write: Promise<T>) => Promise<T> {
  return async (write) => {
    try {
      return await write;
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException && error.message.includes(constraint)) throw conflict(`${thing} with this name already exists in the organization`);
      throw error;
    }
  };
}
