/**
 * POS terminal receipts: a keypad amount plus the tax line the service computes, for the signed-in
 * merchant. They start `generated` and are paid through the same payment page as any receipt.
 */
import { newId } from '../lib/ids.ts';
import type { Db } from '../db/client.ts';
import { InvalidInput, SplitRequired } from '../lib/errors.ts';
import { usdToCents } from '../lib/money.ts';
import { priceOrder, resolveTax } from './pricing.ts';
import type { ReceiptStore } from '../db/receipt-store.ts';
import { createdSaleView, expiryOf, findReceipt, newPayToken, type CreatedSale } from './receipts.ts';
import { getShopSettings } from './shop.ts';
import { getSplitConfig, isConfigured } from './splits.ts';
import { claimWrite } from '../db/write-claims.ts';
import { freshWrite, type Write } from './writes.ts';

export interface TerminalInput {
  amountUsd?: unknown;
  label?: unknown;
  currency?: unknown;
  jurisdictionCode?: unknown;
  taxRate?: unknown;
  taxComponents?: unknown;
}

/** The sale's receipt, as POST /api/receipts/terminal answers it. */
export type TerminalReceipt = CreatedSale;

function parseTerminal(input: TerminalInput) {
  let cents: bigint;
  try {
    cents = usdToCents(input.amountUsd as number, 'amountUsd');
  } catch (err) {
    throw new InvalidInput(err instanceof Error ? err.message : 'amountUsd is invalid', 'invalid_amount');
  }
  if (cents === 0n) throw new InvalidInput('amountUsd must be greater than zero', 'invalid_amount');
  const label = input.label === undefined ? 'Sale' : input.label;
  if (typeof label !== 'string' || label.trim() === '' || label.length > 200) {
    throw new InvalidInput('label must be 1-200 characters');
  }
  if (input.currency !== undefined && input.currency !== 'USD') {
    throw new InvalidInput('currency must be USD: receipts are priced in US dollars and paid in USDC');
  }
  if (input.jurisdictionCode !== undefined && (typeof input.jurisdictionCode !== 'string' || input.jurisdictionCode === '')) {
    throw new InvalidInput('jurisdictionCode must be a non-empty string');
  }
  if (input.taxRate !== undefined && typeof input.taxRate !== 'number') throw new InvalidInput('taxRate must be a number');
  if (
    input.taxComponents !== undefined &&
    (!Array.isArray(input.taxComponents) || !input.taxComponents.every((c) => typeof c === 'string' && c.length <= 64))
  ) {
    throw new InvalidInput('taxComponents must be an array of strings');
  }
  return {
    cents,
    label: label.trim(),
    tax: {
      jurisdictionCode: input.jurisdictionCode,
      taxRate: input.taxRate,
      taxComponents: input.taxComponents as string[] | undefined,
    },
  };
}

export async function createTerminalReceipt(
  { db, receipts }: { db: Db; receipts: ReceiptStore },
  siteUrl: string,
  wallet: string,
  input: TerminalInput,
  ttlMinutes: number,
  now = Date.now(),
  write: Write = freshWrite(),
): Promise<TerminalReceipt> {
  const parsed = parseTerminal(input);
  if (!isConfigured(await getSplitConfig(db, wallet))) throw new SplitRequired();
  const shop = await getShopSettings(db, wallet);
  const tax = resolveTax(parsed.tax, shop.taxJurisdictions);
  const priced = priceOrder(
    [{ item: { sku: 'terminal', name: parsed.label, priceCents: parsed.cents, taxable: true }, qty: 1 }],
    tax,
    0,
  );
  // The keypad amount is one sale: show it without a quantity.
  const lineItems = priced.lineItems.map(({ sku: _sku, qty: _qty, ...rest }) => rest);
  const id = newId('pos', 9);
  const payToken = newPayToken();
  const row = await db.transaction(async (tx) => {
    // The same write again (a retry whose first answer was lost) answers with the receipt it made.
    const claim = await claimWrite(tx, write, { wallet, kind: 'terminal', ref: id }, now);
    if (!claim.fresh) return findReceipt(tx, wallet, claim.ref ?? '');
    return receipts.insertOne(tx, {
      wallet,
      id,
      source: 'terminal',
      status: 'generated',
      lineItems,
      totalCents: priced.totalCents,
      requestHash: id,
      payToken,
      createdAt: now,
      expiresAt: expiryOf(now, undefined, ttlMinutes),
      jurisdictionCode: tax.jurisdictionCode,
      taxRatePpm: tax.applies ? Number(tax.ratePpm) : null,
      taxComponents: tax.components,
      writeId: write.id,
    });
  });
  return createdSaleView(row, siteUrl);
}
