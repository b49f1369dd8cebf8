import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

const KEY_PREFIX = 'spl_';
const KEY_SHAPE = /^spl_[A-Za-z0-9_-]{43}$/;

/** A new subscription key: 256 random bits, URL-safe. Shown once, stored only as its hash. */
export function generateKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** Keys carry 256 bits of entropy, so a fast hash is enough; no salt or stretching is needed. */
export function hashKey(key: string): string {
  return hash('sha256', key, 'hex');
}

export function looksLikeKey(value: string): boolean {
  return KEY_SHAPE.test(value);
}

export function keyPrefix(key: string): string {
  return key.slice(0, KEY_PREFIX.length + 6);
}

/** Compares two secrets in constant time, whatever their lengths. */
export function safeEqual(a: string, b: string): boolean {
  const da = hash('sha256', a, 'buffer');
  const db = hash('sha256', b, 'buffer');
  return timingSafeEqual(da, db);
}
