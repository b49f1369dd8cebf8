/**
 * Orders: inventory lines priced by the service, stock reserved, and a pending receipt created,
 * all in one transaction.
 *
 * Orders that arrive together share that transaction (a group commit, as receipt creations share a
 * statement; GroupCommit in src/db/batch.ts, the statements in src/db/order-batch.ts): one
 * statement claims every write id and reads the merchants' split and shop settings and the items;
 * one inserts every receipt; one takes the stock of every limited item and releases the claims of
 * refused orders; then one COMMIT, whatever the number of orders. A batch whose items are all
 * unlimited needs no transaction at all (placeWithoutTransaction): one statement reads, and one
 * statement, atomic on its own, claims the write ids and inserts the receipts of the orders whose
 * claims it made. A batch that names an item last read with limited stock goes to the transaction
 * at once (LimitedItems). Each order is still judged on its own, in the documented check order, and
 * one order's refusal is not another's: a refused order takes no stock, stores no receipt and
 * leaves its write id unclaimed, as if its own transaction had rolled back.
 *
 * Stock is never oversold: the update that takes it locks the items in (wallet, sku) order (so two
 * batches cannot deadlock) and requires the stock it takes, on the row as it is under the lock.
 * The orders are judged on the stock as read, which is faster than locking first; when that stock
 * looks short, the items are locked and read again before any order is refused out_of_stock, and
 * when it moved before the update (another instance sold some), the batch rolls back and runs
 * again with the items locked from the start. Within a batch the stock goes to the orders in the
 * order they arrived.
 *
 * Orders are not written to the local journal while the database is away (unlike receipt writes):
 * an order must reserve stock, and stock cannot be reserved without the database. The connection
 * error propagates and the error handler answers 503 database_unavailable; nothing is acknowledged
 * that was not stored.
 */
import { GroupCommit, type Settled } from '../db/batch.ts';
import { isConnectionError, isDbDown, type Db } from '../db/client.ts';
import { itemKey, lockStock, readBatch, readUnclaimed, StockMoved, writeStock, type BatchRead, type ItemRef, type ItemRow, type MerchantSetup, type Take } from '../db/order-batch.ts';
import { perDatabase } from '../db/prepared.ts';
import { insertClaimedReceipts } from '../db/receipt-store.ts';
import type { receipts } from '../db/schema.ts';
import { newId } from './ids.ts';
import { CommitOutcomeUnknown, Conflict, InvalidInput, SplitRequired } from './errors.ts';
import { UNLIMITED } from './inventory.ts';
import { rateToPpm } from './money.ts';
import { mergeLines, priceOrder, resolveTax, type OrderLine, type ResolvedTax } from './pricing.ts';
import {
  createdSaleView,
  expiryOf,
  findReceipt,
  insertReceipts,
  MAX_LINE_ITEMS,
  newPayToken,
  receiptRequestHash,
  type CreatedSale,
  type InsertReceiptParams,
} from './receipts.ts';
import { brandOf, type ShopSettings } from './shop.ts';
import { claimWrite, freshWrite, type Write } from './writes.ts';

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

/** The order's receipt, as POST /api/orders answers it: a created sale with the shop's brand. */
export interface OrderReceipt extends CreatedSale {
  brandName: string;
}

type ReceiptRow = typeof receipts.$inferSelect;

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

/** An order checked as far as it can be without the database, waiting for its batch. */
interface PendingOrder {
  wallet: string;
  refs: ItemRef[];
  tax: Pick<OrderInput, 'jurisdictionCode' | 'taxRate' | 'taxComponents'>;
  platformRecipientSet: boolean;
  write: Write;
  receiptId: string;
  payToken: string;
  now: number;
  expiresAt: number;
}

interface PlacedOrder {
  row: ReceiptRow;
  shop: ShopSettings;
}

// ---- Judging each order of a batch, in the documented check order. ----

/** The lines of an order, or inventory_item_not_found listing every ref not in the merchant's inventory. */
function resolveLines(o: PendingOrder, bySku: Map<string, ItemRow>, byId: Map<string, ItemRow>): OrderLine<ItemRow>[] {
  const missing: string[] = [];
  const lines = o.refs.flatMap((ref) => {
    const row = (ref.by === 'sku' ? bySku : byId).get(itemKey(o.wallet, ref.value));
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
 * Takes stock for every limited line from what the batch has left, all or nothing. Lines are
 * checked in sku order, so the item named in out_of_stock is the one a lone order would name.
 */
function allocate(wallet: string, lines: OrderLine<ItemRow>[], left: Map<string, number>): void {
  const limited = lines.filter((l) => l.item.stockQty !== UNLIMITED).sort((a, b) => (a.item.sku < b.item.sku ? -1 : 1));
  for (const { item, qty } of limited) {
    const have = left.get(itemKey(wallet, item.sku)) ?? 0;
    if (have < qty) throw new Conflict(`Not enough stock of ${item.sku}: ${qty} wanted, ${Math.max(have, 0)} left`, 'out_of_stock');
  }
  for (const { item, qty } of limited) left.set(itemKey(wallet, item.sku), left.get(itemKey(wallet, item.sku))! - qty);
}

function receiptParams(o: PendingOrder, lines: OrderLine<ItemRow>[], tax: ResolvedTax, feeBps: number): InsertReceiptParams {
  const priced = priceOrder(lines, tax, feeBps);
  if (priced.totalCents === 0n) throw new InvalidInput('The order total must be greater than zero');
  return {
    wallet: o.wallet,
    id: o.receiptId,
    source: 'order',
    status: 'pending',
    lineItems: priced.lineItems,
    totalCents: priced.totalCents,
    requestHash: receiptRequestHash(o.receiptId, priced.lineItems, priced.totalCents),
    payToken: o.payToken,
    createdAt: o.now,
    expiresAt: o.expiresAt,
    jurisdictionCode: tax.jurisdictionCode,
    taxRatePpm: tax.applies ? Number(tax.ratePpm) : null,
    taxComponents: tax.components,
    writeId: o.write.id,
  };
}

const refused = (error: unknown): Settled<never> => ({ ok: false, error });

function shopOf(m: MerchantSetup): ShopSettings {
  return { name: m.name, processingFeeBps: m.feeBps, taxJurisdictions: m.tax, allowedEmbedOrigins: m.origins };
}

type Judged = { index: number; params: InsertReceiptParams; takes: Take[] } | { index: number; error: unknown };

/** Items, quantities, price and stock of each fresh order, in arrival order: the stock goes to the first. */
function judge(orders: PendingOrder[], placing: number[], taxes: ResolvedTax[], read: Pick<BatchRead, 'items' | 'merchants'>): Judged[] {
  const bySku = new Map(read.items.map((r) => [itemKey(r.wallet, r.sku), r]));
  const byId = new Map(read.items.map((r) => [itemKey(r.wallet, r.id), r]));
  const left = new Map(read.items.flatMap((r) => (r.stockQty === UNLIMITED ? [] : [[itemKey(r.wallet, r.sku), r.stockQty] as const])));
  return placing.map((index): Judged => {
    const o = orders[index]!;
    try {
      const lines = mergeLines(resolveLines(o, bySku, byId));
      const params = receiptParams(o, lines, taxes[index]!, read.merchants.get(o.wallet)!.feeBps);
      allocate(o.wallet, lines, left);
      const takes = lines.filter((l) => l.item.stockQty !== UNLIMITED).map((l) => ({ wallet: o.wallet, sku: l.item.sku, qty: l.qty, at: o.now }));
      return { index, params, takes };
    } catch (error) {
      return { index, error };
    }
  });
}

/** Every order's reservation of each item, summed: one update per item for the whole batch. */
function sumTakes(judged: Judged[]): Take[] {
  const sums = new Map<string, Take>();
  for (const j of judged) {
    if (!('takes' in j)) continue;
    for (const t of j.takes) {
      const key = itemKey(t.wallet, t.sku);
      const sum = sums.get(key);
      if (sum === undefined) sums.set(key, { ...t });
      else {
        sum.qty += t.qty;
        sum.at = Math.max(sum.at, t.at);
      }
    }
  }
  return [...sums.values()];
}

/**
 * The items last read with limited stock, so that a batch naming one goes straight to the
 * transaction that taking stock needs, instead of first reading without one only to find that it
 * needs it. A hint for choosing the path, never for judging an order: both paths are right for
 * any item, and every batch's read corrects what it names. Held per database handle; when it grows
 * past `max` entries it starts again empty.
 */
export class LimitedItems {
  readonly #keys = new Set<string>();

  constructor(private readonly max = 10_000) {}

  /** Notes each item as read: limited or not, by its sku and by its id. */
  learn(items: readonly ItemRow[]): void {
    for (const item of items) {
      for (const key of [`${item.wallet} sku ${item.sku}`, `${item.wallet} id ${item.id}`]) {
        if (item.stockQty === UNLIMITED) this.#keys.delete(key);
        else this.#keys.add(key);
      }
    }
    if (this.#keys.size > this.max) this.#keys.clear();
  }

  /** Whether an order of the batch names an item last read with limited stock. */
  named(orders: readonly Pick<PendingOrder, 'wallet' | 'refs'>[]): boolean {
    return orders.some((o) => o.refs.some((r) => this.#keys.has(`${o.wallet} ${r.by} ${r.value}`)));
  }
}

/**
 * The checks of each order that come before its items: split configured, platform recipient set,
 * tax known. `refuse` gets the orders that fail; returns the others' indices and their taxes.
 */
function checkSetup(orders: PendingOrder[], read: Pick<BatchRead, 'merchants'>, refuse: (i: number, err: unknown) => void): { taxes: ResolvedTax[]; passed: number[] } {
  const taxes: ResolvedTax[] = [];
  const passed: number[] = [];
  orders.forEach((o, i) => {
    try {
      const merchant = read.merchants.get(o.wallet);
      if (merchant === undefined || merchant.recipients === 0) throw new SplitRequired();
      if (!o.platformRecipientSet) {
        throw new InvalidInput('The platform recipient address is not configured: set PLATFORM_RECIPIENT_ADDRESS on the server', 'platform_recipient_not_configured');
      }
      taxes[i] = resolveTax(o.tax, merchant.tax);
      passed.push(i);
    } catch (err) {
      refuse(i, err);
    }
  });
  return { taxes, passed };
}

/**
 * A batch without a transaction, when it can go so: the settings and items read on their own,
 * each order judged on them, and the placed orders' write-id claims, receipts and history entries
 * written by one statement, atomic on its own (insertClaimedReceipts). Two round trips, no BEGIN
 * or COMMIT. Null when the batch needs placeBatch's transaction: an order names an item of
 * limited stock (taking stock locks the item), or a write id is already held (a retry). An order
 * whose claim another write took in the meantime is placed by placeBatch, which tells a retry
 * from a conflict.
 */
async function placeWithoutTransaction(db: Db, orders: PendingOrder[], limited: LimitedItems): Promise<Settled<PlacedOrder>[] | null> {
  const read = await readUnclaimed(db, orders);
  limited.learn(read.items);
  if (orders.some((o) => read.held.has(o.write.id)) || read.items.some((i) => i.stockQty !== UNLIMITED)) return null;
  const outcomes: (Settled<PlacedOrder> | undefined)[] = orders.map(() => undefined);
  const { taxes, passed } = checkSetup(orders, read, (i, err) => (outcomes[i] = refused(err)));
  const placed: { index: number; params: InsertReceiptParams }[] = [];
  for (const j of judge(orders, passed, taxes, read)) {
    if ('params' in j) placed.push(j);
    else outcomes[j.index] = refused(j.error);
  }
  if (placed.length > 0) {
    let rows: ReceiptRow[];
    try {
      rows = await insertClaimedReceipts(db, 'order', placed.map((j) => ({ params: j.params, write: orders[j.index]!.write })));
    } catch (err) {
      // The statement commits on its own: once sent, nobody can say whether it landed.
      if (isConnectionError(err)) throw new CommitOutcomeUnknown(err);
      throw err;
    }
    const stored = new Map(rows.map((r) => [r.writeId, r]));
    const taken: number[] = [];
    for (const { index } of placed) {
      const row = stored.get(orders[index]!.write.id);
      if (row === undefined) taken.push(index);
      else outcomes[index] = { ok: true, value: { row, shop: shopOf(read.merchants.get(orders[index]!.wallet)!) } };
    }
    if (taken.length > 0) {
      const again = await placeBatch(db, taken.map((i) => orders[i]!), limited);
      taken.forEach((i, k) => (outcomes[i] = again[k]!));
    }
  }
  return outcomes.map((x) => x!);
}

/**
 * One batch in one transaction: each order settled on its own, nothing acknowledged before COMMIT.
 * `locked`: read the stock under lock from the start (the batch's first attempt found it moved).
 */
async function placeBatch(db: Db, orders: PendingOrder[], limited: LimitedItems, locked = false): Promise<Settled<PlacedOrder>[]> {
  try {
    return await db.transaction(async (tx) => {
      const outcomes: (Settled<PlacedOrder> | undefined)[] = orders.map(() => undefined);
      const read = await readBatch(tx, orders);
      limited.learn(read.items);
      const released: string[] = [];
      const refuse = (i: number, err: unknown) => {
        outcomes[i] = refused(err);
        // Refused after its claim: the claim goes, as it would with a rollback of its own.
        if (read.fresh.has(orders[i]!.write.id)) released.push(orders[i]!.write.id);
      };
      // Split, platform recipient and tax come before the claim matters, as for a lone order.
      const { taxes, passed: claimed } = checkSetup(orders, read, refuse);
      // The same write again (a retry whose first answer was lost) answers with the order it made.
      const placing: number[] = [];
      for (const i of claimed) {
        const o = orders[i]!;
        if (read.fresh.has(o.write.id)) {
          placing.push(i);
          continue;
        }
        try {
          const claim = await claimWrite(tx, o.write, { wallet: o.wallet, kind: 'order', ref: o.receiptId }, o.now);
          if (claim.fresh) {
            // The first holder went in the meantime (purged): the claim is this batch's now.
            read.fresh.add(o.write.id);
            placing.push(i);
          } else outcomes[i] = { ok: true, value: { row: await findReceipt(tx, o.wallet, claim.ref ?? ''), shop: shopOf(read.merchants.get(o.wallet)!) } };
        } catch (err) {
          outcomes[i] = refused(err);
        }
      }

      if (locked) await lockStock(tx, read.items);
      let judged = judge(orders, placing, taxes, read);
      // Short on the stock as read: the verdict must come from stock no one else can change.
      if (!locked && judged.some((j) => 'error' in j && j.error instanceof Conflict && j.error.code === 'out_of_stock')) {
        await lockStock(tx, read.items);
        judged = judge(orders, placing, taxes, read);
      }
      const placed = judged.flatMap((j) => ('params' in j ? [j] : []));
      for (const j of judged) if ('error' in j) refuse(j.index, j.error);
      if (placed.length > 0) {
        const stored = await insertReceipts(tx, placed.map((j) => j.params));
        stored.forEach((s, k) => {
          // A random receipt id already taken is next to impossible; the batch is then retried order by order.
          if (!s.ok) throw s.error;
          const i = placed[k]!.index;
          outcomes[i] = { ok: true, value: { row: s.value, shop: shopOf(read.merchants.get(orders[i]!.wallet)!) } };
        });
      }
      await writeStock(tx, sumTakes(judged), released);
      return outcomes.map((x) => x!);
    });
  } catch (err) {
    if (!(err instanceof StockMoved)) throw err;
    if (locked) throw new Error(`stock of a locked item changed within its transaction: ${err.message}`, { cause: err });
    return placeBatch(db, orders, limited, true);
  }
}

/** A write id twice in one batch: the later ones wait for the batch, then find the first one's claim. */
async function placeOrders(db: Db, limited: LimitedItems, orders: PendingOrder[]): Promise<Settled<PlacedOrder>[]> {
  const seen = new Set<string>();
  const first: number[] = [];
  const later: number[] = [];
  orders.forEach((o, i) => {
    (seen.has(o.write.id) ? later : first).push(i);
    seen.add(o.write.id);
  });
  const outcomes = new Array<Settled<PlacedOrder>>(orders.length);
  const batch = first.map((i) => orders[i]!);
  const firstOutcomes = limited.named(batch)
    ? await placeBatch(db, batch, limited)
    : ((await placeWithoutTransaction(db, batch, limited)) ?? (await placeBatch(db, batch, limited)));
  first.forEach((i, k) => (outcomes[i] = firstOutcomes[k]!));
  if (later.length > 0) {
    const laterOutcomes = await placeOrders(db, limited, later.map((i) => orders[i]!));
    later.forEach((i, k) => (outcomes[i] = laterOutcomes[k]!));
  }
  return outcomes;
}

/**
 * When a batch's transaction fails for a reason other than the database going away (a deadlock
 * with another writer, say), each order is retried alone, so only an order at fault fails; an
 * unreachable database or an unknown commit outcome fails them all, each answering as a lone
 * order would (503, or 500 with the retry finding the write).
 */
const orderBatches = perDatabase((db) => {
  const limited = new LimitedItems();
  return new GroupCommit<PendingOrder, PlacedOrder>(
    async (orders) => {
      try {
        return await placeOrders(db, limited, orders);
      } catch (err) {
        if (orders.length === 1 || isDbDown(err) || err instanceof CommitOutcomeUnknown) throw err;
        return Promise.all(
          orders.map((o) =>
            placeOrders(db, limited, [o]).then(
              ([outcome]) => outcome!,
              (error: unknown): Settled<PlacedOrder> => refused(error),
            ),
          ),
        );
      }
    },
    // Two batches at most: the orders arriving meanwhile wait and go together.
    { maxInFlight: 2 },
  );
});

/**
 * Creates an order. Checks run in the order the API documents: items present, split configured
 * (403 split_required), platform recipient set, tax known, items known, stock available (409
 * out_of_stock).
 */
export async function createOrder(
  db: Db,
  ctx: OrderContext,
  wallet: string,
  input: OrderInput,
  now = Date.now(),
  write: Write = freshWrite(),
): Promise<OrderReceipt> {
  const refs = parseRefs(input.items);
  // A malformed rate is an input error, reported before anything about the merchant's setup.
  if (input.taxRate !== undefined) rateToPpm(input.taxRate, 'taxRate');
  const { row, shop } = await orderBatches(db).submit({
    wallet,
    refs,
    tax: { jurisdictionCode: input.jurisdictionCode, taxRate: input.taxRate, taxComponents: input.taxComponents },
    platformRecipientSet: ctx.platformRecipientAddress !== undefined,
    write,
    receiptId: newId('ord'),
    payToken: newPayToken(),
    now,
    expiresAt: expiryOf(now, undefined, ctx.receiptTtlMinutes),
  });
  // Pending, also for a retry that finds its order paid since: the answer to the write, as first given.
  return { ...createdSaleView(row, ctx.siteUrl), status: 'pending', brandName: brandOf(shop, ctx.fallbackBrand) };
}
