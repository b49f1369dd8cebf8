/**
 * What a batch of orders reads and writes (OrderStore, src/db/order-store.ts, runs them; the rules
 * of src/domain/orders.ts judge the orders): three statements, whatever the number of orders. One
 * claims the write ids and reads the merchants' settings and the items; one locks the limited
 * items and reads their stock again, when the stock as read looked short; one takes the stock and
 * releases the claims of refused orders. Receipts go in between with ReceiptStore.insert
 * (src/db/receipt-store.ts). A batch of unlimited items reads with readUnclaimed instead, and
 * writes claims and receipts together (ReceiptStore.insertClaimed).
 */
import { sql, type SQL } from 'drizzle-orm';
import { UNLIMITED } from '../contract/inventory.ts';
import type { PricedItem } from '../domain/pricing.ts';
import type { Tx } from './client.ts';
import { int, json, rowsOf, text } from './rows.ts';
import { inventoryItems, shopConfigs, splitConfigs, type TaxJurisdiction } from './schema.ts';
import { claimRecords, claimStatement, heldStatement, releaseStatement } from './write-claims.ts';

/** An item named by sku or id, as an order line asks for it. */
export type ItemRef = { by: 'sku' | 'id'; value: string; qty: number };

/** What the batch statements need of an order. */
export interface BatchOrder {
  wallet: string;
  refs: ItemRef[];
  write: { id: string; hash: string };
  receiptId: string;
  now: number;
}

/** The key of a merchant's item by sku or id, in the maps a batch builds. */
export const itemKey = (wallet: string, skuOrId: string) => `${wallet} ${skuOrId}`;

export interface MerchantSetup {
  wallet: string;
  /** Recipients stored: the split counts as configured (isConfigured in splits.ts). */
  recipients: number;
  name: string | null;
  feeBps: number;
  tax: TaxJurisdiction[];
  origins: string[];
}

export interface ItemRow extends PricedItem {
  wallet: string;
  id: string;
  /** -1 (unlimited), or the stock as read; after lockStock, the stock no other transaction can change. */
  stockQty: number;
}

export interface BatchRead {
  merchants: Map<string, MerchantSetup>;
  /** The write ids this batch's claim inserted. */
  fresh: Set<string>;
  items: ItemRow[];
}

/**
 * One statement: claims every order's write id (in id order, so two batches sharing ids wait for
 * each other rather than deadlock), and reads the merchants' split and shop settings and the items
 * the orders name (each merchant's own only). An id already held is not claimed (the insert waits
 * for a holder still in flight); WriteClaims.claim then tells a retry from a conflict. Claims of orders
 * refused later are released by writeStock, in the same transaction.
 */
export async function readBatch(tx: Tx, orders: BatchOrder[]): Promise<BatchRead> {
  const claims = claimRecords(orders.map((o) => ({ write: o.write, claim: { wallet: o.wallet, kind: 'order', ref: o.receiptId }, at: o.now })));
  const { ids, read } = await readSettings(tx, orders, claimStatement(sql`${claims}`));
  return { ...read, fresh: ids };
}

/**
 * readBatch without claiming anything, outside any transaction: the settings, the items, and
 * which of the orders' write ids are already held (a retry, or a duplicate in flight once it has
 * committed).
 */
export async function readUnclaimed(db: Tx, orders: BatchOrder[]): Promise<Omit<BatchRead, 'fresh'> & { held: Set<string> }> {
  const { ids, read } = await readSettings(
    db,
    orders,
    heldStatement(orders.map((o) => o.write.id)),
  );
  return { ...read, held: ids };
}

/** The statement of readBatch and readUnclaimed: `writes` yields write ids (claimed, or held). */
async function readSettings(tx: Tx, orders: BatchOrder[], writes: SQL): Promise<{ ids: Set<string>; read: Omit<BatchRead, 'fresh'> }> {
  const wanted = new Map<string, { wallet: string; sku: string | null; id: string | null }>();
  for (const o of orders) {
    for (const r of o.refs) {
      wanted.set(`${r.by} ${itemKey(o.wallet, r.value)}`, { wallet: o.wallet, sku: r.by === 'sku' ? r.value : null, id: r.by === 'id' ? r.value : null });
    }
  }
  const [row] = rowsOf(
    await tx.execute(sql`
      with writes as (${writes}), wanted as (
        select * from json_to_recordset(${JSON.stringify([...wanted.values()])}::json) as w(wallet text, sku text, id text)
      ), matched as (
        select i.* from ${inventoryItems} i join wanted w on w.sku is not null and i.wallet = w.wallet and i.sku = w.sku
        union
        select i.* from ${inventoryItems} i join wanted w on w.id is not null and i.wallet = w.wallet and i.id = w.id
      )
      select
        (select coalesce(json_agg(write_id), '[]') from writes)::text as writes,
        (select json_agg(json_build_object(
            'wallet', w.wallet, 'recipients', coalesce(jsonb_array_length(s.recipients), 0), 'name', c.name,
            'feeBps', coalesce(c.processing_fee_bps, 0), 'tax', coalesce(c.tax_jurisdictions, '[]'), 'origins', coalesce(c.allowed_embed_origins, '[]')))
          from json_array_elements_text(${JSON.stringify([...new Set(orders.map((o) => o.wallet))])}::json) as w(wallet)
            left join ${splitConfigs} s on s.wallet = w.wallet
            left join ${shopConfigs} c on c.wallet = w.wallet)::text as merchants,
        (select coalesce(json_agg(json_build_object(
            'wallet', m.wallet, 'sku', m.sku, 'id', m.id, 'name', m.name, 'priceCents', m.price_cents::text, 'taxable', m.taxable, 'stockQty', m.stock_qty)), '[]')
          from matched m)::text as items`),
  );
  if (row === undefined) throw new Error('the batch read answered no row');
  const items = json<(Omit<ItemRow, 'priceCents'> & { priceCents: string })[]>(row.items);
  return {
    ids: new Set(json<string[]>(row.writes)),
    read: {
      merchants: new Map(json<MerchantSetup[]>(row.merchants).map((m) => [m.wallet, m])),
      items: items.map((i) => ({ ...i, priceCents: BigInt(i.priceCents) })),
    },
  };
}

/**
 * Locks the limited items in (wallet, sku) order and reads their stock after the lock. Only when
 * the stock as read does not cover the batch: an order is refused out_of_stock only on stock that
 * no other transaction can change before this one commits.
 */
export async function lockStock(tx: Tx, items: ItemRow[]): Promise<void> {
  const limited = items.filter((i) => i.stockQty !== UNLIMITED).map((i) => ({ wallet: i.wallet, sku: i.sku }));
  if (limited.length === 0) return;
  const rows = rowsOf(
    await tx.execute(sql`
      select i.wallet, i.sku, i.stock_qty from ${inventoryItems} i
        join json_to_recordset(${JSON.stringify(limited)}::json) as l(wallet text, sku text) on i.wallet = l.wallet and i.sku = l.sku
      order by i.wallet, i.sku
      for update of i`),
  );
  const now = new Map(rows.map((r) => [itemKey(text(r.wallet), text(r.sku)), int(r.stock_qty)]));
  for (const i of items) if (i.stockQty !== UNLIMITED) i.stockQty = now.get(itemKey(i.wallet, i.sku)) ?? i.stockQty;
}

export type Take = { wallet: string; sku: string; qty: number; at: number };

/** The stock moved between the batch's read and its update (another instance sold some): read it again under lock. */
export class StockMoved extends Error {}

/**
 * Takes the reserved stock (summed per item) and releases the write ids of refused orders, in one
 * statement. The rows are locked in (wallet, sku) order before any is updated, so two batches
 * cannot deadlock; each update still requires the stock it takes (or an item made unlimited in the
 * meantime), and a shortfall rolls the whole batch back (StockMoved) rather than oversell.
 */
export async function writeStock(tx: Tx, takes: Take[], released: string[]): Promise<void> {
  if (takes.length === 0 && released.length === 0) return;
  const [row] = rowsOf(
    await tx.execute(sql`
      with takes as (
        select * from json_to_recordset(${JSON.stringify(takes)}::json) as t(wallet text, sku text, qty integer, at bigint)
      ), locked as materialized (
        select i.wallet, i.sku from ${inventoryItems} i join takes t on i.wallet = t.wallet and i.sku = t.sku
        order by i.wallet, i.sku
        for update of i
      ), taken as (
        update ${inventoryItems} i
          set stock_qty = case when i.stock_qty = ${UNLIMITED} then ${UNLIMITED} else i.stock_qty - t.qty end, updated_at = t.at
        from takes t, locked l
        where i.wallet = t.wallet and i.sku = t.sku and l.wallet = i.wallet and l.sku = i.sku
          and (i.stock_qty = ${UNLIMITED} or i.stock_qty >= t.qty)
        returning i.sku
      ), released as (
        ${releaseStatement(released)}
      )
      select (select count(*) from taken)::int as taken, (select count(*) from released)::int as released`),
  );
  if (row === undefined || int(row.taken) !== takes.length) throw new StockMoved(`${String(row?.taken)} of ${takes.length} reservations applied`);
}
