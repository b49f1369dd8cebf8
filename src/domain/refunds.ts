/**
 * Refunds: each is logged as an entry and in the receipt's status history; the refunds of a
 * receipt never add up to more than its total, and a full refund leaves it `refunded`.
 */
import { and, eq, sum } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { receipts, receiptStatusHistory, refunds, type RefundItem } from '../db/schema.ts';
import { newId } from '../gateway/keys.ts';
import { enqueueEvent } from '../webhooks/outbox.ts';
import { InvalidInput, NotFound } from './errors.ts';
import { centsToUsd, usdToCents } from './money.ts';
import { isAddress, normalizeWallet } from './wallet.ts';

export interface RefundInput {
  receiptId?: unknown;
  wallet?: unknown;
  buyer?: unknown;
  usd?: unknown;
  items?: unknown;
  txHash?: unknown;
}

export interface RefundResult {
  refundId: string;
  refundedUsd: number;
  status: string;
}

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;

/** Checks a refund body in the spec's order of error codes. */
export function parseRefund(input: RefundInput) {
  const { receiptId, wallet, buyer, usd, items, txHash } = input;
  if (typeof receiptId !== 'string' || receiptId.trim() === '') {
    throw new InvalidInput('receiptId is required', 'missing_receipt_id');
  }
  if (!isAddress(wallet)) throw new InvalidInput('wallet must be a 0x-prefixed 40-hex address', 'invalid_wallet');
  if (!isAddress(buyer)) throw new InvalidInput('buyer must be a 0x-prefixed 40-hex address', 'invalid_buyer');
  let cents: bigint;
  try {
    cents = usdToCents(usd as number, 'usd');
  } catch (err) {
    throw new InvalidInput(err instanceof Error ? err.message : 'usd is invalid', 'invalid_usd');
  }
  if (cents === 0n) throw new InvalidInput('usd must be greater than zero', 'invalid_usd');
  const parsedItems: RefundItem[] = [];
  if (items !== undefined) {
    if (!Array.isArray(items) || items.length > 200) throw new InvalidInput('items must be an array of at most 200 items');
    items.forEach((raw: unknown, i) => {
      const it = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
      if (typeof it.label !== 'string' || it.label.trim() === '' || it.label.length > 200) {
        throw new InvalidInput(`items[${i}].label must be 1-200 characters`);
      }
      const qty = it.qty ?? 1;
      if (typeof qty !== 'number' || !Number.isInteger(qty) || qty < 1) {
        throw new InvalidInput(`items[${i}].qty must be an integer >= 1`);
      }
      parsedItems.push({ label: it.label.trim(), priceCents: usdToCents(it.priceUsd as number, `items[${i}].priceUsd`).toString(), qty });
    });
  }
  if (txHash !== undefined && txHash !== null && (typeof txHash !== 'string' || !TX_HASH.test(txHash))) {
    throw new InvalidInput('txHash must be a 0x-prefixed 64-hex transaction hash');
  }
  return {
    receiptId,
    wallet: normalizeWallet(wallet),
    buyer: normalizeWallet(buyer),
    cents,
    items: parsedItems,
    txHash: typeof txHash === 'string' ? txHash.toLowerCase() : null,
  };
}

export async function refundReceipt(
  db: Db,
  p: ReturnType<typeof parseRefund> & { by: string },
  now = Date.now(),
): Promise<RefundResult> {
  return db.transaction(async (tx) => {
    const [receipt] = await tx
      .select()
      .from(receipts)
      .where(and(eq(receipts.wallet, p.wallet), eq(receipts.id, p.receiptId)))
      .for('update');
    if (receipt === undefined) throw new NotFound(`Receipt ${p.receiptId} not found`);
    const [done] = await tx
      .select({ total: sum(refunds.amountCents) })
      .from(refunds)
      .where(and(eq(refunds.wallet, p.wallet), eq(refunds.receiptId, p.receiptId)));
    const already = BigInt(done?.total ?? '0');
    if (already + p.cents > receipt.totalCents) {
      throw new InvalidInput(
        `Refunds would total ${centsToUsd(already + p.cents)}, more than the receipt's ${centsToUsd(receipt.totalCents)}` +
          ` (already refunded ${centsToUsd(already)})`,
        'invalid_usd',
      );
    }
    const refundId = newId('rfd');
    await tx.insert(refunds).values({
      wallet: p.wallet,
      id: refundId,
      receiptId: p.receiptId,
      buyer: p.buyer,
      amountCents: p.cents,
      items: p.items,
      txHash: p.txHash,
      createdBy: p.by,
      createdAt: now,
    });
    const full = already + p.cents === receipt.totalCents;
    const status = full ? 'refunded' : receipt.status;
    if (full) {
      await tx
        .update(receipts)
        .set({ status: 'refunded', updatedAt: now })
        .where(and(eq(receipts.wallet, p.wallet), eq(receipts.id, p.receiptId)));
    }
    await tx.insert(receiptStatusHistory).values({
      wallet: p.wallet,
      receiptId: p.receiptId,
      status: full ? 'refunded' : 'refund_partial',
      source: 'admin',
      note: `refund ${refundId}: ${centsToUsd(p.cents)} USD to ${p.buyer}${p.txHash ? ` in ${p.txHash}` : ''}`,
      at: now,
    });
    if (full) {
      // In the same transaction: the refund and its notification commit together.
      await enqueueEvent(
        tx,
        {
          wallet: p.wallet,
          type: 'receipt.refunded',
          dedupeKey: p.receiptId,
          data: {
            receiptId: p.receiptId,
            merchant: p.wallet,
            status: 'refunded',
            totalUsd: centsToUsd(receipt.totalCents),
            refundedUsd: centsToUsd(already + p.cents),
            currency: receipt.currency,
          },
        },
        now,
      );
    }
    return { refundId, refundedUsd: centsToUsd(already + p.cents), status };
  });
}

export async function listRefunds(db: Db, wallet: string, receiptId: string) {
  const rows = await db
    .select()
    .from(refunds)
    .where(and(eq(refunds.wallet, wallet), eq(refunds.receiptId, receiptId)))
    .orderBy(refunds.createdAt);
  return rows.map((r) => ({
    id: r.id,
    receiptId: r.receiptId,
    buyer: r.buyer,
    usd: centsToUsd(r.amountCents),
    items: r.items.map((i) => ({ label: i.label, priceUsd: centsToUsd(BigInt(i.priceCents)), qty: i.qty })),
    txHash: r.txHash,
    createdBy: r.createdBy,
    createdAt: r.createdAt,
  }));
}
