/**
 * Refunds verified at depth, and withdrawn by reorganisations (DESIGN "Refunds"). A refund whose
 * transfer was found when it was recorded (src/domain/refunds.ts) keeps that transfer's place in
 * its transaction and the block that held it. Each pass of the chain worker reads again, with one
 * eth_getTransactionReceipt each, at most REFUND_PROOFS_PER_PASS of:
 *
 *   - refunds confirming whose block is now CONFIRMATIONS deep below the node's head: still
 *     there, they are verified (`receipt.refund_verified`);
 *   - refunds whose block a reorganisation replaced: the scanner forgets their block hash when it
 *     withdraws the blocks above the common ancestor (src/payments/scanner.ts), and a block the
 *     scanner recorded with another hash gives the same away;
 *   - refunds whose transfer a reorganisation removed, for REMOVED_WATCH_MS after it did: mined
 *     again, they are confirming again, and verified again at depth.
 *
 * Verified means CONFIRMATIONS deep on the chain the node follows now. A verified refund whose
 * transfer is gone, or no longer deep (moved to a newer block), loses `verified`, and the merchant
 * hears it: `receipt.refund_unverified`. A refund keeps counting toward what was refunded either
 * way (an unverified refund is still a refund, as the specification allows); only the proof changes.
 */
import { and, asc, eq, gt, isNotNull, isNull, lte, or, sql, sum } from 'drizzle-orm';
import type { Hex } from 'viem';
import type { Logger } from 'pino';
import type { ChainDeps } from '../chain/client.ts';
import type { Db, Tx } from '../db/client.ts';
import { chainBlocks, receipts, refunds } from '../db/schema.ts';
import { centsToUsd } from '../lib/money.ts';
import { deepEnough, refundChainOf, refundSenders, verificationOf, type RefundTransaction, type TokenTransfer } from '../domain/refunds.ts';
import { enqueueEvent } from '../webhooks/outbox.ts';
import { CURSOR, REORG_WINDOW } from './scanner.ts';

/** Refund transactions read again per pass at most. */
export const REFUND_PROOFS_PER_PASS = 20;
/** How long a refund whose transfer a reorganisation removed is looked for again. */
export const REMOVED_WATCH_MS = 60 * 60_000;

export interface RefundProofContext {
  db: Db;
  chain: ChainDeps;
  /** The newest block the node named: depth is counted from it, as when the refund was recorded. */
  head: bigint;
  confirmations: number;
  now: number;
  logger: Logger;
}

type RefundRow = typeof refunds.$inferSelect;

/**
 * Called by the scanner inside the transaction that withdraws the blocks above `ancestor`: the
 * refunds whose transfer those blocks held are read again.
 */
export async function forgetRefundBlocks(tx: Tx, ancestor: bigint): Promise<void> {
  await tx.update(refunds).set({ blockHash: null }).where(and(isNotNull(refunds.logPosition), gt(refunds.blockNumber, ancestor)));
}

/** Follows the refund proofs due (see the module comment). Returns the RPC calls made. */
export async function followRefundProofs(c: RefundProofContext): Promise<number> {
  const replaced = sql`exists (select 1 from ${chainBlocks} b where b.cursor = ${CURSOR} and b.number = ${refunds.blockNumber} and b.hash <> ${refunds.blockHash})`;
  const due = await c.db
    .select()
    .from(refunds)
    .where(
      and(
        isNotNull(refunds.logPosition),
        or(
          // Confirming, and deep enough by the block it was seen in.
          and(isNull(refunds.verifiedAt), isNotNull(refunds.blockHash), lte(refunds.blockNumber, c.head - BigInt(c.confirmations) + 1n)),
          // A reorganisation replaced its block.
          and(isNull(refunds.blockHash), isNull(refunds.removedAt)),
          and(isNotNull(refunds.blockHash), gt(refunds.blockNumber, c.head - REORG_WINDOW), replaced),
          // Removed: mined again?
          gt(refunds.removedAt, c.now - REMOVED_WATCH_MS),
        ),
      ),
    )
    .orderBy(sql`${refunds.removedAt} nulls first`, asc(refunds.createdAt))
    .limit(REFUND_PROOFS_PER_PASS);
  const chain = refundChainOf(c.chain, c.confirmations)!;
  for (const r of due) {
    try {
      const read = await chain.readTransaction(r.txHash as Hex);
      await c.db.transaction((tx) => settleRefundProof(tx, r, read, chain.token.address, c));
    } catch (err) {
      c.logger.error({ err, wallet: r.wallet, refundId: r.id }, 'chain worker: reading a refund transaction again failed; tried again next pass');
    }
  }
  return due.length;
}

/** The refund's transfer in `read`, at its place in the transaction, when it still is what proved it. */
function transferOf(read: RefundTransaction, r: RefundRow, token: string, senders: ReadonlySet<string>): TokenTransfer | undefined {
  if (read.state !== 'mined') return undefined;
  const t = read.transfers.find((x) => x.position === r.logPosition);
  if (t === undefined || t.token !== token || t.to !== r.buyer || t.from === t.to || !senders.has(t.from)) return undefined;
  return t.value.toString() === r.amountUnits ? t : undefined;
}

/** Stores what the chain says about one refund's transfer now, and tells the merchant when `verified` changes. */
async function settleRefundProof(tx: Tx, before: RefundRow, read: RefundTransaction, token: string, c: RefundProofContext): Promise<void> {
  const [r] = await tx.select().from(refunds).where(and(eq(refunds.wallet, before.wallet), eq(refunds.id, before.id))).for('update');
  if (r === undefined) return;
  const [receipt] = await tx.select().from(receipts).where(and(eq(receipts.wallet, r.wallet), eq(receipts.id, r.receiptId)));
  if (receipt === undefined) return;
  const found = transferOf(read, r, token, await refundSenders(tx, r.wallet, receipt.payAddress));
  const mined = read.state === 'mined' && found !== undefined ? read : undefined;
  const deep = mined !== undefined && deepEnough(mined.blockNumber, c.head, c.confirmations);
  const next: Partial<RefundRow> =
    mined === undefined
      ? { blockNumber: null, blockHash: null, verifiedAt: null, removedAt: r.removedAt ?? c.now }
      : {
          blockNumber: mined.blockNumber,
          blockHash: mined.blockHash,
          logIndex: found!.logIndex,
          verifiedAt: deep ? (r.verifiedAt ?? c.now) : null,
          removedAt: null,
        };
  await tx.update(refunds).set(next).where(and(eq(refunds.wallet, r.wallet), eq(refunds.id, r.id)));
  const after = { ...r, ...next };
  const was = r.verifiedAt !== null;
  const is = after.verifiedAt !== null;
  if (was === is) return;
  const [done] = await tx.select({ total: sum(refunds.amountCents) }).from(refunds).where(and(eq(refunds.wallet, r.wallet), eq(refunds.receiptId, r.receiptId)));
  const data = {
    receiptId: r.receiptId,
    merchant: r.wallet,
    status: receipt.status,
    totalUsd: centsToUsd(receipt.totalCents),
    refundedUsd: centsToUsd(BigInt(done?.total ?? '0')),
    currency: receipt.currency,
    refundId: r.id,
    usd: centsToUsd(r.amountCents),
    amountUsd: centsToUsd(r.amountCents),
    buyer: r.buyer,
    txHash: r.txHash,
    verified: is,
    verification: verificationOf(after),
    blockNumber: mined?.blockNumber.toString() ?? null,
    metadata: receipt.metadata,
  };
  if (is) {
    await enqueueEvent(tx, { wallet: r.wallet, type: 'receipt.refund_verified', dedupeKey: `${r.id}:${after.verifiedAt}`, data }, c.now);
    c.logger.info({ wallet: r.wallet, refundId: r.id, block: mined?.blockNumber }, 'refund verified: its transfer is CONFIRMATIONS deep');
  } else {
    // Keyed by the verification it withdraws: verified again and removed again is news again.
    await enqueueEvent(tx, { wallet: r.wallet, type: 'receipt.refund_unverified', dedupeKey: `${r.id}:${r.verifiedAt}`, data }, c.now);
    c.logger.warn({ wallet: r.wallet, refundId: r.id, txHash: r.txHash, onChain: mined !== undefined }, 'refund unverified: a reorganisation removed its transfer (or left it short of CONFIRMATIONS)');
  }
}
