/**
 * How a database error looks: unreachable, or refused. Every layer asks (the HTTP error handler maps
 * an unreachable database to 503, the stores and workers wait for it), so the classification is a
 * leaf module rather than part of the client (src/db/client.ts) that opens the connections.
 */
import { CommitOutcomeUnknown, DatabaseUnavailable } from './errors.ts';

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH']);

/**
 * True when an error means the database could not be reached or went away mid-query, as opposed
 * to a query that the database refused.
 */
export function isConnectionError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') {
      if (CONNECTION_CODES.has(code)) return true;
      // 08: connection exception; 57P01-57P03: admin shutdown, crash shutdown, cannot connect now.
      if (code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03') return true;
    }
    if (/Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable|Query read timeout/i.test(e.message)) {
      return true;
    }
  }
  return false;
}

/**
 * Connection errors that come before a statement reaches the server: the server never saw it.
 * Others (a read timeout, a connection cut mid-statement) leave a write's outcome unknown.
 */
const BEFORE_SENDING = /timeout exceeded when trying to connect|ECONNREFUSED|ENOTFOUND|EHOSTUNREACH/i;

/** True when a connection error cannot have let a statement through (see BEFORE_SENDING). */
export function neverReachedServer(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof DatabaseUnavailable) return true;
    if (e instanceof CommitOutcomeUnknown) return false;
    const code = (e as { code?: unknown }).code;
    if (code === '57P03' || (typeof code === 'string' && BEFORE_SENDING.test(code)) || BEFORE_SENDING.test(e.message)) return true;
  }
  return false;
}

/** True for an unreachable database, whether seen by a query or reported by the key resolver. */
export function isDbDown(err: unknown): boolean {
  return err instanceof DatabaseUnavailable || isConnectionError(err);
}
