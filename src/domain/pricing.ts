/**
 * Order pricing: pure functions from inventory rows to exact line items. Every amount is integer
 * cents; tax and the processing fee are each rounded once, half up, on the amount they apply to
 * (never per line, so a receipt's tax does not drift with the number of lines).
 */
import type { StoredLineItem, TaxJurisdiction } from '../db/schema.ts';
import { InvalidInput } from '../lib/errors.ts';
import { bpsOf, MAX_CENTS, rateToPpm, taxCents } from '../lib/money.ts';

/** Most units of one sku in one order, after duplicates are merged. */
import { MAX_ORDER_QTY } from '../contract/orders.ts';
export { MAX_ORDER_QTY };

export interface PricedItem {
  sku: string;
  name: string;
  priceCents: bigint;
  taxable: boolean;
}

export interface OrderLine<T extends PricedItem = PricedItem> {
  item: T;
  qty: number;
}

export interface TaxInput {
  taxRate?: number | undefined;
  jurisdictionCode?: string | undefined;
  taxComponents?: readonly string[] | undefined;
}

export interface ResolvedTax {
  ratePpm: bigint;
  /** null when the order named no jurisdiction. */
  jurisdictionCode: string | null;
  components: string[];
  /** False when the order named neither a rate nor a jurisdiction: no tax applies. */
  applies: boolean;
}

export interface PricedOrder {
  lineItems: StoredLineItem[];
  subtotalCents: bigint;
  taxCents: bigint;
  feeCents: bigint;
  totalCents: bigint;
}

/** Jurisdiction codes compare without regard to case: "ca-la" finds "CA-LA". */
export function findJurisdiction(table: readonly TaxJurisdiction[], code: string): TaxJurisdiction | undefined {
  const wanted = code.toLowerCase();
  return table.find((j) => j.code.toLowerCase() === wanted);
}

/**
 * The tax rate of an order: an explicit `taxRate` wins; otherwise the rate of `jurisdictionCode`
 * in the shop's table. Components come from the order, else from the jurisdiction.
 */
export function resolveTax(input: TaxInput, table: readonly TaxJurisdiction[]): ResolvedTax {
  const code = input.jurisdictionCode ?? null;
  const given = input.taxComponents === undefined ? undefined : [...input.taxComponents];
  if (input.taxRate !== undefined) {
    const ratePpm = rateToPpm(input.taxRate, 'taxRate');
    const known = code === null ? undefined : findJurisdiction(table, code);
    return { ratePpm, jurisdictionCode: code, components: given ?? known?.components ?? [], applies: true };
  }
  if (code === null) return { ratePpm: 0n, jurisdictionCode: null, components: given ?? [], applies: false };
  const j = findJurisdiction(table, code);
  if (j === undefined) {
    throw new InvalidInput(`jurisdictionCode ${code} is not in the shop's tax table; send taxRate or configure the jurisdiction`);
  }
  return { ratePpm: BigInt(j.ratePpm), jurisdictionCode: j.code, components: given ?? [...j.components], applies: true };
}

/** Lines naming the same sku become one line holding the summed quantity, in first-seen order. */
export function mergeLines<T extends PricedItem>(lines: readonly OrderLine<T>[]): OrderLine<T>[] {
  const bySku = new Map<string, OrderLine<T>>();
  for (const line of lines) {
    const seen = bySku.get(line.item.sku);
    if (seen === undefined) bySku.set(line.item.sku, { item: line.item, qty: line.qty });
    else seen.qty += line.qty;
  }
  const merged = [...bySku.values()];
  for (const line of merged) {
    if (!Number.isInteger(line.qty) || line.qty < 1 || line.qty > MAX_ORDER_QTY) {
      throw new InvalidInput(`qty of ${line.item.sku} must be an integer from 1 to ${MAX_ORDER_QTY} (duplicates are summed)`);
    }
  }
  return merged;
}

export function taxLabel(jurisdictionCode: string | null): string {
  return jurisdictionCode === null ? 'Tax' : `Tax (${jurisdictionCode})`;
}

export const FEE_LABEL = 'Processing fee';

/**
 * Prices an order: one line per sku (unit price × qty), then a tax line on the taxable lines,
 * then a processing fee line on subtotal + tax. A tax or fee line that comes to zero cents is
 * left out rather than shown as 0.00.
 */
export function priceOrder(
  lines: readonly OrderLine[],
  rate: Pick<ResolvedTax, 'ratePpm' | 'jurisdictionCode'>,
  processingFeeBps: number,
): PricedOrder {
  if (lines.length === 0) throw new InvalidInput('An order needs at least one item', 'items_required');
  if (!Number.isInteger(processingFeeBps) || processingFeeBps < 0 || processingFeeBps > 10_000) {
    throw new RangeError('processingFeeBps must be an integer from 0 to 10000');
  }
  const merged = mergeLines(lines);
  let subtotal = 0n;
  let taxable = 0n;
  const lineItems: StoredLineItem[] = merged.map(({ item, qty }) => {
    const amount = item.priceCents * BigInt(qty);
    subtotal += amount;
    if (item.taxable) taxable += amount;
    return { label: item.name, priceCents: item.priceCents.toString(), qty, sku: item.sku, kind: 'item' };
  });
  const tax = taxCents(taxable, rate.ratePpm);
  if (tax > 0n) lineItems.push({ label: taxLabel(rate.jurisdictionCode), priceCents: tax.toString(), kind: 'tax' });
  const fee = bpsOf(subtotal + tax, processingFeeBps);
  if (fee > 0n) lineItems.push({ label: FEE_LABEL, priceCents: fee.toString(), kind: 'fee' });
  const total = subtotal + tax + fee;
  if (total > MAX_CENTS) throw new InvalidInput('The order total is too large');
  return { lineItems, subtotalCents: subtotal, taxCents: tax, feeCents: fee, totalCents: total };
}
