/**
 * Writes acknowledged during a database outage that could never apply: the journal records them
 * (src/journal/entries.ts recordRejection); this store reads them for their merchant.
 */
import { desc, eq } from 'drizzle-orm';
import type { Db } from './client.ts';
import { rejectedWrites } from './schema.ts';

export type RejectedWriteRow = typeof rejectedWrites.$inferSelect;

export class RejectedWriteStore {
  constructor(private readonly db: Db) {}

  /** A merchant's rejected writes, newest first, at most `limit`. */
  list(p: { wallet: string; limit: number }): Promise<RejectedWriteRow[]> {
    return this.db.select().from(rejectedWrites).where(eq(rejectedWrites.wallet, p.wallet)).orderBy(desc(rejectedWrites.rejectedAt)).limit(p.limit);
  }
}
