/**
 * Inventory: a merchant's items, keyed by sku, each with a stable id. Prices are integer cents;
 * stockQty -1 means unlimited.
 */
import { and, asc, eq, getTableColumns, sql } from 'drizzle-orm';
import type { PgUpdateSetSource } from 'drizzle-orm/pg-core';
import type { Db, Tx } from '../db/client.ts';
import { inventoryItems } from '../db/schema.ts';
import { newId } from '../lib/ids.ts';
import { InvalidInput } from '../lib/errors.ts';
import { centsToUsd, usdToCents } from '../lib/money.ts';
import { claimWrite } from '../db/write-claims.ts';
import { freshWrite, type Write } from './writes.ts';

/** stock_qty is a 32-bit column; a billion units is far beyond any real shelf. */
import { MAX_STOCK, UNLIMITED } from '../contract/inventory.ts';
export { MAX_STOCK, UNLIMITED };

export interface InventoryInput {
  sku: string;
  name: string;
  priceUsd: number;
  /** Defaults to -1 (unlimited) on creation; omitted on update keeps the stored value. */
  stockQty?: number | undefined;
  /** Defaults to true on creation; omitted on update keeps the stored value. */
  taxable?: boolean | undefined;
  /** null clears it; omitted on update keeps the stored value. */
  description?: string | null | undefined;
  category?: string | null | undefined;
}

export interface InventoryItemView {
  id: string;
  sku: string;
  name: string;
  description?: string;
  category?: string;
  priceUsd: number;
  stockQty: number;
  taxable: boolean;
  createdAt: number;
  updatedAt: number;
}

export type InventoryRow = typeof inventoryItems.$inferSelect;

export function toItemView(row: InventoryRow): InventoryItemView {
  const view: InventoryItemView = {
    id: row.id,
    sku: row.sku,
    name: row.name,
    priceUsd: centsToUsd(row.priceCents),
    stockQty: row.stockQty,
    taxable: row.taxable,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
  if (row.description !== null) view.description = row.description;
  if (row.category !== null) view.category = row.category;
  return view;
}

/** A sku is matched exactly, so it may not carry surrounding spaces or control characters. */
export function assertSku(value: unknown, field = 'sku'): asserts value is string {
  if (typeof value !== 'string' || value.length < 1 || value.length > 64 || value.trim() !== value || /\p{Cc}/u.test(value)) {
    throw new InvalidInput(`${field} must be 1-64 characters with no surrounding spaces or control characters`);
  }
}

function optionalText(value: unknown, field: string, max: number): string | null | undefined {
  if (value === undefined || value === null) return value;
  if (typeof value !== 'string' || value.length > max) throw new InvalidInput(`${field} must be a string of at most ${max} characters`);
  const text = value.trim();
  return text === '' ? null : text;
}

function parseItem(input: InventoryInput) {
  assertSku(input.sku);
  const name = typeof input.name === 'string' ? input.name.trim() : '';
  if (name.length < 1 || name.length > 200) throw new InvalidInput('name must be 1-200 characters');
  const priceCents = usdToCents(input.priceUsd, 'priceUsd');
  const { stockQty, taxable } = input;
  if (stockQty !== undefined && (!Number.isInteger(stockQty) || stockQty < UNLIMITED || stockQty > MAX_STOCK)) {
    throw new InvalidInput(`stockQty must be an integer from -1 (unlimited) to ${MAX_STOCK}`);
  }
  if (taxable !== undefined && typeof taxable !== 'boolean') throw new InvalidInput('taxable must be true or false');
  return {
    sku: input.sku,
    name,
    priceCents,
    stockQty,
    taxable,
    description: optionalText(input.description, 'description', 2000),
    category: optionalText(input.category, 'category', 100),
  };
}

export async function listInventory(db: Tx, wallet: string): Promise<InventoryItemView[]> {
  const rows = await db.select().from(inventoryItems).where(eq(inventoryItems.wallet, wallet)).orderBy(asc(inventoryItems.sku));
  return rows.map(toItemView);
}

/**
 * Creates the item, or updates the one with the same sku (its id and createdAt stay). One
 * statement, so two concurrent writes of a new sku cannot both create it.
 */
export async function upsertInventoryItem(
  db: Db,
  wallet: string,
  input: InventoryInput,
  now = Date.now(),
  write: Write = freshWrite(),
): Promise<{ created: boolean; item: InventoryItemView }> {
  const p = parseItem(input);
  return db.transaction(async (tx) => {
    // The same write again (a retry whose first answer was lost) changes nothing and answers the
    // item, created or not as the first write said: that write created it if the item's creation
    // time is the write's own (writeItem stores the same clock reading as the claim).
    const claim = await claimWrite(tx, write, { wallet, kind: 'inventory', ref: p.sku }, now);
    if (!claim.fresh) {
      const [row] = await tx.select().from(inventoryItems).where(and(eq(inventoryItems.wallet, wallet), eq(inventoryItems.sku, p.sku)));
      if (row !== undefined) return { created: row.createdAt === claim.at, item: toItemView(row) };
    }
    return writeItem(tx, wallet, p, now);
  });
}

async function writeItem(db: Tx, wallet: string, p: ReturnType<typeof parseItem>, now: number): Promise<{ created: boolean; item: InventoryItemView }> {
  const set: PgUpdateSetSource<typeof inventoryItems> = { name: p.name, priceCents: p.priceCents, updatedAt: now };
  if (p.stockQty !== undefined) set.stockQty = p.stockQty;
  if (p.taxable !== undefined) set.taxable = p.taxable;
  if (p.description !== undefined) set.description = p.description;
  if (p.category !== undefined) set.category = p.category;
  const [row] = await db
    .insert(inventoryItems)
    .values({
      wallet,
      sku: p.sku,
      id: newId('itm'),
      name: p.name,
      description: p.description ?? null,
      category: p.category ?? null,
      priceCents: p.priceCents,
      stockQty: p.stockQty ?? UNLIMITED,
      taxable: p.taxable ?? true,
      createdAt: now,
      updatedAt: now,
    })
    .onConflictDoUpdate({ target: [inventoryItems.wallet, inventoryItems.sku], set })
    // xmax is 0 only on a row this statement inserted; an updated row carries the updater's id.
    .returning({ ...getTableColumns(inventoryItems), created: sql<boolean>`(xmax = 0)` });
  if (row === undefined) throw new Error('inventory upsert returned no row');
  const { created, ...stored } = row;
  return { created: created === true, item: toItemView(stored) };
}
