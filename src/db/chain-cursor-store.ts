/** How far the chain worker's scans have read (chain_cursors), for readers outside the worker (GET /healthz). */
import { eq } from 'drizzle-orm';
import type { Db } from './client.ts';
import { chainCursors } from './schema.ts';

export class ChainCursorStore {
  constructor(private readonly db: Db) {}

  /** The last block the named cursor has read; null when it has read none yet. */
  async block(name: string): Promise<bigint | null> {
    const [row] = await this.db.select({ block: chainCursors.block }).from(chainCursors).where(eq(chainCursors.name, name));
    return row?.block ?? null;
  }
}
