import { randomBytes } from 'node:crypto';

/** Random bytes drawn from the system's generator a block at a time (see randomText). */
const BLOCK = 4096;
let pool = Buffer.alloc(0);
let offset = 0;

/**
 * `bytes` random bytes as URL-safe base64. One call to the generator serves a 4 KiB block (a call
 * per identifier cost a receipt creation more than its validation); each value takes bytes no
 * other value took, and a spent block is dropped, never refilled in place.
 */
export function randomText(bytes: number): string {
  if (offset + bytes > pool.length) {
    pool = randomBytes(Math.max(BLOCK, bytes));
    offset = 0;
  }
  const text = pool.toString('base64url', offset, offset + bytes);
  offset += bytes;
  return text;
}

/**
 * A new identifier for a stored row: `<prefix>_` and `bytes` random bytes, URL-safe (`sub_…`,
 * `wh_…`, `msg_…`, `ord_…`). 96 random bits by default: unguessable, and never the same twice.
 */
export function newId(prefix: string, bytes = 12): string {
  return `${prefix}_${randomText(bytes)}`;
}
