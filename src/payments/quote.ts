/**
 * What a buyer must send to pay a receipt: the token, the merchant's split contract and the
 * amount in token base units (USDC: 6 decimals, one cent = 10,000 units).
 */
import { and, eq } from 'drizzle-orm';
import type { ChainDeps } from '../chain/client.ts';
import type { Tx } from '../db/client.ts';
import { receipts } from '../db/schema.ts';
import { NotFound } from '../domain/errors.ts';
import { centsToTokenUnits } from '../domain/money.ts';
import { getSplitConfig } from '../domain/splits.ts';

export interface PaymentQuote {
  chainId: number;
  tokenAddress: string;
  tokenSymbol: string;
  tokenDecimals: number;
  /** null while the merchant's split contract is not deployed: the receipt cannot be paid yet. */
  splitAddress: string | null;
  /** Token base units, as a decimal string. */
  amount: string;
}

export type ReceiptRow = typeof receipts.$inferSelect;

export function amountUnits(row: Pick<ReceiptRow, 'totalCents'>, decimals: number): bigint {
  return centsToTokenUnits(row.totalCents, decimals);
}

export async function quoteFor(db: Tx, row: ReceiptRow, chain: ChainDeps): Promise<PaymentQuote> {
  const split = await getSplitConfig(db, row.wallet);
  return {
    chainId: chain.chainId,
    tokenAddress: chain.usdc.address.toLowerCase(),
    tokenSymbol: chain.usdc.symbol,
    tokenDecimals: chain.usdc.decimals,
    splitAddress: split.address,
    amount: amountUnits(row, chain.usdc.decimals).toString(),
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
