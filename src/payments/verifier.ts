/**
 * Payment verification: a receipt moves to paid only when the chain says so.
 *
 *   submitted ──mined──▶ (receipt tx_mined) ──right transfer found──▶ validated (recipient_validated)
 *       │                       └─ wrong token / address / too little ─▶ mismatch (tx_mismatch)
 *       └─ reverted ─▶ failed (failed)
 *   validated ──CONFIRMATIONS reached, still in the same block──▶ completed (completed)
 *       └─ reorganised away ─▶ submitted again (receipt back to pending)
 *
 * All state lives in the database and every step is a conditional update, so a restart resumes
 * where it stopped and no receipt completes twice. RPC errors leave a payment where it is.
 */
import { and, eq, inArray, ne, sql } from 'drizzle-orm';
import { decodeEventLog, erc20Abi, isAddressEqual, type Hex, type TransactionReceipt } from 'viem';
import type { Logger } from 'pino';
import type { ChainDeps } from '../chain/client.ts';
import type { Db } from '../db/client.ts';
import { receiptPayments, splitTransactions } from '../db/schema.ts';
import { Conflict, InvalidInput } from '../domain/errors.ts';
import { centsToUsd } from '../domain/money.ts';
import { getSplitConfig } from '../domain/splits.ts';
import { enqueueEvent } from '../webhooks/outbox.ts';
import { amountUnits, type ReceiptRow } from './quote.ts';
import { moveReceipt } from './transitions.ts';
import { findReceipt } from '../domain/receipts.ts';

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;
/** A submitted hash the chain never shows is given up after this long. */
export const NOT_FOUND_TIMEOUT_MS = 30 * 60_000;
const PAID = ['completed', 'refunded'];

type Payment = typeof receiptPayments.$inferSelect;

/** Records a buyer's transaction hash for verification. Idempotent for the same hash. */
export async function submitPayment(db: Db, row: ReceiptRow, hash: unknown, now = Date.now()): Promise<void> {
  if (typeof hash !== 'string' || !TX_HASH.test(hash)) throw new InvalidInput('transactionHash must be 0x followed by 64 hex digits');
  const txHash = hash.toLowerCase();
  if (PAID.includes(row.status)) throw new Conflict(`Receipt ${row.id} is already ${row.status}`, 'already_paid');
  await db.transaction(async (tx) => {
    const open = await tx
      .select({ hash: receiptPayments.transactionHash, status: receiptPayments.status })
      .from(receiptPayments)
      .where(and(eq(receiptPayments.wallet, row.wallet), eq(receiptPayments.receiptId, row.id), inArray(receiptPayments.status, ['validated', 'completed'])));
    if (open.some((p) => p.hash !== txHash)) throw new Conflict(`Receipt ${row.id} is already being paid by another transaction`, 'already_paid');
    const usedElsewhere = await tx
      .select({ receiptId: receiptPayments.receiptId })
      .from(receiptPayments)
      .where(
        and(
          eq(receiptPayments.transactionHash, txHash),
          inArray(receiptPayments.status, ['validated', 'completed']),
          sql`not (${receiptPayments.wallet} = ${row.wallet} and ${receiptPayments.receiptId} = ${row.id})`,
        ),
      );
    if (usedElsewhere.length > 0) throw new Conflict('This transaction already paid another receipt', 'transaction_already_used');
    await tx
      .insert(receiptPayments)
      .values({ wallet: row.wallet, receiptId: row.id, transactionHash: txHash, status: 'submitted', source: 'submitted', createdAt: now, updatedAt: now })
      .onConflictDoNothing();
  });
}

export interface VerifierOptions {
  db: Db;
  chain: ChainDeps;
  confirmations: number;
  logger: Logger;
}

export class PaymentVerifier {
  constructor(private readonly o: VerifierOptions) {}

  /** Advances every open payment one step. Returns how many changed state. */
  async pass(now = Date.now()): Promise<number> {
    const open = await this.o.db
      .select()
      .from(receiptPayments)
      .where(inArray(receiptPayments.status, ['submitted', 'validated']))
      .limit(200);
    let changed = 0;
    for (const p of open) {
      try {
        if (await (p.status === 'submitted' ? this.checkSubmitted(p, now) : this.checkConfirmed(p, now))) changed++;
      } catch (err) {
        // RPC trouble or a stalled node: the payment stays where it is and is tried next pass.
        this.o.logger.warn({ err, receiptId: p.receiptId, tx: p.transactionHash }, 'payment check failed; will retry');
      }
    }
    return changed;
  }

  private async chainReceipt(hash: string): Promise<TransactionReceipt | null> {
    try {
      return await this.o.chain.publicClient.getTransactionReceipt({ hash: hash as Hex });
    } catch (err) {
      if ((err as { name?: string }).name === 'TransactionReceiptNotFoundError') return null;
      throw err;
    }
  }

  private async checkSubmitted(p: Payment, now: number): Promise<boolean> {
    const { db } = this.o;
    const mined = await this.chainReceipt(p.transactionHash);
    if (mined === null) {
      if (now - p.createdAt < NOT_FOUND_TIMEOUT_MS) return false;
      await db.transaction(async (tx) => {
        await this.setPayment(tx, p, { status: 'failed', reason: 'transaction not found on chain' }, now);
        await moveReceipt(tx, { wallet: p.wallet, receiptId: p.receiptId, to: 'failed', note: `${p.transactionHash} never appeared on chain`, at: now });
      });
      return true;
    }
    const row = await findReceipt(db, p.wallet, p.receiptId);
    if (mined.status === 'reverted') {
      await db.transaction(async (tx) => {
        if (!(await this.setPayment(tx, p, { status: 'failed', reason: 'transaction reverted' }, now))) return;
        await moveReceipt(tx, { wallet: p.wallet, receiptId: p.receiptId, to: 'failed', note: `${p.transactionHash} reverted`, at: now });
      });
      return true;
    }
    const split = await getSplitConfig(db, p.wallet);
    const found = await this.findTransfer(mined, row, split.address);
    return db.transaction(async (tx) => {
      await moveReceipt(tx, { wallet: p.wallet, receiptId: p.receiptId, to: 'tx_mined', note: p.transactionHash, at: now });
      if ('reason' in found) {
        if (!(await this.setPayment(tx, p, { status: 'mismatch', reason: found.reason }, now))) return false;
        const moved = await moveReceipt(tx, { wallet: p.wallet, receiptId: p.receiptId, to: 'tx_mismatch', note: found.reason, at: now });
        if (moved) {
          await enqueueEvent(tx, {
            wallet: p.wallet,
            type: 'receipt.tx_mismatch',
            dedupeKey: `${p.receiptId}:${p.transactionHash}`,
            data: { receiptId: p.receiptId, merchant: p.wallet, status: 'tx_mismatch', transactionHash: p.transactionHash, reason: found.reason },
          }, now);
        }
        return true;
      }
      const claimed = await tx
        .update(receiptPayments)
        .set({
          status: 'validated',
          logIndex: found.logIndex,
          blockNumber: mined.blockNumber,
          blockHash: mined.blockHash,
          amountUnits: found.value.toString(),
          payer: found.from.toLowerCase(),
          updatedAt: now,
        })
        .where(this.samePayment(p, 'submitted'))
        .returning({ id: receiptPayments.receiptId });
      if (claimed.length === 0) return false;
      await moveReceipt(tx, {
        wallet: p.wallet,
        receiptId: p.receiptId,
        to: 'recipient_validated',
        note: `${centsToUsd(row.totalCents)} USD in log ${found.logIndex} of block ${mined.blockNumber}`,
        at: now,
      });
      return true;
    }).catch(async (err: unknown) => {
      // The unique (transaction, log) index: this transfer already settles another receipt.
      if ((err as { code?: string; cause?: { code?: string } }).code === '23505' || (err as { cause?: { code?: string } }).cause?.code === '23505') {
        await db.transaction(async (tx) => {
          await this.setPayment(tx, p, { status: 'mismatch', reason: 'transfer already settled another receipt' }, now);
          await moveReceipt(tx, { wallet: p.wallet, receiptId: p.receiptId, to: 'tx_mismatch', note: 'transfer already settled another receipt', at: now });
        });
        return true;
      }
      throw err;
    });
  }

  /** The first USDC transfer in the transaction to the split, of at least the amount, not claimed by another receipt. */
  private async findTransfer(mined: TransactionReceipt, row: ReceiptRow, split: string | null) {
    const token = this.o.chain.usdc.address;
    const want = amountUnits(row, this.o.chain.usdc.decimals);
    const transfers = mined.logs.flatMap((log) => {
      try {
        const ev = decodeEventLog({ abi: erc20Abi, data: log.data, topics: log.topics, eventName: 'Transfer' });
        return [{ token: log.address, logIndex: log.logIndex, from: ev.args.from, to: ev.args.to, value: ev.args.value }];
      } catch {
        // Not an ERC-20 Transfer: other events in the same transaction are simply not payments.
        return [];
      }
    });
    if (split === null) return { reason: 'the merchant has no split contract deployed' };
    const toSplit = transfers.filter((t) => isAddressEqual(t.to, split as Hex));
    const usdcToSplit = toSplit.filter((t) => isAddressEqual(t.token, token));
    const enough = usdcToSplit.filter((t) => t.value >= want);
    for (const t of enough) {
      const [taken] = await this.o.db
        .select({ id: receiptPayments.receiptId })
        .from(receiptPayments)
        .where(
          and(
            eq(receiptPayments.transactionHash, mined.transactionHash.toLowerCase()),
            eq(receiptPayments.logIndex, t.logIndex),
            ne(receiptPayments.status, 'mismatch'),
          ),
        );
      if (taken === undefined) return t;
    }
    if (enough.length > 0) return { reason: 'transfer already settled another receipt' };
    if (usdcToSplit.length > 0) {
      const best = usdcToSplit.reduce((a, b) => (a.value > b.value ? a : b));
      return { reason: `underpaid: ${best.value} of ${want} base units` };
    }
    if (toSplit.length > 0) return { reason: 'wrong token: the transfer to the split is not USDC' };
    if (transfers.some((t) => isAddressEqual(t.token, token))) return { reason: 'wrong address: USDC was not sent to the merchant split' };
    return { reason: 'no USDC transfer in the transaction' };
  }

  private async checkConfirmed(p: Payment, now: number): Promise<boolean> {
    const { db, chain, confirmations } = this.o;
    if (p.blockNumber === null || p.logIndex === null) return false;
    const head = await chain.publicClient.getBlockNumber({ cacheTime: 0 });
    if (head - p.blockNumber + 1n < BigInt(confirmations)) return false;
    // Re-check at depth: a payment reorganised out of its block must not complete.
    const again = await this.chainReceipt(p.transactionHash);
    if (again === null || again.blockHash !== p.blockHash || again.status !== 'success') {
      await db.transaction(async (tx) => {
        const reset = await tx
          .update(receiptPayments)
          .set({ status: 'submitted', logIndex: null, blockNumber: null, blockHash: null, reason: 'reorganised; waiting to be mined again', updatedAt: now })
          .where(this.samePayment(p, 'validated'))
          .returning({ id: receiptPayments.receiptId });
        if (reset.length === 0) return;
        const row = await findReceipt(tx, p.wallet, p.receiptId);
        await moveReceipt(tx, {
          wallet: p.wallet,
          receiptId: p.receiptId,
          to: row.source === 'terminal' ? 'generated' : 'pending',
          note: `${p.transactionHash} left the chain in a reorganisation`,
          at: now,
        });
      });
      this.o.logger.warn({ receiptId: p.receiptId, tx: p.transactionHash }, 'payment reorganised away');
      return true;
    }
    const block = await chain.publicClient.getBlock({ blockHash: again.blockHash });
    const paidAt = Number(block.timestamp) * 1000;
    return db.transaction(async (tx) => {
      const done = await tx
        .update(receiptPayments)
        .set({ status: 'completed', updatedAt: now })
        .where(this.samePayment(p, 'validated'))
        .returning({ id: receiptPayments.receiptId });
      if (done.length === 0) return false;
      const moved = await moveReceipt(tx, {
        wallet: p.wallet,
        receiptId: p.receiptId,
        to: 'completed',
        note: `${confirmations} confirmation(s)`,
        at: now,
        set: { transactionHash: p.transactionHash, transactionTimestamp: paidAt },
      });
      await tx
        .update(splitTransactions)
        .set({ receiptId: p.receiptId })
        .where(and(eq(splitTransactions.transactionHash, p.transactionHash), eq(splitTransactions.logIndex, p.logIndex!)));
      if (moved) {
        const row = await findReceipt(tx, p.wallet, p.receiptId);
        await enqueueEvent(tx, {
          wallet: p.wallet,
          type: 'receipt.completed',
          dedupeKey: p.receiptId,
          data: {
            receiptId: p.receiptId,
            merchant: p.wallet,
            status: 'completed',
            totalUsd: centsToUsd(row.totalCents),
            currency: row.currency,
            transactionHash: p.transactionHash,
            transactionTimestamp: paidAt,
            amount: p.amountUnits,
            payer: p.payer,
          },
        }, now);
      }
      return true;
    });
  }

  private samePayment(p: Payment, status: Payment['status']) {
    return and(
      eq(receiptPayments.wallet, p.wallet),
      eq(receiptPayments.receiptId, p.receiptId),
      eq(receiptPayments.transactionHash, p.transactionHash),
      eq(receiptPayments.status, status),
    );
  }

  private async setPayment(tx: Parameters<Parameters<Db['transaction']>[0]>[0], p: Payment, set: { status: Payment['status']; reason: string }, now: number) {
    const rows = await tx
      .update(receiptPayments)
      .set({ ...set, updatedAt: now })
      .where(this.samePayment(p, p.status))
      .returning({ id: receiptPayments.receiptId });
    return rows.length > 0;
  }
}
