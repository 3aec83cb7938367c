import crypto from 'node:crypto';
import { sha256Hex } from '../secrets.js';

/** Keys look like `rmm_<12-char prefix>_<secret>`; the prefix is stored and shown, the whole key only hashed. */
const KEY = /^rmm_([A-Za-z0-9]{12})_([A-Za-z0-9_-]{32,})$/;

export function generateApiKey(): { key: string; prefix: string; hash: string } {
  const prefix = crypto.randomBytes(9).toString('base64url').replace(/[-_]/g, 'x').slice(0, 12);
  const key = `rmm_${prefix}_${crypto.randomBytes(32).toString('base64url')}`;
  return { key, prefix, hash: sha256Hex(key) };
}

export function apiKeyPrefix(key: string): string | null {
  return KEY.exec(key)?.[1] ?? null;
}

export const hashApiKey = sha256Hex;
