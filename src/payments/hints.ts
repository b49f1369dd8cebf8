/**
 * Transaction hashes sent by payment pages. A hint never attributes money: a receipt's payments
 * are the transfers into its payment address, which the block scan finds whether or not anyone
 * sent a hint. A hint only wakes the chain worker sooner and is followed until its block has been
 * scanned. A receipt holds at most MAX_OPEN_HINTS unresolved hints, and the worker checks a
 * bounded number per pass, the longest unchecked first, so no receipt or merchant can crowd out
 * another's.
 */
import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import { TransactionReceiptNotFoundError, type Hex } from 'viem';
import type { ChainDeps } from '../chain/client.ts';
import type { Db } from '../db/client.ts';
import { paymentHints } from '../db/schema.ts';
import { InvalidInput, RateLimited } from '../lib/errors.ts';
import { requestBalanceCheck } from './other-money.ts';

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;
export const MAX_OPEN_HINTS = 5;
/** A hint whose transaction no node has seen after this long is given up. */
export const HINT_TIMEOUT_MS = 30 * 60_000;
/** Hints checked per worker pass. */
export const HINTS_PER_PASS = 10;

/** Records a hint. The same hash again is a no-op; a sixth unresolved one is refused. */
export async function recordHint(db: Db, p: { wallet: string; receiptId: string; hash: string; now: number }): Promise<void> {
  if (!TX_HASH.test(p.hash)) throw new InvalidInput('transactionHash must be 0x followed by 64 hex digits');
  const transactionHash = p.hash.toLowerCase();
  await db.transaction(async (tx) => {
    const open = await tx
      .select({ hash: paymentHints.transactionHash })
      .from(paymentHints)
      .where(and(eq(paymentHints.wallet, p.wallet), eq(paymentHints.receiptId, p.receiptId), isNull(paymentHints.resolvedAt)))
      .for('update');
    if (open.some((h) => h.hash === transactionHash)) return;
    if (open.length >= MAX_OPEN_HINTS) {
      throw new RateLimited(p.now + 60_000, `This receipt already has ${MAX_OPEN_HINTS} transactions waiting to be seen on chain`);
    }
    await tx
      .insert(paymentHints)
      .values({ wallet: p.wallet, receiptId: p.receiptId, transactionHash, createdAt: p.now })
      .onConflictDoNothing();
  });
}

/**
 * Checks the hints checked least recently: a hint is resolved once its block is at or below the
 * scanned block (the scan then has seen its transfers), or once it has been missing for too long.
 */
export async function followHints(db: Db, chain: ChainDeps, scanned: bigint, now: number): Promise<number> {
  const due = await db
    .select()
    .from(paymentHints)
    .where(isNull(paymentHints.resolvedAt))
    .orderBy(asc(paymentHints.checkedAt), asc(paymentHints.createdAt))
    .limit(HINTS_PER_PASS);
  for (const h of due) {
    const mined = await chain.publicClient.getTransactionReceipt({ hash: h.transactionHash as Hex }).catch((err: unknown) => {
      if (err instanceof TransactionReceiptNotFoundError) return null;
      throw err;
    });
    const outcome = mined !== null && mined.blockNumber <= scanned ? 'mined' : mined === null && now - h.createdAt > HINT_TIMEOUT_MS ? 'not_found' : null;
    // The transaction may have sent ETH or another token, which no log of the receipt's token
    // shows: read the address's other balances (src/payments/other-money.ts).
    if (outcome === 'mined') await requestBalanceCheck(db, { wallet: h.wallet, receiptId: h.receiptId }, now, { force: true });
    await db
      .update(paymentHints)
      .set(outcome === null ? { checkedAt: now } : { checkedAt: now, resolvedAt: now, outcome })
      .where(and(eq(paymentHints.wallet, h.wallet), eq(paymentHints.receiptId, h.receiptId), eq(paymentHints.transactionHash, h.transactionHash)));
  }
  return due.length;
}

/** Unresolved hints, for /healthz and the tests. */
export async function openHintCount(db: Db): Promise<number> {
  const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(paymentHints).where(isNull(paymentHints.resolvedAt));
  return row?.n ?? 0;
}
