/**
 * A receipt's metadata: the shop's own string fields (an order number, a customer reference), kept
 * as sent and echoed, never read by the service (DESIGN.md "Integrator API"). The limits are the
 * contract's (src/contract/receipts.ts); lengths count characters (code points), as PostgreSQL and
 * JSON Schema's maxLength do.
 */
import { MAX_METADATA_KEY_LENGTH, MAX_METADATA_KEYS, MAX_METADATA_VALUE_LENGTH, type Metadata } from '../contract/receipts.ts';
import { InvalidInput } from '../lib/errors.ts';

export type { Metadata };

const chars = (s: string) => [...s].length;

/** A key as a message quotes it: a long one cut short. */
const quoted = (key: string) => JSON.stringify(chars(key) > 50 ? `${[...key].slice(0, 50).join('')}…` : key);

/**
 * Checks metadata as a create sent it (absent: none) and returns it as stored: an object of at most
 * MAX_METADATA_KEYS keys of 1-MAX_METADATA_KEY_LENGTH characters, string values of at most
 * MAX_METADATA_VALUE_LENGTH. Each refusal names its key and limit.
 */
export function parseMetadata(value: unknown): Metadata {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidInput('metadata must be an object of string values, such as {"shopOrder": "SO-20417"}');
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_METADATA_KEYS) {
    throw new InvalidInput(`metadata may hold at most ${MAX_METADATA_KEYS} keys; it has ${entries.length}`);
  }
  for (const [key, v] of entries) {
    if (key === '' || chars(key) > MAX_METADATA_KEY_LENGTH) {
      throw new InvalidInput(`metadata key ${quoted(key)} must be 1-${MAX_METADATA_KEY_LENGTH} characters; it has ${chars(key)}`);
    }
    if (typeof v !== 'string') throw new InvalidInput(`metadata.${key} must be a string; it is ${v === null ? 'null' : Array.isArray(v) ? 'an array' : `a ${typeof v}`}`);
    if (chars(v) > MAX_METADATA_VALUE_LENGTH) {
      throw new InvalidInput(`metadata.${key} must be at most ${MAX_METADATA_VALUE_LENGTH} characters; it has ${chars(v)}`);
    }
    // PostgreSQL's jsonb holds no NUL; the JSON parser refuses one already (src/http/limits.ts).
    if (key.includes('\u0000') || v.includes('\u0000')) throw new InvalidInput(`metadata.${key} may not contain the NUL character (U+0000)`);
  }
  // Own properties whatever the key (even "__proto__"), as JSON.parse made them.
  return Object.fromEntries(entries) as Metadata;
}

/** Metadata as a request fingerprint holds it: keys sorted, so the same fields in another order are the same request. */
export function canonicalMetadata(metadata: Metadata): [string, string][] {
  return Object.entries(metadata).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}
