import crypto from 'node:crypto';

/**
 * Encryption at rest (AES-256-GCM) and HMAC signing, both keyed from SECRET_ENCRYPTION_KEY through
 * HKDF with distinct labels, so one configured key never serves two purposes directly.
 */
export class SecretBox {
  private readonly encKey: Buffer;
  private readonly macKey: Buffer;

  constructor(masterKey: string) {
    const ikm = Buffer.from(masterKey, 'utf8');
    this.encKey = Buffer.from(crypto.hkdfSync('sha256', ikm, Buffer.alloc(0), 'rmm-service:encrypt:v1', 32));
    this.macKey = Buffer.from(crypto.hkdfSync('sha256', ikm, Buffer.alloc(0), 'rmm-service:sign:v1', 32));
  }

  encrypt(plaintext: string): string {
    const iv = crypto.randomBytes(12);
    const cipher = crypto.createCipheriv('aes-256-gcm', this.encKey, iv);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join(':');
  }

  decrypt(sealed: string): string {
    const [version, iv, tag, body] = sealed.split(':');
    if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('Unrecognized ciphertext');
    const decipher = crypto.createDecipheriv('aes-256-gcm', this.encKey, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }

  /** hex HMAC-SHA256 of `value` under the signing key */
  sign(value: string): string {
    return crypto.createHmac('sha256', this.macKey).update(value).digest('hex');
  }

  verify(value: string, signature: string): boolean {
    return safeEqual(this.sign(value), signature);
  }
}

/** Constant-time string comparison that tolerates different lengths. */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && crypto.timingSafeEqual(ab, bb);
}

export function sha256Hex(value: string): string {
  return crypto.createHash('sha256').update(value).digest('hex');
}

export function randomToken(bytes = 32): string {
  return crypto.randomBytes(bytes).toString('base64url');
}
