/**
 * Orders: the rules of one order (items present, split configured, platform recipient set, tax
 * known, items known, total above zero, stock available, in that order), and the service that
 * hands each checked order to the app's OrderStore (src/db/order-store.ts), which places it with
 * the others of its batch: the write-id claim, the receipt and the stock taken in one transaction,
 * or in one statement when no item is limited. The store calls this module's rules for each order
 * (BatchOrder.setUp and the decision it returns); it keeps no rule of its own.
 */
import type { ItemRef, ItemRow, MerchantSetup } from '../db/order-batch.ts';
import type { BatchOrder, BatchStock, OrderDecision, OrderStore } from '../db/order-store.ts';
import { newId } from '../lib/ids.ts';
import { Conflict, InvalidInput, SplitRequired } from '../lib/errors.ts';
import { UNLIMITED } from './inventory.ts';
import { rateToPpm } from '../lib/money.ts';
import { mergeLines, priceOrder, resolveTax, type OrderLine, type ResolvedTax } from './pricing.ts';
import { createdSaleView, expiryOf, MAX_LINE_ITEMS, newPayToken, receiptRequestHash, type CreatedSale, type InsertReceiptParams } from './receipts.ts';
import { parseMetadata, type Metadata } from './metadata.ts';
import { assertReturnOriginAllowed, parseReturnUrl, type ReturnUrlPolicy } from './return-url.ts';
import { brandOf, type ShopSettings } from './shop.ts';
import { freshWrite, type Write } from './writes.ts';

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
  /** The shop's own fields, as sent (checked by parseMetadata). */
  metadata?: unknown;
  /** Where the payment page links back to (checked by parseReturnUrl, and against the shop's origins). */
  returnUrl?: unknown;
}

export interface OrderContext {
  siteUrl: string;
  /** Brand shown when the shop has no name of its own. */
  fallbackBrand: string;
  platformRecipientAddress: string | undefined;
  /** Minutes an order's receipt may be paid in (RECEIPT_TTL_MINUTES); then its stock returns. */
  receiptTtlMinutes: number;
}

/** The order's receipt, as POST /api/orders answers it: a created sale with the shop's brand. */
export interface OrderReceipt extends CreatedSale {
  brandName: string;
}

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

/** What an order's rules need besides what the store reads: its tax input and the server's setup. */
interface OrderTerms {
  wallet: string;
  refs: ItemRef[];
  tax: Pick<OrderInput, 'jurisdictionCode' | 'taxRate' | 'taxComponents'>;
  metadata: Metadata;
  returnUrl: string | null;
  platformRecipientSet: boolean;
  write: Write;
  receiptId: string;
  payToken: string;
  now: number;
  expiresAt: number;
}

/** The lines of an order, or inventory_item_not_found listing every ref not in the merchant's inventory. */
function resolveLines(o: OrderTerms, stock: BatchStock): OrderLine<ItemRow>[] {
  const missing: string[] = [];
  const lines = o.refs.flatMap((ref) => {
    const row = stock.item(o.wallet, ref);
    if (row === undefined) {
      missing.push(`${ref.by} ${ref.value}`);
      return [];
    }
    return [{ item: row, qty: ref.qty }];
  });
  if (missing.length > 0) throw new InvalidInput(`Not in inventory: ${missing.join(', ')}`, 'inventory_item_not_found');
  return lines;
}

/**
 * The stock every limited line takes from what the batch has left, all or nothing (out_of_stock).
 * Lines are checked in sku order, so the item named in out_of_stock is the one a lone order would name.
 */
function allocate(wallet: string, lines: OrderLine<ItemRow>[], stock: BatchStock): OrderDecision['takes'] {
  const limited = lines.filter((l) => l.item.stockQty !== UNLIMITED).sort((a, b) => (a.item.sku < b.item.sku ? -1 : 1));
  for (const { item, qty } of limited) {
    const have = stock.left(wallet, item.sku);
    if (have < qty) throw new Conflict(`Not enough stock of ${item.sku}: ${qty} wanted, ${Math.max(have, 0)} left`, 'out_of_stock');
  }
  return limited.map(({ item, qty }) => ({ sku: item.sku, qty }));
}

function receiptParams(o: OrderTerms, lines: OrderLine<ItemRow>[], tax: ResolvedTax, feeBps: number): InsertReceiptParams {
  const priced = priceOrder(lines, tax, feeBps);
  if (priced.totalCents === 0n) throw new InvalidInput('The order total must be greater than zero');
  return {
    wallet: o.wallet,
    id: o.receiptId,
    source: 'order',
    status: 'pending',
    lineItems: priced.lineItems,
    totalCents: priced.totalCents,
    requestHash: receiptRequestHash(o.receiptId, priced.lineItems, priced.totalCents, undefined, { metadata: o.metadata, returnUrl: o.returnUrl }),
    metadata: o.metadata,
    returnUrl: o.returnUrl,
    payToken: o.payToken,
    createdAt: o.now,
    expiresAt: o.expiresAt,
    jurisdictionCode: tax.jurisdictionCode,
    taxRatePpm: tax.applies ? Number(tax.ratePpm) : null,
    taxComponents: tax.components,
    writeId: o.write.id,
  };
}

/**
 * The order as its batch takes it. setUp: split configured, platform recipient set, tax known;
 * then, on the batch's items: items known, price (total above zero), stock.
 */
function batchOrder(o: OrderTerms): BatchOrder {
  return {
    wallet: o.wallet,
    refs: o.refs,
    write: o.write,
    receiptId: o.receiptId,
    now: o.now,
    setUp(merchant: MerchantSetup | undefined) {
      if (merchant === undefined || merchant.recipients === 0) throw new SplitRequired();
      if (!o.platformRecipientSet) {
        throw new InvalidInput('The platform recipient address is not configured: set PLATFORM_RECIPIENT_ADDRESS on the server', 'platform_recipient_not_configured');
      }
      const tax = resolveTax(o.tax, merchant.tax);
      if (o.returnUrl !== null) assertReturnOriginAllowed(o.returnUrl, merchant.origins);
      return (stock) => {
        const lines = mergeLines(resolveLines(o, stock));
        const receipt = receiptParams(o, lines, tax, merchant.feeBps);
        return { receipt, takes: allocate(o.wallet, lines, stock) };
      };
    },
  };
}

function shopOf(m: MerchantSetup): ShopSettings {
  return { name: m.name, processingFeeBps: m.feeBps, taxJurisdictions: m.tax, allowedEmbedOrigins: m.origins };
}

export interface OrderServiceOptions extends OrderContext {
  /** Whether a returnUrl may use http on localhost (the dev chain): src/domain/return-url.ts. */
  returnUrlPolicy?: ReturnUrlPolicy;
  /** The app's orders store, which places the orders in batches (src/db/order-store.ts). */
  orders: OrderStore;
}

/** Orders as the API creates them, built once per app (src/deps.ts) over its OrderStore. */
export class OrderService {
  constructor(private readonly o: OrderServiceOptions) {}

  /**
   * Creates an order. Checks run in the order the API documents: items present, split configured
   * (403 split_required), platform recipient set, tax known, items known, stock available (409
   * out_of_stock).
   */
  async create(p: { wallet: string; input: OrderInput; write?: Write; now?: number }): Promise<OrderReceipt> {
    const { wallet, input, write = freshWrite(), now = Date.now() } = p;
    const ctx = this.o;
    const refs = parseRefs(input.items);
    const metadata = parseMetadata(input.metadata);
    const returnUrl = parseReturnUrl(input.returnUrl, ctx.returnUrlPolicy ?? { allowLoopbackHttp: false });
    // A malformed rate is an input error, reported before anything about the merchant's setup.
    if (input.taxRate !== undefined) rateToPpm(input.taxRate, 'taxRate');
    const { row, merchant } = await ctx.orders.place(
      batchOrder({
        wallet,
        refs,
        tax: { jurisdictionCode: input.jurisdictionCode, taxRate: input.taxRate, taxComponents: input.taxComponents },
        metadata,
        returnUrl,
        platformRecipientSet: ctx.platformRecipientAddress !== undefined,
        write,
        receiptId: newId('ord'),
        payToken: newPayToken(),
        now,
        expiresAt: expiryOf(now, undefined, ctx.receiptTtlMinutes),
      }),
    );
    // Pending, also for a retry that finds its order paid since: the answer to the write, as first given.
    return { ...createdSaleView(row, ctx.siteUrl), status: 'pending', brandName: brandOf(shopOf(merchant), ctx.fallbackBrand) };
  }
}
