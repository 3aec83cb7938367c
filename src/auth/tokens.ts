import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import type { Scope } from '../../entities/role.js';
import type { Config } from '../config.js';

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
}

const ISSUER = 'rmm-service';
const AUDIENCE = 'rmm-service-api';

function key(config: Config): Uint8Array {
  return new TextEncoder().encode(config.jwtSecret);
}

export async function signAccessToken(config: Config, claims: AccessClaims): Promise<string> {
  const { sub, ...rest } = claims;
  return new SignJWT({ ...rest })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(sub)
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(`${config.accessTokenTtlSeconds}s`)
    .sign(key(config));
}

/** Returns the claims, or null for any invalid, expired or foreign token. */
export async function verifyAccessToken(config: Config, token: string): Promise<AccessClaims | null> {
  try {
    const { payload } = await jwtVerify(token, key(config), { issuer: ISSUER, audience: AUDIENCE, algorithms: ['HS256'] });
    if (typeof payload.sub !== 'string' || typeof payload.mid !== 'string') return null;
    return payload as unknown as AccessClaims;
  } catch (error) {
    if (error instanceof joseErrors.JOSEError) return null;
    throw error;
  }
}
