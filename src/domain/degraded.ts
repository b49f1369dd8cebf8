/**
 * Degraded answers (DESIGN.md "Degraded mode"): while the database is unreachable, a list read
 * answers empty and says so, rather than failing or claiming there is nothing.
 */
import { isDbDown } from '../lib/db-errors.ts';

/** What a degraded answer adds: the database is unreachable, and what is shown may be incomplete. */
export const DEGRADED = Object.freeze({ degraded: true as const, reason: 'database_unavailable' as const });
export type Degraded = typeof DEGRADED;

/**
 * A read that has a degraded answer: `fallback` (an empty list), flagged, while the database is
 * unreachable. Any other failure is the caller's.
 */
export async function orDegraded<T, F extends object>(read: () => Promise<T>, fallback: F): Promise<T | (F & Degraded)> {
  try {
    return await read();
  } catch (err) {
    if (!isDbDown(err)) throw err;
    return { ...fallback, ...DEGRADED };
  }
}
