// Gateway API keys: `gk_` + 32 random bytes in base64url (43 characters). Only the SHA-256 of
// a key is stored; it is shown once, when created. Lookup is by digest, and every comparison
// of secrets (digests, the master key) is constant-time.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const GATEWAY_KEY_PREFIX = 'gk_';
const KEY_BYTES = 32;
const KEY_ID_BYTES = 8;
/** "gk_" plus 9 characters: enough to tell keys apart in a list, far too few to guess one. */
const SHOWN_PREFIX_CHARS = 12;

export function generateGatewayKey(): string {
  return GATEWAY_KEY_PREFIX + randomBytes(KEY_BYTES).toString('base64url');
}

export function generateKeyId(): string {
  return randomBytes(KEY_ID_BYTES).toString('hex');
}

export function keyDigest(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function shownPrefix(key: string): string {
  return key.slice(0, SHOWN_PREFIX_CHARS);
}

/** Constant-time equality of two secrets of any length (compares their SHA-256 digests). */
export function secretsEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a, 'utf8').digest();
  const db = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(da, db);
}

/** Constant-time equality of two hex digests of the same length. */
export function digestsEqual(a: string, b: string): boolean {
  const ba = Buffer.from(a, 'hex');
  const bb = Buffer.from(b, 'hex');
  return ba.length === bb.length && timingSafeEqual(ba, bb);
}
