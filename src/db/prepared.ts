/**
 * Prepared statements for the hot read paths. Building a query with Drizzle's builder costs more
 * CPU than PostgreSQL spends answering a point lookup, so the stores that serve most traffic
 * (ReceiptStore, UserDirectory) build theirs once per database handle, in maps each store instance
 * holds, and run them with placeholder values. The statement is named, so each pooled connection
 * also parses it only once.
 */
import type { Db, Tx } from './client.ts';

/**
 * Something made once for each database handle (the app's, or a test's) on first use; for a
 * statement that must also run inside callers' transactions, once for each transaction handle.
 */
export function perDatabase<T, H extends Tx = Db>(create: (db: H) => T): (db: H) => T {
  const made = new WeakMap<H, T>();
  return (db) => {
    let value = made.get(db);
    if (value === undefined) {
      value = create(db);
      made.set(db, value);
    }
    return value;
  };
}
