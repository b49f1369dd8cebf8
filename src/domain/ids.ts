import { randomBytes } from 'node:crypto';

/**
 * A new identifier for a stored row: `<prefix>_` and `bytes` random bytes, URL-safe (`sub_…`,
 * `wh_…`, `msg_…`, `ord_…`). 96 random bits by default: unguessable, and never the same twice.
 */
export function newId(prefix: string, bytes = 12): string {
  return `${prefix}_${randomBytes(bytes).toString('base64url')}`;
}
