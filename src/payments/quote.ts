/**
 * What a buyer must send to pay a receipt: the token, the receipt's own payment address, and the
 * amount, what has arrived and what is still due, in token base units (USDC: 6 decimals, one cent
 * = 10,000 units).
 */
import { and, eq } from 'drizzle-orm';
import type { ChainDeps } from '../chain/client.ts';
import type { Tx } from '../db/client.ts';
import { receipts } from '../db/schema.ts';
import { NotFound } from '../lib/errors.ts';
import { getSplitConfig } from '../domain/splits.ts';
import { payAddressOf, splitOfReceipt } from './pay-address.ts';
import { amountOf } from './settle.ts';
import { dueOf } from '../domain/receipt-states.ts';

export interface PaymentQuote {
  chainId: number;
  tokenAddress: string;
  tokenSymbol: string;
  tokenDecimals: number;
  /** The receipt's payment address; null while the merchant has no split contract (nothing to pay into yet). */
  payTo: string | null;
  /** The merchant's split contract, where the money is swept. */
  splitAddress: string | null;
  /** Token base units, as decimal strings. */
  amount: string;
  paid: string;
  due: string;
}

export type ReceiptRow = typeof receipts.$inferSelect;

/**
 * The receipt's payment address: stored once known, else derived from the split version in effect
 * when it was created (the chain worker stores that same address later).
 */
export async function payToOf(db: Tx, row: ReceiptRow, chain: ChainDeps): Promise<{ payTo: string | null; splitAddress: string | null }> {
  const split = await splitOfReceipt(db, row);
  if (row.payAddress !== null) return { payTo: row.payAddress, splitAddress: split ?? (await getSplitConfig(db, row.wallet)).address };
  if (split === null || chain.paymentFactory === undefined) return { payTo: null, splitAddress: split };
  return { payTo: payAddressOf({ factory: chain.paymentFactory, split, wallet: row.wallet, receiptId: row.id }), splitAddress: split };
}

export async function quoteFor(db: Tx, row: ReceiptRow, chain: ChainDeps): Promise<PaymentQuote> {
  const { payTo, splitAddress } = await payToOf(db, row, chain);
  const amount = amountOf(row, chain.usdc.decimals);
  const paid = BigInt(row.paidUnits);
  return {
    chainId: chain.chainId,
    tokenAddress: chain.usdc.address.toLowerCase(),
    tokenSymbol: chain.usdc.symbol,
    tokenDecimals: chain.usdc.decimals,
    payTo,
    splitAddress,
    amount: amount.toString(),
    paid: paid.toString(),
    due: dueOf(amount, paid).toString(),
  };
}

/** The receipt a payment URL names: its id and its unguessable token must both match. */
export async function receiptByPayToken(db: Tx, id: string, token: string | undefined): Promise<ReceiptRow> {
  const notFound = () => new NotFound('No receipt at this payment URL');
  if (token === undefined || !/^[A-Za-z0-9_-]{16,64}$/.test(token)) throw notFound();
  const [row] = await db.select().from(receipts).where(and(eq(receipts.payToken, token), eq(receipts.id, id)));
  if (row === undefined) throw notFound();
  return row;
}
