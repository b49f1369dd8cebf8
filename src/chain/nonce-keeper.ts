/**
 * The service's own nonce for an account it sends from (the deployer that pays the sweeps' gas).
 *
 * A node's *pending* count cannot be trusted: a load-balanced provider answers from a node that
 * may be blocks behind, whose pending count is stale, and every send with it fails "nonce too
 * low". So the next nonce is kept in the database (chain_nonces), survives restarts and is shared
 * by every instance, and is reconciled before each use with the chain's *latest* count, which a
 * lagging node can only under-state: the nonce used is max(kept, latest). A transaction of this
 * account sent by something else (a split deployment) is found that way once it is mined.
 *
 * A nonce is reserved before its transaction is sent (compare-and-set on the row, so two
 * instances never get the same one) and released when the node refused the transaction outright,
 * so no gap is left behind; a nonce whose send had an unknown outcome stays used, and its sweep is
 * sent again (same nonce) if it does not show up.
 */
import { eq, sql } from 'drizzle-orm';
import type { Address } from 'viem';
import type { Db } from '../db/client.ts';
import { chainNonces } from '../db/schema.ts';
import type { ChainPublicClient } from './client.ts';

export class NonceKeeper {
  readonly account: string;

  constructor(
    private readonly db: Db,
    private readonly publicClient: ChainPublicClient,
    account: Address,
  ) {
    this.account = account.toLowerCase();
  }

  /** The chain's count of mined transactions of the account: the lowest nonce not yet mined. */
  async latest(): Promise<bigint> {
    return BigInt(await this.publicClient.getTransactionCount({ address: this.account as Address, blockTag: 'latest' }));
  }

  /** The nonce kept, or null before the first send. */
  async kept(): Promise<bigint | null> {
    const [row] = await this.db.select({ next: chainNonces.next }).from(chainNonces).where(eq(chainNonces.account, this.account));
    return row?.next ?? null;
  }

  /**
   * Reserves the next nonce: max(kept, latest), with `latest` from latest() (the caller usually
   * has it already). Returns null when another instance reserved one meanwhile (try again later).
   */
  async reserve(latest: bigint, now = Date.now()): Promise<bigint | null> {
    const kept = await this.kept();
    const nonce = kept === null || kept < latest ? latest : kept;
    if (kept === null) {
      const inserted = await this.db
        .insert(chainNonces)
        .values({ account: this.account, next: nonce + 1n, updatedAt: now })
        .onConflictDoNothing()
        .returning({ next: chainNonces.next });
      return inserted.length === 1 ? nonce : null;
    }
    const moved = await this.db
      .update(chainNonces)
      .set({ next: nonce + 1n, updatedAt: now })
      .where(sql`${chainNonces.account} = ${this.account} and ${chainNonces.next} = ${kept}`)
      .returning({ next: chainNonces.next });
    return moved.length === 1 ? nonce : null;
  }

  /**
   * Gives a reserved nonce back after the node refused its transaction outright, if nothing was
   * reserved after it (then the next reservation reuses it and no gap is left).
   */
  async release(nonce: bigint, now = Date.now()): Promise<void> {
    await this.db
      .update(chainNonces)
      .set({ next: nonce, updatedAt: now })
      .where(sql`${chainNonces.account} = ${this.account} and ${chainNonces.next} = ${nonce + 1n}`);
  }
}
