import { SignJWT, jwtVerify, errors as joseErrors, type JWTPayload } from 'jose';
import type { Scope } from '../../entities/role.js';
import type { Config } from '../config.js';
import { onePer } from '../memo.js';

/** Claims of an access token. `ver` is the user's token version: bumping it revokes every outstanding token at once. */
export interface AccessClaims {
  sub: string;
  mid: string;
  scope: Scope;
  partnerId: string | null;
  orgId: string | null;
  roleId: string;
  mfa: boolean;
  ver: number;
  /** the login session (refresh-token family); revoking it ends the access token too. Absent on tokens minted outside a session. */
  sid?: string;
}

/** Claims of the token that carries a password-verified login to its second factor. */
export interface MfaClaims {
  sub: string;
  ver: number;
  /** the membership the login asked for; the second step signs in through it */
  mid?: string;
}

const ISSUER = 'rmm-service';
const AUDIENCE = 'rmm-service-api';
// A distinct audience makes an MFA token useless as an access token and the other way round.
const MFA_AUDIENCE = 'rmm-service-mfa';
const MFA_TOKEN_TTL_SECONDS = 300;

function key(config: Config): Uint8Array {
  return new TextEncoder().encode(config.jwtSecret);
}

async function sign(config: Config, audience: string, ttlSeconds: number, { sub, ...rest }: { sub: string } & JWTPayload): Promise<string> {
  return new SignJWT(rest)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(sub)
    .setIssuer(ISSUER)
    .setAudience(audience)
    .setIssuedAt()
    .setExpirationTime(`${ttlSeconds}s`)
    .sign(key(config));
}

async function verify(config: Config, audience: string, token: string): Promise<JWTPayload | null> {
  try {
    const { payload } = await jwtVerify(token, key(config), { issuer: ISSUER, audience, algorithms: ['HS256'] });
    return typeof payload.sub === 'string' && typeof payload.ver === 'number' ? payload : null;
  } catch (error) {
    if (error instanceof joseErrors.JOSEError) return null;
    throw error;
  }
}

export async function signAccessToken(config: Config, claims: AccessClaims): Promise<string> {
  return sign(config, AUDIENCE, config.accessTokenTtlSeconds, { ...claims });
}

// Clients present the same access token on every request until it expires: its verified claims are
// remembered (by the token's exact text, per configuration) so the signature is checked once. Only
// the signature's verdict is kept: the expiry is checked on every use, and whether the token's user,
// membership and session still grant anything is read from the database on every request.
const VERIFIED_CACHE_SIZE = 10_000;
const verifiedTokens = onePer((_config: Config) => new Map<string, AccessClaims & { exp: number }>());

/** Returns the claims, or null for any invalid, expired or foreign token. */
export async function verifyAccessToken(config: Config, token: string): Promise<AccessClaims | null> {
  const verified = verifiedTokens(config);
  const known = verified.get(token);
  if (known) {
    if (Date.now() / 1000 < known.exp) return known;
    verified.delete(token);
    return null;
  }
  const payload = await verify(config, AUDIENCE, token);
  if (!payload || typeof payload.mid !== 'string' || (payload.sid !== undefined && typeof payload.sid !== 'string')) return null;
  const claims = payload as unknown as AccessClaims & { exp?: number };
  if (typeof claims.exp === 'number') {
    // Oldest first out (a Map iterates in insertion order).
    if (verified.size >= VERIFIED_CACHE_SIZE) verified.delete(verified.keys().next().value!);
    verified.set(token, Object.freeze(claims) as AccessClaims & { exp: number });
  }
  return claims;
}

export async function signMfaToken(config: Config, claims: MfaClaims): Promise<string> {
  return sign(config, MFA_AUDIENCE, MFA_TOKEN_TTL_SECONDS, { ...claims });
}

export async function verifyMfaToken(config: Config, token: string): Promise<MfaClaims | null> {
  const payload = await verify(config, MFA_AUDIENCE, token);
  if (!payload || (payload.mid !== undefined && typeof payload.mid !== 'string')) return null;
  return { sub: payload.sub!, ver: payload.ver as number, ...(payload.mid ? { mid: payload.mid as string } : {}) };
}
