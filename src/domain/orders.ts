/**
 * Orders: inventory lines priced by the service, stock reserved, and a pending receipt created,
 * all in one transaction.
 *
 * Orders are not written to the local journal while the database is away (unlike receipt writes):
 * an order must reserve stock, and stock cannot be reserved without the database. The connection
 * error propagates and the error handler answers 503 database_unavailable; nothing is acknowledged
 * that was not stored.
 */
import { and, eq, gte, inArray, or, sql, type SQL } from 'drizzle-orm';
import type { Db, Tx } from '../db/client.ts';
import { inventoryItems } from '../db/schema.ts';
import { newId } from '../gateway/keys.ts';
import { Conflict, InvalidInput, SplitRequired } from './errors.ts';
import { type InventoryRow, UNLIMITED } from './inventory.ts';
import { centsToUsd, ppmToRate, rateToPpm } from './money.ts';
import { mergeLines, priceOrder, resolveTax, type OrderLine, type PricedItem } from './pricing.ts';
import {
  expiryOf,
  insertReceipt,
  lineItemViews,
  MAX_LINE_ITEMS,
  newPayToken,
  paymentUrl,
  receiptRequestHash,
  type LineItemView,
} from './receipts.ts';
import { getShopSettings, brandOf } from './shop.ts';
import { getSplitConfig, isConfigured } from './splits.ts';

export interface OrderItemInput {
  sku?: string | undefined;
  id?: string | undefined;
  qty: number;
}

export interface OrderInput {
  items?: readonly OrderItemInput[] | null | undefined;
  jurisdictionCode?: string | undefined;
  taxRate?: number | undefined;
  taxComponents?: readonly string[] | undefined;
}

export interface OrderContext {
  siteUrl: string;
  /** Brand shown when the shop has no name of its own. */
  fallbackBrand: string;
  platformRecipientAddress: string | undefined;
  /** Minutes an order's receipt may be paid in (RECEIPT_TTL_MINUTES); then its stock returns. */
  receiptTtlMinutes: number;
}

export interface OrderReceipt {
  receiptId: string;
  totalUsd: number;
  currency: string;
  lineItems: LineItemView[];
  createdAt: number;
  status: string;
  brandName: string;
  paymentUrl: string;
  jurisdictionCode: string | null;
  taxRate: number;
  taxComponents: string[];
}

type ItemRef = { by: 'sku' | 'id'; value: string; qty: number };

function parseRefs(items: OrderInput['items']): ItemRef[] {
  if (items === undefined || items === null || items.length === 0) {
    throw new InvalidInput('items must hold at least one {sku, qty}', 'items_required');
  }
  if (items.length > MAX_LINE_ITEMS) throw new InvalidInput(`items may hold at most ${MAX_LINE_ITEMS} entries`);
  return items.map((item, i): ItemRef => {
    if (!Number.isInteger(item.qty) || item.qty < 1) throw new InvalidInput(`items[${i}].qty must be an integer >= 1`);
    if (typeof item.sku === 'string' && item.id === undefined) return { by: 'sku', value: item.sku, qty: item.qty };
    if (typeof item.id === 'string' && item.sku === undefined) return { by: 'id', value: item.id, qty: item.qty };
    throw new InvalidInput(`items[${i}] must name exactly one of sku or id`);
  });
}

/** Looks up every referenced item of this merchant; another merchant's items are never found. */
async function resolveItems(tx: Tx, wallet: string, refs: ItemRef[]): Promise<OrderLine<InventoryRow & PricedItem>[]> {
  const skus = refs.filter((r) => r.by === 'sku').map((r) => r.value);
  const ids = refs.filter((r) => r.by === 'id').map((r) => r.value);
  const match: SQL[] = [];
  if (skus.length > 0) match.push(inArray(inventoryItems.sku, [...new Set(skus)]));
  if (ids.length > 0) match.push(inArray(inventoryItems.id, [...new Set(ids)]));
  const rows = await tx
    .select()
    .from(inventoryItems)
    .where(and(eq(inventoryItems.wallet, wallet), or(...match)));
  const bySku = new Map(rows.map((r) => [r.sku, r]));
  const byId = new Map(rows.map((r) => [r.id, r]));
  const missing: string[] = [];
  const lines = refs.flatMap((ref) => {
    const row = ref.by === 'sku' ? bySku.get(ref.value) : byId.get(ref.value);
    if (row === undefined) {
      missing.push(`${ref.by} ${ref.value}`);
      return [];
    }
    return [{ item: row, qty: ref.qty }];
  });
  if (missing.length > 0) {
    throw new InvalidInput(`Not in inventory: ${missing.join(', ')}`, 'inventory_item_not_found');
  }
  return lines;
}

/**
 * Takes stock for every limited item. The UPDATE only matches while enough stock remains, and it
 * locks the row, so concurrent orders queue on it and can never oversell. Rows are locked in sku
 * order so two orders naming the same items in different orders cannot deadlock.
 */
async function reserveStock(tx: Tx, wallet: string, lines: OrderLine<InventoryRow & PricedItem>[], now: number): Promise<void> {
  const limited = lines.filter((l) => l.item.stockQty !== UNLIMITED).sort((a, b) => (a.item.sku < b.item.sku ? -1 : 1));
  for (const { item, qty } of limited) {
    const taken = await tx
      .update(inventoryItems)
      .set({ stockQty: sql`${inventoryItems.stockQty} - ${qty}`, updatedAt: now })
      .where(and(eq(inventoryItems.wallet, wallet), eq(inventoryItems.sku, item.sku), gte(inventoryItems.stockQty, qty)))
      .returning({ stockQty: inventoryItems.stockQty });
    if (taken.length === 1) continue;
    // The merchant may have made the item unlimited since it was read; that is not a shortage.
    const [current] = await tx
      .select({ stockQty: inventoryItems.stockQty })
      .from(inventoryItems)
      .where(and(eq(inventoryItems.wallet, wallet), eq(inventoryItems.sku, item.sku)));
    if (current?.stockQty === UNLIMITED) continue;
    throw new Conflict(`Not enough stock of ${item.sku}: ${qty} wanted, ${Math.max(current?.stockQty ?? 0, 0)} left`, 'out_of_stock');
  }
}

/**
 * Creates an order. Checks run in the order the API documents: items present, split configured
 * (403 split_required), platform recipient set, items known, stock available (409 out_of_stock).
 */
export async function createOrder(db: Db, ctx: OrderContext, wallet: string, input: OrderInput, now = Date.now()): Promise<OrderReceipt> {
  const refs = parseRefs(input.items);
  // A malformed rate is an input error, reported before anything about the merchant's setup.
  if (input.taxRate !== undefined) rateToPpm(input.taxRate, 'taxRate');
  if (!isConfigured(await getSplitConfig(db, wallet))) throw new SplitRequired();
  if (ctx.platformRecipientAddress === undefined) {
    throw new InvalidInput('The platform recipient address is not configured: set PLATFORM_RECIPIENT_ADDRESS on the server', 'platform_recipient_not_configured');
  }
  const shop = await getShopSettings(db, wallet);
  const tax = resolveTax(input, shop.taxJurisdictions);
  const receiptId = newId('ord');
  const payToken = newPayToken();

  const { row, priced } = await db.transaction(async (tx) => {
    const lines = mergeLines(await resolveItems(tx, wallet, refs));
    const priced = priceOrder(lines, tax, shop.processingFeeBps);
    if (priced.totalCents === 0n) throw new InvalidInput('The order total must be greater than zero');
    await reserveStock(tx, wallet, lines, now);
    const row = await insertReceipt(tx, {
      wallet,
      id: receiptId,
      source: 'order',
      status: 'pending',
      lineItems: priced.lineItems,
      totalCents: priced.totalCents,
      requestHash: receiptRequestHash(receiptId, priced.lineItems, priced.totalCents),
      payToken,
      createdAt: now,
      expiresAt: expiryOf(now, undefined, ctx.receiptTtlMinutes),
      jurisdictionCode: tax.jurisdictionCode,
      taxRatePpm: tax.applies ? Number(tax.ratePpm) : null,
      taxComponents: tax.components,
    });
    return { row, priced };
  });

  return {
    receiptId: row.id,
    totalUsd: centsToUsd(priced.totalCents),
    currency: row.currency,
    lineItems: lineItemViews(priced.lineItems),
    createdAt: row.createdAt,
    status: row.status,
    brandName: brandOf(shop, ctx.fallbackBrand),
    paymentUrl: paymentUrl(ctx.siteUrl, row.id, row.payToken),
    jurisdictionCode: tax.jurisdictionCode,
    taxRate: ppmToRate(tax.ratePpm),
    taxComponents: tax.components,
  };
}
