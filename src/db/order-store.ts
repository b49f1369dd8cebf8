/**
 * The orders store of one app (built in src/deps.ts): places batches of orders. Orders that arrive
 * together share one transaction (a group commit, as receipt creations share a statement;
 * GroupCommit in src/db/batch.ts, the statements in src/db/order-batch.ts): one statement claims
 * every write id and reads the merchants' split and shop settings and the items; one inserts every
 * receipt; one takes the stock of every limited item and releases the claims of refused orders;
 * then one COMMIT, whatever the number of orders. A batch whose items are all unlimited needs no
 * transaction at all (placeWithoutTransaction): one statement reads, and one statement, atomic on
 * its own, claims the write ids and inserts the receipts of the orders whose claims it made. A
 * batch that names an item last read with limited stock goes to the transaction at once
 * (LimitedItems).
 *
 * The rules are the orders' own (src/domain/orders.ts): each order brings its setup checks and
 * its decision (BatchOrder.setUp), and the store calls them in the documented check order. Each
 * order is judged on its own, and one order's refusal is not another's: a refused order takes no
 * stock, stores no receipt and leaves its write id unclaimed, as if its own transaction had
 * rolled back.
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
import { CommitOutcomeUnknown, Conflict } from '../lib/errors.ts';
import { UNLIMITED } from '../contract/inventory.ts';
import { GroupCommit, type Settled } from './batch.ts';
import { type Db } from './client.ts';
import { isConnectionError, isDbDown } from '../lib/db-errors.ts';
import { itemKey, lockStock, readBatch, readUnclaimed, StockMoved, writeStock, type BatchRead, type ItemRef, type ItemRow, type MerchantSetup, type Take } from './order-batch.ts';
import type { InsertReceiptParams, ReceiptRow, ReceiptStore } from './receipt-store.ts';
import type { Write, WriteClaims } from './write-claims.ts';

/** The items a batch read, as an order's decision sees them. */
export interface BatchStock {
  /** The merchant's item that `ref` names, or undefined when it has none. */
  item(wallet: string, ref: ItemRef): ItemRow | undefined;
  /** The stock of a limited item not yet given to an earlier order of the batch. */
  left(wallet: string, sku: string): number;
}

/** What an order makes when placed: its receipt, and the units it takes of each limited item. */
export interface OrderDecision {
  receipt: InsertReceiptParams;
  takes: { sku: string; qty: number }[];
}

/** An order's decision on the batch's items; throws the order's refusal. */
export type DecideOrder = (stock: BatchStock) => OrderDecision;

/** An order checked as far as it can be without the database, waiting for its batch. */
export interface BatchOrder {
  wallet: string;
  refs: ItemRef[];
  write: Write;
  receiptId: string;
  now: number;
  /**
   * The checks that come before the order's items and its write id (split, platform recipient,
   * tax), on its merchant's settings as read (undefined: no split stored): throws the order's
   * refusal, else returns how the order is decided on the items.
   */
  setUp(merchant: MerchantSetup | undefined): DecideOrder;
}

/** A placed order: its receipt (the first one made, for a retry) and its merchant's settings. */
export interface PlacedOrder {
  row: ReceiptRow;
  merchant: MerchantSetup;
}

const refused = (error: unknown): Settled<never> => ({ ok: false, error });

/**
 * The items last read with limited stock, so that a batch naming one goes straight to the
 * transaction that taking stock needs, instead of first reading without one only to find that it
 * needs it. A hint for choosing the path, never for judging an order: both paths are right for
 * any item, and every batch's read corrects what it names. Held per app (OrderStore); when it
 * grows past `max` entries it starts again empty.
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
  named(orders: readonly Pick<BatchOrder, 'wallet' | 'refs'>[]): boolean {
    return orders.some((o) => o.refs.some((r) => this.#keys.has(`${o.wallet} ${r.by} ${r.value}`)));
  }
}

/**
 * Each order's setup checks on its merchant's settings. `refuse` gets the orders that fail;
 * returns the others' indices and their decisions.
 */
function setUpAll(orders: BatchOrder[], read: Pick<BatchRead, 'merchants'>, refuse: (i: number, err: unknown) => void): { decide: DecideOrder[]; passed: number[] } {
  const decide: DecideOrder[] = [];
  const passed: number[] = [];
  orders.forEach((o, i) => {
    try {
      decide[i] = o.setUp(read.merchants.get(o.wallet));
      passed.push(i);
    } catch (err) {
      refuse(i, err);
    }
  });
  return { decide, passed };
}

type Judged = { index: number; params: InsertReceiptParams; takes: Take[] } | { index: number; error: unknown };

/** Each order at `placing` decided on the items as read, in arrival order: the stock goes to the first. */
function judge(orders: BatchOrder[], placing: number[], decide: DecideOrder[], read: Pick<BatchRead, 'items'>): Judged[] {
  const bySku = new Map(read.items.map((r) => [itemKey(r.wallet, r.sku), r]));
  const byId = new Map(read.items.map((r) => [itemKey(r.wallet, r.id), r]));
  const left = new Map(read.items.flatMap((r) => (r.stockQty === UNLIMITED ? [] : [[itemKey(r.wallet, r.sku), r.stockQty] as const])));
  const stock: BatchStock = {
    item: (wallet, ref) => (ref.by === 'sku' ? bySku : byId).get(itemKey(wallet, ref.value)),
    left: (wallet, sku) => left.get(itemKey(wallet, sku)) ?? 0,
  };
  return placing.map((index): Judged => {
    const o = orders[index]!;
    try {
      const { receipt, takes } = decide[index]!(stock);
      for (const t of takes) left.set(itemKey(o.wallet, t.sku), stock.left(o.wallet, t.sku) - t.qty);
      return { index, params: receipt, takes: takes.map((t) => ({ wallet: o.wallet, sku: t.sku, qty: t.qty, at: o.now })) };
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

export class OrderStore {
  readonly #limited = new LimitedItems();
  readonly #batches: GroupCommit<BatchOrder, PlacedOrder>;

  constructor(
    private readonly db: Db,
    private readonly receipts: ReceiptStore,
    private readonly claims: WriteClaims,
  ) {
    // Two batches at most: the orders arriving meanwhile wait and go together.
    this.#batches = new GroupCommit((orders) => this.#place(orders), { maxInFlight: 2 });
  }

  /** Places one order with the others of its batch: its receipt, or its refusal thrown. */
  place(order: BatchOrder): Promise<PlacedOrder> {
    return this.#batches.submit(order);
  }

  /**
   * When a batch's transaction fails for a reason other than the database going away (a deadlock
   * with another writer, say), each order is retried alone, so only an order at fault fails; an
   * unreachable database or an unknown commit outcome fails them all, each answering as a lone
   * order would (503, or 500 with the retry finding the write).
   */
  async #place(orders: BatchOrder[]): Promise<Settled<PlacedOrder>[]> {
    try {
      return await this.#placeOrders(orders);
    } catch (err) {
      if (orders.length === 1 || isDbDown(err) || err instanceof CommitOutcomeUnknown) throw err;
      return Promise.all(
        orders.map((o) =>
          this.#placeOrders([o]).then(
            ([outcome]) => outcome!,
            (error: unknown): Settled<PlacedOrder> => refused(error),
          ),
        ),
      );
    }
  }

  /** A write id twice in one batch: the later ones wait for the batch, then find the first one's claim. */
  async #placeOrders(orders: BatchOrder[]): Promise<Settled<PlacedOrder>[]> {
    const seen = new Set<string>();
    const first: number[] = [];
    const later: number[] = [];
    orders.forEach((o, i) => {
      (seen.has(o.write.id) ? later : first).push(i);
      seen.add(o.write.id);
    });
    const outcomes = new Array<Settled<PlacedOrder>>(orders.length);
    const batch = first.map((i) => orders[i]!);
    const firstOutcomes = this.#limited.named(batch)
      ? await this.#placeBatch(batch)
      : ((await this.#placeWithoutTransaction(batch)) ?? (await this.#placeBatch(batch)));
    first.forEach((i, k) => (outcomes[i] = firstOutcomes[k]!));
    if (later.length > 0) {
      const laterOutcomes = await this.#placeOrders(later.map((i) => orders[i]!));
      later.forEach((i, k) => (outcomes[i] = laterOutcomes[k]!));
    }
    return outcomes;
  }

  /**
   * A batch without a transaction, when it can go so: the settings and items read on their own,
   * each order judged on them, and the placed orders' write-id claims, receipts and history
   * entries written by one statement, atomic on its own (ReceiptStore.insertClaimed). Two round
   * trips, no BEGIN or COMMIT. Null when the batch needs placeBatch's transaction: an order names
   * an item of limited stock (taking stock locks the item), or a write id is already held (a
   * retry). An order whose claim another write took in the meantime is placed by placeBatch,
   * which tells a retry from a conflict.
   */
  async #placeWithoutTransaction(orders: BatchOrder[]): Promise<Settled<PlacedOrder>[] | null> {
    const read = await readUnclaimed(this.db, orders);
    this.#limited.learn(read.items);
    if (orders.some((o) => read.held.has(o.write.id)) || read.items.some((i) => i.stockQty !== UNLIMITED)) return null;
    const outcomes: (Settled<PlacedOrder> | undefined)[] = orders.map(() => undefined);
    const { decide, passed } = setUpAll(orders, read, (i, err) => (outcomes[i] = refused(err)));
    const placed: { index: number; params: InsertReceiptParams }[] = [];
    for (const j of judge(orders, passed, decide, read)) {
      if ('params' in j) placed.push(j);
      else outcomes[j.index] = refused(j.error);
    }
    if (placed.length > 0) {
      let rows: ReceiptRow[];
      try {
        rows = await this.receipts.insertClaimed('order', placed.map((j) => ({ params: j.params, write: orders[j.index]!.write })));
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
        else outcomes[index] = { ok: true, value: { row, merchant: read.merchants.get(orders[index]!.wallet)! } };
      }
      if (taken.length > 0) {
        const again = await this.#placeBatch(taken.map((i) => orders[i]!));
        taken.forEach((i, k) => (outcomes[i] = again[k]!));
      }
    }
    return outcomes.map((x) => x!);
  }

  /**
   * One batch in one transaction: each order settled on its own, nothing acknowledged before COMMIT.
   * `locked`: read the stock under lock from the start (the batch's first attempt found it moved).
   */
  async #placeBatch(orders: BatchOrder[], locked = false): Promise<Settled<PlacedOrder>[]> {
    try {
      return await this.db.transaction(async (tx) => {
        const outcomes: (Settled<PlacedOrder> | undefined)[] = orders.map(() => undefined);
        const read = await readBatch(tx, orders);
        this.#limited.learn(read.items);
        const released: string[] = [];
        const refuse = (i: number, err: unknown) => {
          outcomes[i] = refused(err);
          // Refused after its claim: the claim goes, as it would with a rollback of its own.
          if (read.fresh.has(orders[i]!.write.id)) released.push(orders[i]!.write.id);
        };
        // Split, platform recipient and tax come before the claim matters, as for a lone order.
        const { decide, passed: claimed } = setUpAll(orders, read, refuse);
        // The same write again (a retry whose first answer was lost) answers with the order it made.
        const placing: number[] = [];
        for (const i of claimed) {
          const o = orders[i]!;
          if (read.fresh.has(o.write.id)) {
            placing.push(i);
            continue;
          }
          try {
            const claim = await this.claims.claim(tx, o.write, { wallet: o.wallet, kind: 'order', ref: o.receiptId }, o.now);
            if (claim.fresh) {
              // The first holder went in the meantime (purged): the claim is this batch's now.
              read.fresh.add(o.write.id);
              placing.push(i);
            } else outcomes[i] = { ok: true, value: { row: await this.receipts.find(tx, o.wallet, claim.ref ?? ''), merchant: read.merchants.get(o.wallet)! } };
          } catch (err) {
            outcomes[i] = refused(err);
          }
        }

        if (locked) await lockStock(tx, read.items);
        let judged = judge(orders, placing, decide, read);
        // Short on the stock as read: the verdict must come from stock no one else can change.
        if (!locked && judged.some((j) => 'error' in j && j.error instanceof Conflict && j.error.code === 'out_of_stock')) {
          await lockStock(tx, read.items);
          judged = judge(orders, placing, decide, read);
        }
        const placed = judged.flatMap((j) => ('params' in j ? [j] : []));
        for (const j of judged) if ('error' in j) refuse(j.index, j.error);
        if (placed.length > 0) {
          const stored = await this.receipts.insert(tx, placed.map((j) => j.params));
          stored.forEach((s, k) => {
            // A random receipt id already taken is next to impossible; the batch is then retried order by order.
            if (!s.ok) throw s.error;
            const i = placed[k]!.index;
            outcomes[i] = { ok: true, value: { row: s.value, merchant: read.merchants.get(orders[i]!.wallet)! } };
          });
        }
        await writeStock(tx, sumTakes(judged), released);
        return outcomes.map((x) => x!);
      });
    } catch (err) {
      if (!(err instanceof StockMoved)) throw err;
      if (locked) throw new Error(`stock of a locked item changed within its transaction: ${err.message}`, { cause: err });
      return this.#placeBatch(orders, true);
    }
  }
}
