import { Secret, TOTP } from 'otpauth';

/** TOTP per RFC 6238 with the parameters authenticator apps assume: HMAC-SHA-1, 6 digits, 30-second steps. */
const PERIOD_SECONDS = 30;
/** Steps accepted either side of now, for clock drift and typing time. */
const DRIFT_STEPS = 1;
/** 160 bits, the RFC 4226 recommendation. */
const SECRET_BYTES = 20;

function totp(secret: string): TOTP {
  return new TOTP({ algorithm: 'SHA1', digits: 6, period: PERIOD_SECONDS, secret: Secret.fromBase32(secret) });
}

/** A new shared secret, base32-encoded. */
export function generateTotpSecret(): string {
  return new Secret({ size: SECRET_BYTES }).base32;
}

/** `bytes` random bytes as base32 text (recovery codes). */
export function randomBase32(bytes: number): string {
  return new Secret({ size: bytes }).base32;
}

/**
 * The time step `code` belongs to, within ±1 step of `at` and later than `lastUsedStep` (so a code
 * cannot be replayed), or null. The library compares in constant time.
 */
export function matchTotp(secret: string, code: string, lastUsedStep: number | null, at: Date = new Date()): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const generator = totp(secret);
  const delta = generator.validate({ token: code, timestamp: at.getTime(), window: DRIFT_STEPS });
  if (delta === null) return null;
  const step = generator.counter({ timestamp: at.getTime() }) + delta;
  return lastUsedStep === null || step > lastUsedStep ? step : null;
}

/**
 * What authenticator apps scan: `otpauth://totp/<issuer>:<account>?secret=…&issuer=…`, with the
 * defaults left out and '@' unescaped (legal in a URI path), as apps show the label as written.
 */
export function otpauthUrl(issuer: string, account: string, secret: string): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account).replace(/%40/g, '@')}`;
  return `otpauth://totp/${label}?secret=${secret}&issuer=${encodeURIComponent(issuer)}`;
}
