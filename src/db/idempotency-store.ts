/**
 * Idempotency-Key answers (src/http/idempotency.ts): the answer first sent for a caller's key, kept
 * IDEMPOTENCY_RETENTION_MS (src/db/write-claims.ts purges them), read before a route runs and
 * stored before its answer leaves.
 */
import { and, eq } from 'drizzle-orm';
import type { Db } from './client.ts';
import { isDbDown } from '../lib/db-errors.ts';
import { idempotencyKeys } from './schema.ts';

/** One stored answer, as sent. */
export type StoredAnswer = typeof idempotencyKeys.$inferSelect;

export class IdempotencyStore {
  constructor(private readonly db: Db) {}

  /**
   * The answer stored for `key` in `scope`; undefined when there is none, and also when the
   * database is unreachable: the write id still makes a retry exactly-once, and the route decides
   * whether it can answer at all while the database is away.
   */
  async find(scope: string, key: string): Promise<StoredAnswer | undefined> {
    try {
      const [stored] = await this.db
        .select()
        .from(idempotencyKeys)
        .where(and(eq(idempotencyKeys.scope, scope), eq(idempotencyKeys.key, key)));
      return stored;
    } catch (err) {
      if (!isDbDown(err)) throw err;
      return undefined;
    }
  }

  /** Stores an answer; the first answer for a key stays. */
  async save(answer: StoredAnswer): Promise<void> {
    await this.db.insert(idempotencyKeys).values(answer).onConflictDoNothing();
  }
}
